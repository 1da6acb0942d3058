//go:build !linux

package goplugin

import "os/exec"

// configureCmd does nothing here; the plugin's own parent watch ends it
// when the agent dies.
func configureCmd(*exec.Cmd) {}

// killGroup kills the plugin process started by cmd (here without its
// children).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// exited reports false: stop waits its grace period here.
func exited(*exec.Cmd) bool { return false }
