//go:build !linux

package goplugin

// residentBytes is not available here: memory limits are not enforced and
// instances report no size.
func residentBytes(int) (uint64, bool) { return 0, false }
