//go:build !unix

package goplugin

import (
	"os"
	"os/exec"
)

func setpgid(*exec.Cmd) {}

// signalGroup kills the plugin process alone: Windows has no process
// groups to kill its children with (Windows, Plan 9).
func signalGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
