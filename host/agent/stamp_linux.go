//go:build linux

package agent

import (
	"os"
	"syscall"
)

// changeStamp is a file's inode and status-change time (which no write
// can preserve, unlike the modification time).
func changeStamp(st os.FileInfo) (ino uint64, ctime int64) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return sys.Ino, sys.Ctim.Nano()
}
