//go:build unix

package goplugin

import "syscall"

// signalGroup kills the process group whose leader is pid: the plugin and
// what it started, which stays in its group unless it left it.
func signalGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
