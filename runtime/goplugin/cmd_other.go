//go:build !linux

package goplugin

import "os/exec"

// configureCmd does nothing here; the plugin's own parent watch ends it
// when the agent dies.
func configureCmd(*exec.Cmd) {}
