package jobspec

import (
	"fmt"
	"strings"
)

// Path locates a part of a job by the names it has in the job language:
// labelled blocks by type and label (`group "web"`), repeated blocks by
// type and index (`constraint[0]`), attributes and single blocks by name
// (`count`, `update`). The job itself is the empty path.
type Path []string

// Attr returns the path of attribute or single block name under p.
func (p Path) Attr(name string) Path { return p.with(name) }

// Block returns the path of the labelled block `typ "label"` under p.
func (p Path) Block(typ, label string) Path { return p.with(fmt.Sprintf("%s %q", typ, label)) }

// Item returns the path of the i-th (from 0) unlabelled block typ under p.
func (p Path) Item(typ string, i int) Path { return p.with(fmt.Sprintf("%s[%d]", typ, i)) }

func (p Path) with(seg string) Path {
	out := make(Path, len(p), len(p)+1)
	copy(out, p)
	return append(out, seg)
}

// String renders the path for people: `group "web": task "app": resources: cpu`.
func (p Path) String() string {
	if len(p) == 0 {
		return "job"
	}
	return strings.Join(p, ": ")
}

func (p Path) key() string { return strings.Join(p, "\x00") }
