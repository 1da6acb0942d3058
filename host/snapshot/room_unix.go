//go:build unix

package snapshot

import "golang.org/x/sys/unix"

// available is the free space, in bytes, an unprivileged writer has in the
// file system holding dir.
func available(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
