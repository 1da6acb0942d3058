package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/hashicorp/raft"
	"github.com/tinylib/msgp/msgp"
)

// Snapshot format: the magic line, then records of
// [kind byte][uvarint length][MessagePack body], ending with recEnd.
const snapshotMagic = "drover-snapshot-v1\n"

const (
	recEnd byte = iota
	recIndex
	recNode
	recJob
	recJobVersion
	recAlloc
	recEval
	recDeployment
	recSchedConfig
	recMeta
	recAllocJob
	recPeriodicLaunch
	recScalingEvents
	recClusterMeta
	recJobSubmission
	recJobSummaryKept
	recACLPolicy
	recACLToken
	recACLRole
	recVariable
	recRootKey
	recAutopilotConfig
	recACLAuthMethod
	recACLBindingRule
	recOneTimeToken
	recNamespace
	recNodePool
	recJobVersionTags
	recCSIVolume
)

// snapshotMeta is the first record: the index the snapshot was taken at.
type snapshotMeta struct{ Index uint64 }

// MarshalMsg encodes the meta record.
func (m *snapshotMeta) MarshalMsg(b []byte) ([]byte, error) {
	return msgp.AppendUint64(b, m.Index), nil
}

// UnmarshalMsg decodes the meta record.
func (m *snapshotMeta) UnmarshalMsg(b []byte) ([]byte, error) {
	v, rest, err := msgp.ReadUint64Bytes(b)
	m.Index = v
	return rest, err
}

type snapshot struct{ snap *state.Snapshot }

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	w := bufio.NewWriterSize(sink, 1<<20)
	if err := writeSnapshot(w, s.snap); err != nil {
		sink.Cancel()
		return err
	}
	if err := w.Flush(); err != nil {
		sink.Cancel()
		return fmt.Errorf("fsm: write snapshot: %w", err)
	}
	return sink.Close()
}

func (s *snapshot) Release() {}

type recWriter struct {
	w   io.Writer
	buf []byte
	err error
}

func (rw *recWriter) put(kind byte, m msgp.Marshaler) {
	if rw.err != nil {
		return
	}
	body, err := m.MarshalMsg(rw.buf[:0])
	if err != nil {
		rw.err = fmt.Errorf("fsm: encode snapshot record %d: %w", kind, err)
		return
	}
	rw.buf = body
	var hdr [1 + binary.MaxVarintLen64]byte
	hdr[0] = kind
	n := binary.PutUvarint(hdr[1:], uint64(len(body)))
	if _, err := rw.w.Write(hdr[:1+n]); err != nil {
		rw.err = err
		return
	}
	if _, err := rw.w.Write(body); err != nil {
		rw.err = err
	}
}

// writeSnapshot writes every table of snap.
func writeSnapshot(w io.Writer, snap *state.Snapshot) error {
	if _, err := io.WriteString(w, snapshotMagic); err != nil {
		return err
	}
	rw := &recWriter{w: w}
	rw.put(recMeta, &snapshotMeta{Index: snap.Index()})
	tables := []string{state.TableNodes, state.TableJobs, state.TableJobVersions, state.TableAllocs,
		state.TableEvals, state.TableDeployments, state.TableSchedConfig, state.TablePeriodic, state.TableSubmissions,
		state.TableSummaries, state.TableScalingPolicies, state.TableACLPolicies, state.TableACLTokens,
		state.TableACLRoles, state.ACLBootstrapIndexKey, state.TableVariables, state.TableRootKeys, state.TableAutopilot,
		state.TableACLAuthMethods, state.TableACLBindingRules, state.TableOneTimeTokens, state.TableVersionTags,
		state.TableCSIVolumes}
	// Until namespaces and node pools are written objects, their rows
	// decide nothing and an older version may be among the servers (a
	// follower sent this snapshot, which refuses records it does not
	// know): the snapshot is then one that version wrote, and restores
	// with the rows made from what uses them (RestoreImplicitRefs).
	refs := snap.RefsExplicit()
	if refs {
		tables = append(tables, state.TableNamespaces, state.TableNodePools, state.RefsExplicitKey)
	}
	for _, t := range tables {
		rw.put(recIndex, &state.IndexEntry{Key: t, Value: snap.TableIndex(t)})
	}
	for _, n := range snap.Nodes() {
		rw.put(recNode, n)
	}
	for _, j := range snap.Jobs("") {
		rw.put(recJob, j)
		for _, v := range snap.JobVersions(j.Namespace, j.ID) {
			rw.put(recJobVersion, v)
		}
	}
	for _, sub := range snap.JobSubmissions() {
		rw.put(recJobSubmission, sub)
	}
	for _, k := range snap.JobSummariesKept() {
		rw.put(recJobSummaryKept, k)
	}
	// Allocations are written without their job; restore links them to
	// the job version they name. Versions no longer kept in the version
	// table are written once each, ahead of the allocations.
	allocs := snap.Allocs()
	extra := map[versionRef]bool{}
	for _, a := range allocs {
		if a.Job == nil {
			continue
		}
		ref := versionRef{a.Namespace, a.JobID, a.Job.JobModifyIndex}
		if extra[ref] {
			continue
		}
		if v := snap.JobVersion(ref.ns, ref.id, a.Job.Version); v != nil && v.JobModifyIndex == ref.mod {
			continue
		}
		if cur := snap.Job(ref.ns, ref.id); cur != nil && cur.JobModifyIndex == ref.mod {
			continue
		}
		extra[ref] = true
		rw.put(recAllocJob, a.Job)
	}
	for _, a := range allocs {
		c := *a
		c.Job = nil
		rw.put(recAlloc, &c)
	}
	for _, e := range snap.Evals() {
		rw.put(recEval, e)
	}
	for _, d := range snap.Deployments() {
		rw.put(recDeployment, d)
	}
	for _, l := range snap.PeriodicLaunches() {
		rw.put(recPeriodicLaunch, l)
	}
	for _, e := range snap.AllScalingEvents() {
		rw.put(recScalingEvents, e)
	}
	for _, p := range snap.ACLPolicies("") {
		rw.put(recACLPolicy, p)
	}
	for _, t := range snap.ACLTokens("") {
		rw.put(recACLToken, t)
	}
	for _, r := range snap.ACLRoles("") {
		rw.put(recACLRole, r)
	}
	for _, m := range snap.ACLAuthMethods() {
		rw.put(recACLAuthMethod, m)
	}
	for _, r := range snap.ACLBindingRules("") {
		rw.put(recACLBindingRule, r)
	}
	for _, o := range snap.OneTimeTokens() {
		rw.put(recOneTimeToken, o)
	}
	for _, ts := range snap.AllJobVersionTags() {
		rw.put(recJobVersionTags, ts)
	}
	for _, v := range snap.CSIVolumes("*") {
		rw.put(recCSIVolume, v)
	}
	for _, ns := range snap.Namespaces() {
		if refs && (ns.CreateIndex > 1 || ns.ModifyIndex > 1) { // not the built-in default
			rw.put(recNamespace, ns)
		}
	}
	for _, p := range snap.NodePools() {
		if refs && !state.IsBuiltInNodePool(p.Name) {
			rw.put(recNodePool, p)
		}
	}
	for _, k := range snap.RootKeys() {
		rw.put(recRootKey, k)
	}
	for _, v := range snap.Variables("*", "") {
		rw.put(recVariable, v)
	}
	if c := snap.AutopilotConfig(); c != nil {
		rw.put(recAutopilotConfig, c)
	}
	rw.put(recSchedConfig, snap.SchedulerConfig())
	if m := snap.ClusterMeta(); m != nil {
		rw.put(recClusterMeta, m)
	}
	if rw.err != nil {
		return rw.err
	}
	_, err := w.Write([]byte{recEnd})
	return err
}

// ErrCorruptSnapshot is returned for a snapshot that cannot be read.
var ErrCorruptSnapshot = errors.New("fsm: corrupt snapshot")

// ReadSnapshot reads a snapshot (what Persist writes) into a new store,
// checking all of it: for operator snapshots, before they replace the
// state, and to inspect them.
func ReadSnapshot(r io.Reader) (*state.Store, error) {
	store, err := state.NewStore()
	if err != nil {
		return nil, err
	}
	if err := restore(store, r); err != nil {
		return nil, err
	}
	return store, nil
}

// restore reads a snapshot into store, replacing its state.
func restore(store *state.Store, r io.Reader) error {
	br := bufio.NewReaderSize(r, 1<<20)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != snapshotMagic {
		return fmt.Errorf("%w: bad header", ErrCorruptSnapshot)
	}
	var meta snapshotMeta
	var body bytes.Buffer
	next := func() (byte, []byte, error) {
		kind, err := br.ReadByte()
		if err != nil {
			return 0, nil, fmt.Errorf("%w: truncated: %v", ErrCorruptSnapshot, err)
		}
		if kind == recEnd {
			return kind, nil, nil
		}
		n, err := binary.ReadUvarint(br)
		if err != nil || n > 1<<30 {
			return 0, nil, fmt.Errorf("%w: bad record length", ErrCorruptSnapshot)
		}
		// The buffer grows with the bytes actually read, so a corrupt
		// length cannot make the reader allocate what is not there.
		body.Reset()
		if _, err := io.CopyN(&body, br, int64(n)); err != nil {
			return 0, nil, fmt.Errorf("%w: truncated record: %v", ErrCorruptSnapshot, err)
		}
		return kind, body.Bytes(), nil
	}
	kind, b, err := next()
	if err != nil {
		return err
	}
	if kind != recMeta {
		return fmt.Errorf("%w: missing meta record", ErrCorruptSnapshot)
	}
	if _, err := meta.UnmarshalMsg(b); err != nil {
		return fmt.Errorf("%w: meta: %v", ErrCorruptSnapshot, err)
	}
	allocJobs := map[versionRef]*sdk.Job{}
	refsWritten := false
	return store.Restore(meta.Index, func(tx *state.Txn) error {
		for {
			kind, b, err := next()
			if err != nil {
				return err
			}
			if kind == recEnd {
				if !refsWritten {
					// An older version's snapshot, from when namespaces
					// and node pools were implicit: make those in use.
					return tx.RestoreImplicitRefs()
				}
				return nil
			}
			if kind == recIndex {
				var e state.IndexEntry
				refsWritten = refsWritten || abi.Decode(b, &e) == nil && e.Key == state.TableNamespaces
			}
			if err := restoreRecord(tx, kind, b, allocJobs); err != nil {
				if !errors.Is(err, ErrCorruptSnapshot) {
					err = fmt.Errorf("%w: record %d: %v", ErrCorruptSnapshot, kind, err)
				}
				return err
			}
		}
	})
}

type versionRef struct {
	ns, id string
	mod    uint64 // the version's JobModifyIndex
}

func restoreRecord(tx *state.Txn, kind byte, b []byte, allocJobs map[versionRef]*sdk.Job) error {
	un := func(m msgp.Unmarshaler) error {
		if err := abi.Decode(b, m); err != nil {
			return fmt.Errorf("%w: record %d: %v", ErrCorruptSnapshot, kind, err)
		}
		return nil
	}
	switch kind {
	case recIndex:
		var e state.IndexEntry
		if err := un(&e); err != nil {
			return err
		}
		return tx.RestoreTableIndex(&e)
	case recNode:
		var n sdk.Node
		if err := un(&n); err != nil {
			return err
		}
		return tx.UpsertNode(&n)
	case recJob:
		var j sdk.Job
		if err := un(&j); err != nil {
			return err
		}
		return tx.UpsertJob(&j)
	case recJobVersion:
		var j sdk.Job
		if err := un(&j); err != nil {
			return err
		}
		return tx.UpsertJobVersion(&j)
	case recJobSubmission:
		var sub state.JobSubmission
		if err := un(&sub); err != nil {
			return err
		}
		return tx.RestoreJobSubmission(&sub)
	case recJobSummaryKept:
		var k state.JobSummaryKept
		if err := un(&k); err != nil {
			return err
		}
		return tx.RestoreJobSummaryKept(&k)
	case recAllocJob:
		var j sdk.Job
		if err := un(&j); err != nil {
			return err
		}
		allocJobs[versionRef{j.Namespace, j.ID, j.JobModifyIndex}] = &j
		return nil
	case recAlloc:
		var a sdk.Allocation
		if err := un(&a); err != nil {
			return err
		}
		// Link the allocation to the version it names by JobModifyIndex:
		// after a purge and a new registration, version numbers repeat.
		a.Job = allocJobs[versionRef{a.Namespace, a.JobID, a.JobModifyIndex}]
		if v := tx.JobVersion(a.Namespace, a.JobID, a.JobVersion); a.Job == nil && v != nil && v.JobModifyIndex == a.JobModifyIndex {
			a.Job = v
		}
		if cur := tx.Job(a.Namespace, a.JobID); a.Job == nil && cur != nil && cur.JobModifyIndex == a.JobModifyIndex {
			a.Job = cur
		}
		return tx.UpsertAlloc(&a)
	case recEval:
		var e sdk.Evaluation
		if err := un(&e); err != nil {
			return err
		}
		return tx.UpsertEval(&e)
	case recDeployment:
		var d sdk.Deployment
		if err := un(&d); err != nil {
			return err
		}
		return tx.UpsertDeployment(&d)
	case recPeriodicLaunch:
		var l state.PeriodicLaunch
		if err := un(&l); err != nil {
			return err
		}
		return tx.UpsertPeriodicLaunch(&l)
	case recScalingEvents:
		var e state.JobScalingEvents
		if err := un(&e); err != nil {
			return err
		}
		return tx.RestoreScalingEvents(&e)
	case recSchedConfig:
		var c sdk.SchedulerConfiguration
		if err := un(&c); err != nil {
			return err
		}
		return tx.SetSchedulerConfig(&c)
	case recACLPolicy:
		var p state.ACLPolicy
		if err := un(&p); err != nil {
			return err
		}
		return tx.UpsertACLPolicies([]*state.ACLPolicy{&p})
	case recACLToken:
		var t state.ACLToken
		if err := un(&t); err != nil {
			return err
		}
		return tx.UpsertACLTokens([]*state.ACLToken{&t})
	case recACLRole:
		var r state.ACLRole
		if err := un(&r); err != nil {
			return err
		}
		return tx.UpsertACLRoles([]*state.ACLRole{&r})
	case recACLAuthMethod:
		var m state.ACLAuthMethod
		if err := un(&m); err != nil {
			return err
		}
		return tx.UpsertACLAuthMethods([]*state.ACLAuthMethod{&m})
	case recACLBindingRule:
		var r state.ACLBindingRule
		if err := un(&r); err != nil {
			return err
		}
		return tx.UpsertACLBindingRules([]*state.ACLBindingRule{&r})
	case recOneTimeToken:
		var o state.OneTimeToken
		if err := un(&o); err != nil {
			return err
		}
		return tx.UpsertOneTimeToken(&o)
	case recRootKey:
		var k state.RootKey
		if err := un(&k); err != nil {
			return err
		}
		return tx.UpsertRootKey(&k)
	case recJobVersionTags:
		var ts state.JobVersionTags
		if err := un(&ts); err != nil {
			return err
		}
		return tx.RestoreJobVersionTags(&ts)
	case recCSIVolume:
		var v sdk.CSIVolume
		if err := un(&v); err != nil {
			return err
		}
		return tx.RegisterCSIVolumes([]*sdk.CSIVolume{&v})
	case recNamespace:
		var ns state.Namespace
		if err := un(&ns); err != nil {
			return err
		}
		return tx.UpsertNamespaces([]*state.Namespace{&ns})
	case recNodePool:
		var p state.NodePool
		if err := un(&p); err != nil {
			return err
		}
		return tx.UpsertNodePools([]*state.NodePool{&p})
	case recAutopilotConfig:
		var c state.AutopilotConfig
		if err := un(&c); err != nil {
			return err
		}
		return tx.SetAutopilotConfig(&c)
	case recVariable:
		var v state.Variable
		if err := un(&v); err != nil {
			return err
		}
		return tx.SetVariable(&v)
	case recClusterMeta:
		var m state.ClusterMeta
		if err := un(&m); err != nil {
			return err
		}
		return tx.SetClusterMeta(&m)
	}
	return fmt.Errorf("%w: unknown record kind %d", ErrCorruptSnapshot, kind)
}

// ClusterMetaRecordSize is how many bytes m's record takes in a snapshot
// (0 for none).
func ClusterMetaRecordSize(m *state.ClusterMeta) int64 {
	if m == nil {
		return 0
	}
	var hdr [binary.MaxVarintLen64]byte
	body, _ := clusterRecord(m).MarshalMsg(nil)
	return int64(1 + binary.PutUvarint(hdr[:], uint64(len(body))) + len(body))
}

// ReplaceClusterMeta copies a snapshot (what Persist writes) from r to w
// with m as the cluster's identity in place of the one it holds, if any:
// a state restored into a cluster stays that cluster's (servers refuse
// raft from another cluster, so a restore must not change its ID). The
// copy is ClusterMetaRecordSize(m) - ClusterMetaRecordSize(old) bytes
// longer than the original. Records are copied, not decoded.
func ReplaceClusterMeta(w io.Writer, r io.Reader, m *state.ClusterMeta) error {
	br := bufio.NewReaderSize(r, 1<<20)
	bw := bufio.NewWriterSize(w, 1<<20)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != snapshotMagic {
		return fmt.Errorf("%w: bad header", ErrCorruptSnapshot)
	}
	if _, err := bw.Write(magic); err != nil {
		return err
	}
	var hdr [1 + binary.MaxVarintLen64]byte
	for {
		kind, err := br.ReadByte()
		if err != nil {
			return fmt.Errorf("%w: truncated: %v", ErrCorruptSnapshot, err)
		}
		if kind == recEnd {
			rw := &recWriter{w: bw}
			if m != nil {
				rw.put(recClusterMeta, clusterRecord(m))
			}
			if rw.err != nil {
				return rw.err
			}
			if err := bw.WriteByte(recEnd); err != nil {
				return err
			}
			return bw.Flush()
		}
		n, err := binary.ReadUvarint(br)
		if err != nil || n > 1<<30 {
			return fmt.Errorf("%w: bad record length", ErrCorruptSnapshot)
		}
		if kind == recClusterMeta {
			if _, err := br.Discard(int(n)); err != nil {
				return fmt.Errorf("%w: truncated record: %v", ErrCorruptSnapshot, err)
			}
			continue
		}
		hdr[0] = kind
		h := 1 + binary.PutUvarint(hdr[1:], n)
		if _, err := bw.Write(hdr[:h]); err != nil {
			return err
		}
		if _, err := io.CopyN(bw, br, int64(n)); err != nil {
			return fmt.Errorf("%w: truncated record: %v", ErrCorruptSnapshot, err)
		}
	}
}

// clusterRecord is m as the state stores it (and a snapshot writes it).
func clusterRecord(m *state.ClusterMeta) *state.ClusterMeta {
	c := *m
	c.Key = state.ClusterMetaKey
	return &c
}
