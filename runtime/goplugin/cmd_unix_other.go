//go:build unix && !linux

package goplugin

import (
	"os/exec"
	"syscall"
)

func setpgid(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
