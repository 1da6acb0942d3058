package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// Data dir errors. Each says what is wrong and where; the agent maps each to
// its own exit code. A data dir that fails a check is never replaced by a
// fresh state.
var (
	// ErrDataDirLocked: another agent holds the data dir.
	ErrDataDirLocked = errors.New("server: data dir is locked by another agent")
	// ErrDataDirCorrupt: the raft log, a snapshot or the data dir's
	// metadata cannot be read, or the log does not follow on from the
	// newest snapshot.
	ErrDataDirCorrupt = errors.New("server: data dir is corrupt")
	// ErrDataDirMissingState: the data dir was initialized but its raft
	// state is gone.
	ErrDataDirMissingState = errors.New("server: data dir has lost its state")
	// ErrDataDirUnusable: the path is not a directory, cannot be written, is
	// a non-empty directory that is not a Drover data dir, or was written by
	// a newer Drover.
	ErrDataDirUnusable = errors.New("server: data dir is unusable")
)

// Data dir layout.
const (
	dataDirMetaFile = "drover-data.json"
	raftDirName     = "raft"
	raftDBName      = "raft.db"
	// dataDirFormat is the layout version this Drover writes and reads.
	dataDirFormat = 1
	// snapshotsRetained is how many raft snapshots are kept.
	snapshotsRetained = 2
)

// keyCurrentTerm is the key under which raft keeps its current term in the
// stable store (hashicorp/raft's keyCurrentTerm).
var keyCurrentTerm = []byte("CurrentTerm")

// dataDirMeta marks a directory as an initialized Drover data dir.
type dataDirMeta struct {
	Format    int
	NodeName  string
	CreatedAt time.Time
	// ClusterID is the cluster this server belongs to, once it knows it
	// (see clusterid.go); empty in a data dir older than cluster IDs.
	ClusterID string `json:",omitempty"`
}

// dataDir is an opened, locked data dir and its raft stores.
type dataDir struct {
	path  string
	bolt  *raftboltdb.BoltStore
	snaps raft.SnapshotStore
	// initialized is false until raft state exists and the metadata file
	// says so.
	initialized bool
	// snapErr is why raft could not open the snapshot to restore.
	snapErr error
	// metaMu guards meta and initialized once the server runs (the FSM
	// learns the cluster ID while the server joins its cluster).
	metaMu sync.Mutex
	// meta is what the metadata file holds (written or to write).
	meta dataDirMeta
}

func (d *dataDir) raftDir() string  { return filepath.Join(d.path, raftDirName) }
func (d *dataDir) metaPath() string { return filepath.Join(d.path, dataDirMetaFile) }

// openDataDir opens (or, for a new or empty directory, prepares) a data
// dir. It checks, before raft ever reads it, that the state can be replayed:
// the metadata is readable, the raft log opens, every snapshot is listed,
// the log follows on from the newest snapshot and every entry after it
// decodes.
func openDataDir(path, nodeName string, logger hclog.Logger) (_ *dataDir, err error) {
	d := &dataDir{path: path}
	meta, err := inspectDataDir(path, true)
	if err != nil {
		return nil, err
	}
	if meta != nil && meta.NodeName != "" && meta.NodeName != nodeName {
		// Raft knows servers by name: under another name this server would
		// take over its cluster's state as a stranger, or pass for a member
		// it is not.
		return nil, fmt.Errorf("%w: %s belongs to server %q, not %q: start that server with -node %s, or give this one its own data dir",
			ErrDataDirUnusable, path, meta.NodeName, nodeName, meta.NodeName)
	}
	dbPath := filepath.Join(d.raftDir(), raftDBName)
	if err := os.MkdirAll(d.raftDir(), 0o700); err != nil {
		return nil, fmt.Errorf("%w: create %s: %v", ErrDataDirUnusable, d.raftDir(), err)
	}
	if err := d.openBolt(dbPath); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	fss, err := raft.NewFileSnapshotStoreWithLogger(d.raftDir(), snapshotsRetained, logger)
	if err != nil {
		return nil, fmt.Errorf("%w: snapshot store in %s: %v", ErrDataDirUnusable, d.raftDir(), err)
	}
	newest, err := checkSnapshots(d.raftDir(), fss)
	if err != nil {
		return nil, err
	}
	d.snaps = newestOnly{FileSnapshotStore: fss, openErr: &d.snapErr}
	has, err := d.checkLog(newest)
	if err != nil {
		return nil, err
	}
	if meta != nil && !has {
		return nil, fmt.Errorf("%w: %s was initialized but its raft log %s holds no state; refusing to start with an empty state",
			ErrDataDirMissingState, path, dbPath)
	}
	d.initialized = meta != nil
	if meta != nil {
		d.meta = *meta
	}
	return d, nil
}

// CheckDataDir runs the checks on a data dir that need no lock (it exists or
// can be created, is not someone else's directory, has its raft log if it
// was initialized, was not written by a newer Drover), so an agent can
// refuse a bad data dir before it loads anything. Opening the server checks
// everything else.
func CheckDataDir(path string) error {
	_, err := inspectDataDir(path, false)
	return err
}

// inspectDataDir checks a data dir's shape and returns its metadata (nil
// for a new data dir). With create, a missing directory is created.
func inspectDataDir(path string, create bool) (*dataDirMeta, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if !create {
			return nil, nil
		}
		if err := os.MkdirAll(path, 0o700); err != nil {
			return nil, fmt.Errorf("%w: create %s: %v", ErrDataDirUnusable, path, err)
		}
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrDataDirUnusable, err)
	case !fi.IsDir():
		return nil, fmt.Errorf("%w: %s is not a directory", ErrDataDirUnusable, path)
	}
	meta, err := readDataDirMeta(filepath.Join(path, dataDirMetaFile))
	if err != nil {
		return nil, err
	}
	dbPath := filepath.Join(path, raftDirName, raftDBName)
	_, dbErr := os.Stat(dbPath)
	hasDB := dbErr == nil
	switch {
	case meta != nil && !hasDB:
		return nil, fmt.Errorf("%w: %s was initialized but its raft log %s is missing; refusing to start with an empty state",
			ErrDataDirMissingState, path, dbPath)
	case meta == nil && !hasDB:
		if err := requireEmpty(path); err != nil {
			return nil, err
		}
	}
	return meta, nil
}

func readDataDirMeta(path string) (*dataDirMeta, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", ErrDataDirUnusable, path, err)
	}
	var m dataDirMeta
	if err := json.Unmarshal(b, &m); err != nil || m.Format == 0 {
		return nil, fmt.Errorf("%w: %s is not valid data dir metadata", ErrDataDirCorrupt, path)
	}
	if m.Format > dataDirFormat {
		return nil, fmt.Errorf("%w: %s was written by a newer Drover (format %d, this one reads %d)",
			ErrDataDirUnusable, path, m.Format, dataDirFormat)
	}
	return &m, nil
}

// requireEmpty refuses to make a Drover data dir out of a directory that
// holds something else: a mistyped -data-dir must not start an empty
// cluster next to someone's files.
func requireEmpty(path string) error {
	entries, err := os.ReadDir(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDataDirUnusable, err)
	}
	var other []string
	for _, e := range entries {
		if e.Name() != raftDirName && e.Name() != "wasm-cache" {
			other = append(other, e.Name())
		}
	}
	if len(other) > 0 {
		return fmt.Errorf("%w: %s is not empty (%s) and is not a Drover data dir", ErrDataDirUnusable, path, strings.Join(other, ", "))
	}
	return nil
}

// openBolt opens the raft log. BoltDB panics on some corruptions; that
// becomes ErrDataDirCorrupt.
func (d *dataDir) openBolt(dbPath string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: raft log %s: %v", ErrDataDirCorrupt, dbPath, r)
		}
	}()
	bolt, err := raftboltdb.New(raftboltdb.Options{Path: dbPath, BoltOptions: &bbolt.Options{Timeout: time.Second}})
	switch {
	case err == nil:
		d.bolt = bolt
		return nil
	case errors.Is(err, bbolt.ErrTimeout):
		return fmt.Errorf("%w: %s", ErrDataDirLocked, dbPath)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: open raft log %s: %v", ErrDataDirUnusable, dbPath, err)
	}
	// Anything else is a file bolt cannot read: invalid, of another
	// version, failing its checksum, or truncated ("file size too small").
	return fmt.Errorf("%w: raft log %s: %v", ErrDataDirCorrupt, dbPath, err)
}

// checkSnapshots makes sure every snapshot directory is one the store can
// list (an unreadable one would be skipped silently) and returns the
// newest, if any.
func checkSnapshots(raftDir string, fss *raft.FileSnapshotStore) (*raft.SnapshotMeta, error) {
	metas, err := fss.List()
	if err != nil {
		return nil, fmt.Errorf("%w: list snapshots: %v", ErrDataDirCorrupt, err)
	}
	entries, err := os.ReadDir(filepath.Join(raftDir, "snapshots"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %v", ErrDataDirUnusable, err)
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		if !slices.ContainsFunc(metas, func(m *raft.SnapshotMeta) bool { return m.ID == e.Name() }) {
			return nil, fmt.Errorf("%w: snapshot %s is unreadable", ErrDataDirCorrupt, filepath.Join(raftDir, "snapshots", e.Name()))
		}
	}
	if len(metas) == 0 {
		return nil, nil
	}
	return metas[0], nil
}

// checkLog checks that the raft log follows on from the newest snapshot and
// that every entry after it decodes, and reports whether there is any raft
// state at all.
func (d *dataDir) checkLog(newest *raft.SnapshotMeta) (has bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: raft log: %v", ErrDataDirCorrupt, r)
		}
	}()
	first, err := d.bolt.FirstIndex()
	if err != nil {
		return false, fmt.Errorf("%w: raft log: %v", ErrDataDirCorrupt, err)
	}
	last, err := d.bolt.LastIndex()
	if err != nil {
		return false, fmt.Errorf("%w: raft log: %v", ErrDataDirCorrupt, err)
	}
	var snapIndex uint64
	if newest != nil {
		snapIndex = newest.Index
		// Raft records a term before it takes any snapshot, so a log
		// without one beside a snapshot is a new one: emptied or replaced,
		// with the entries after the snapshot lost.
		if term, err := d.bolt.GetUint64(keyCurrentTerm); err != nil || term == 0 {
			return false, fmt.Errorf("%w: the raft log %s holds no raft term beside snapshot %s: it was emptied or replaced, and the entries after the snapshot are lost",
				ErrDataDirMissingState, filepath.Join(d.raftDir(), raftDBName), newest.ID)
		}
	}
	if last == 0 {
		return newest != nil, nil
	}
	if first > 1 && snapIndex < first-1 {
		return true, fmt.Errorf("%w: the raft log starts at index %d but the newest snapshot ends at %d: entries are missing",
			ErrDataDirCorrupt, first, snapIndex)
	}
	var l raft.Log
	for i := max(first, snapIndex+1); i <= last; i++ {
		if err := d.bolt.GetLog(i, &l); err != nil {
			return true, fmt.Errorf("%w: raft log entry %d: %v", ErrDataDirCorrupt, i, err)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		if err := fsm.Check(l.Data); err != nil {
			return true, fmt.Errorf("%w: raft log entry %d: %v", ErrDataDirCorrupt, i, err)
		}
	}
	return true, nil
}

// markInitialized writes the metadata that makes the directory a Drover
// data dir, once raft state exists in it: a server that waits to join or
// form a cluster has none, and may be stopped and started again meanwhile.
func (d *dataDir) markInitialized(nodeName string, now time.Time) error {
	d.metaMu.Lock()
	defer d.metaMu.Unlock()
	if d.initialized {
		return nil
	}
	d.meta.Format, d.meta.NodeName, d.meta.CreatedAt = dataDirFormat, nodeName, now.UTC()
	if err := d.writeMeta(); err != nil {
		return err
	}
	d.initialized = true
	return nil
}

// setClusterID keeps the cluster's ID in the metadata (written at once
// when the data dir is initialized, else when it is).
func (d *dataDir) setClusterID(id string) error {
	d.metaMu.Lock()
	defer d.metaMu.Unlock()
	if d.meta.ClusterID == id {
		return nil
	}
	d.meta.ClusterID = id
	if !d.initialized {
		return nil
	}
	return d.writeMeta()
}

// writeMeta replaces the metadata file atomically.
func (d *dataDir) writeMeta() error {
	b, err := json.MarshalIndent(&d.meta, "", "  ")
	if err != nil {
		return err
	}
	tmp := d.metaPath() + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDataDirUnusable, err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, d.metaPath())
	}
	if err == nil {
		err = syncDir(d.path)
	}
	if err != nil {
		return fmt.Errorf("%w: write %s: %v", ErrDataDirUnusable, d.metaPath(), err)
	}
	return nil
}

func syncDir(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func (d *dataDir) close() {
	if d.bolt != nil {
		_ = d.bolt.Close()
		d.bolt = nil
	}
}

// newestOnly lists only the newest snapshot, so raft restores it or fails:
// falling back silently to an older snapshot could leave a gap the log no
// longer covers. It keeps why a snapshot could not be opened, which raft
// only logs.
type newestOnly struct {
	*raft.FileSnapshotStore
	openErr *error
}

func (n newestOnly) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := n.FileSnapshotStore.Open(id)
	if err != nil {
		*n.openErr = fmt.Errorf("snapshot %s: %w", id, err)
	}
	return meta, rc, err
}

func (n newestOnly) List() ([]*raft.SnapshotMeta, error) {
	metas, err := n.FileSnapshotStore.List()
	if len(metas) > 1 {
		metas = metas[:1]
	}
	return metas, err
}
