//go:build unix

package plugin

import (
	"os"
	"time"
)

// exitWithParent ends the plugin once the process that started it is gone
// (the plugin is then re-parented), even if the agent was killed outright
// and could not stop it.
func exitWithParent() {
	parent := os.Getppid()
	for range time.Tick(250 * time.Millisecond) {
		if os.Getppid() != parent {
			os.Exit(3)
		}
	}
}
