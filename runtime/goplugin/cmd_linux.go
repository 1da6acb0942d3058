package goplugin

import (
	"os/exec"
	"syscall"
)

// configureCmd asks the kernel to kill the plugin when the agent dies, even
// by SIGKILL. The plugin also watches its parent (sdk/plugin), which covers
// the case where the thread that started it exits first.
func configureCmd(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
