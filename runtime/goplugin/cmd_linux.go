package goplugin

import (
	"os/exec"
	"syscall"
)

// configureCmd starts the plugin in a process group of its own (see
// killGroup) and asks the kernel to kill it when the agent dies, even by
// SIGKILL. The plugin also watches its parent (sdk/plugin), which covers
// the case where the thread that started it exits first.
func configureCmd(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
