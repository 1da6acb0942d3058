package goplugin

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// configureCmd asks the kernel to kill the plugin when the agent dies, even
// by SIGKILL, and starts it in a process group of its own, so that what it
// starts can be killed with it (killGroup). The plugin also watches its
// parent (sdk/plugin), which covers the case where the thread that started
// it exits first.
func configureCmd(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// killGroup kills the plugin process started by cmd and every process in
// its group: the children it started (a shell wrapper's command), which
// may hold its output open.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// exited reports whether the plugin process started by cmd has exited: it
// is a zombie (go-plugin reaps it once it has read the output to its end)
// or gone.
func exited(cmd *exec.Cmd) bool {
	if cmd.Process == nil {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses and may
	// itself hold some.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	fields := strings.Fields(rest)
	return len(fields) == 0 || fields[0] == "Z"
}
