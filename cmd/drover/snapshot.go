package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/snapshot"
)

type snapshotSaveCommand struct{ *meta }

func (c *snapshotSaveCommand) Synopsis() string { return "Save a snapshot of the cluster's state" }

func (c *snapshotSaveCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator snapshot save [options] <file>

  Saves a snapshot of the whole cluster state (jobs and their versions,
  evaluations, allocations, deployments, nodes, the scheduler
  configuration) to file, a gzipped tar archive with checksums. The file
  is written beside its final name and renamed once it is complete and
  verified.
` + apiOptions)
}

func (c *snapshotSaveCommand) Run(args []string) int {
	fs := c.flags("operator snapshot save", false)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: the file to write") {
		return exitError
	}
	path := fs.Arg(0)
	target, through, err := saveTarget(path)
	if err != nil {
		return c.errorf("%v", err)
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	body, err := cl.Stream(bg, http.MethodGet, "/v1/operator/snapshot", nil)
	if err != nil {
		return c.errorf("saving the snapshot: %v", err)
	}
	defer body.Close()
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*")
	if err != nil {
		return c.errorf("%v", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	if _, err := io.Copy(tmp, body); err != nil {
		tmp.Close()
		return c.errorf("saving the snapshot: %v", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return c.errorf("%v", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		return c.errorf("%v", err)
	}
	arc, err := snapshot.Read(tmp, "")
	if err != nil {
		tmp.Close()
		return c.errorf("the snapshot received does not verify: %v", err)
	}
	m := arc.Meta
	_ = arc.Close()
	if through {
		err = writeThrough(target, tmp)
	} else {
		err = os.Rename(tmp.Name(), target)
	}
	tmp.Close()
	if err != nil {
		return c.errorf("%v", err)
	}
	fmt.Fprintf(c.out, "State file written to %s (index %d, %d bytes of state)\n", path, m.Index, m.Size)
	return exitOK
}

type snapshotRestoreCommand struct{ *meta }

func (c *snapshotRestoreCommand) Synopsis() string {
	return "Restore the cluster's state from a snapshot"
}

func (c *snapshotRestoreCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator snapshot restore [options] <file>

  Replaces the whole cluster state with a snapshot saved by "drover
  operator snapshot save". The agent verifies the file and reads all of
  it before changing anything: a damaged file is refused and the state is
  left as it was. The leader then restarts its duties on the restored
  state (open evaluations are scheduled again, nodes must heartbeat).
` + apiOptions)
}

func (c *snapshotRestoreCommand) Run(args []string) int {
	fs := c.flags("operator snapshot restore", false)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: the snapshot file") {
		return exitError
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return c.errorf("%v", err)
	}
	defer f.Close()
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	body, err := cl.Stream(bg, http.MethodPut, "/v1/operator/snapshot", f)
	if err != nil {
		return c.errorf("restoring the snapshot: %v", err)
	}
	_ = body.Close()
	fmt.Fprintln(c.out, "Snapshot restored")
	return exitOK
}

type snapshotInspectCommand struct{ *meta }

func (c *snapshotInspectCommand) Synopsis() string { return "Describe a snapshot file" }

func (c *snapshotInspectCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator snapshot inspect <file>

  Verifies a snapshot file (checksums, sizes, the state within) without an
  agent, and shows its raft index and term, who wrote it and when, and how
  many objects of each kind it holds.
`)
}

func (c *snapshotInspectCommand) Run(args []string) int {
	fs := c.flags("operator snapshot inspect", false)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: the snapshot file") {
		return exitError
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return c.errorf("%v", err)
	}
	defer f.Close()
	arc, err := snapshot.Read(f, "")
	if err != nil {
		return c.errorf("%s: %v", fs.Arg(0), err)
	}
	defer arc.Close()
	store, err := fsm.ReadSnapshot(arc.State)
	if err != nil {
		return c.errorf("%s: %v", fs.Arg(0), err)
	}
	snap := store.Snapshot()
	m := arc.Meta
	c.kv("ID", m.ID, "Index", fmt.Sprint(m.Index), "Term", fmt.Sprint(m.Term), "Size", fmt.Sprintf("%d bytes", m.Size),
		"Version", m.DroverVersion, "Created", m.CreateTime.Format(time.RFC3339),
		"Jobs", fmt.Sprint(len(snap.Jobs("*"))), "Evaluations", fmt.Sprint(len(snap.Evals())),
		"Allocations", fmt.Sprint(len(snap.Allocs())), "Deployments", fmt.Sprint(len(snap.Deployments())),
		"Nodes", fmt.Sprint(len(snap.Nodes())))
	return exitOK
}

// saveTarget is where a file saved as path goes: path, or the file the
// symbolic links at path lead to (replaced there, the links kept).
// through reports an existing target that is not a regular file, such as
// a device or a named pipe, which is written through rather than
// replaced.
func saveTarget(path string) (target string, through bool, err error) {
	target = path
	for range 40 {
		fi, err := os.Lstat(target)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return target, false, nil
		case err != nil:
			return "", false, err
		case fi.Mode()&fs.ModeSymlink == 0:
			return target, !fi.Mode().IsRegular(), nil
		}
		link, err := os.Readlink(target)
		if err != nil {
			return "", false, err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(target), link)
		}
		target = link
	}
	return "", false, fmt.Errorf("%s: too many levels of symbolic links", path)
}

// writeThrough copies the saved file f into target, which it opens
// without creating or replacing it.
func writeThrough(target string, f *os.File) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, f); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
