//go:build !linux

package goplugin

import "os/exec"

// configureCmd starts the plugin in a process group of its own where the
// platform has them (see killGroup); the plugin's own parent watch ends it
// when the agent dies.
func configureCmd(cmd *exec.Cmd) { setpgid(cmd) }

// zombie reports false here: stop waits its grace period before it kills
// the plugin's group.
func zombie(*exec.Cmd) bool { return false }
