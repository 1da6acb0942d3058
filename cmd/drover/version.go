package main

import (
	"runtime/debug"
	"strings"
	"time"
)

type versionCommand struct{ *meta }

func (c *versionCommand) Synopsis() string { return "Prints the Drover version" }

func (c *versionCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover version

  Prints Drover's version, as drover --version does, and, when the binary
  was built from a git checkout, the time of the commit it was built from
  (BuildDate) and its revision (with "+CHANGES" if the checkout had
  uncommitted changes), as nomad version prints them.`)
}

// Run prints the version; arguments are ignored, as nomad version ignores
// them.
func (c *versionCommand) Run([]string) int {
	c.ui.Output(fullVersion(readBuildInfo()))
	return exitOK
}

// buildStamp is what the Go toolchain recorded of the checkout a binary
// was built from (go build stamps the VCS state into the binary).
type buildStamp struct {
	revision string
	time     time.Time
	modified bool
}

// readBuildInfo reads the binary's VCS stamp; it is empty for a binary
// built outside a checkout, or with -buildvcs=false, and for tests.
func readBuildInfo() buildStamp {
	var b buildStamp
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.revision = s.Value
		case "vcs.time":
			b.time, _ = time.Parse(time.RFC3339, s.Value)
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	return b
}

// fullVersion is the version as Nomad's FullVersionNumber prints its own:
// "Drover v<version>", then the build date (Nomad's release builds stamp
// the commit's time, as Go's VCS stamp holds) and the revision when known.
func fullVersion(b buildStamp) string {
	s := "Drover v" + version
	if !b.time.IsZero() {
		s += "\nBuildDate " + b.time.UTC().Format(time.RFC3339)
	}
	if b.revision != "" {
		s += "\nRevision " + b.revision
		if b.modified {
			s += "+CHANGES"
		}
	}
	return s
}
