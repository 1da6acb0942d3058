package goplugin

import (
	"fmt"
	"os"
)

var pageSize = uint64(os.Getpagesize())

// residentBytes reads a process's resident set size from /proc.
func residentBytes(pid int) (uint64, bool) {
	if pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0, false
	}
	var size, resident uint64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		return 0, false
	}
	return resident * pageSize, true
}
