//go:build !unix && !wasip1

package plugin

// exitWithParent does nothing where the parent cannot be watched; the agent
// still stops its plugins when it exits normally.
func exitWithParent() {}
