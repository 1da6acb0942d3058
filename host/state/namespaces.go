package state

import (
	"errors"
	"fmt"

	"github.com/drover-sched/drover/sdk"
)

// Errors of namespace and node pool writes, and of what needs them. The
// checks behind them are made as an entry applies, as Nomad's state store
// makes most of them (a node pool's deletion too, which Nomad's endpoint
// checks before the write only): a job registered while its pool is
// deleted cannot end up in a pool that is gone.
var (
	// ErrNonexistent refuses a job in a namespace or node pool that does
	// not exist.
	ErrNonexistent = errors.New("nonexistent")
	// ErrInUse refuses to delete a namespace or node pool that something
	// is still in.
	ErrInUse = errors.New("in use")
	// ErrBuiltIn refuses to change or delete a built-in node pool, or to
	// delete the default namespace.
	ErrBuiltIn = errors.New("built in")
)

// Built-in namespace and node pools, as Nomad makes them: they exist
// from the start, at index 1.
var (
	defaultNamespace = &Namespace{Name: sdk.DefaultNamespace, Description: "Default shared namespace",
		CreateIndex: 1, ModifyIndex: 1}
	builtInPools = map[string]*NodePool{
		sdk.AllNodePool:     {Name: sdk.AllNodePool, Description: "Node pool with all nodes in the cluster.", CreateIndex: 1, ModifyIndex: 1},
		sdk.DefaultNodePool: {Name: sdk.DefaultNodePool, Description: "Default node pool.", CreateIndex: 1, ModifyIndex: 1},
	}
)

// refusal is an error of a kind (ErrNonexistent, ErrInUse, ErrBuiltIn)
// that reads as its message alone: Nomad's words, for its users.
type refusal struct {
	kind error
	msg  string
}

func (e *refusal) Error() string { return e.msg }
func (e *refusal) Unwrap() error { return e.kind }

// Refuse returns an error of kind that reads as the formatted message.
func Refuse(kind error, format string, args ...any) error {
	return &refusal{kind, fmt.Sprintf(format, args...)}
}

// IsBuiltInNodePool reports whether name is a built-in node pool (all,
// default), which can be neither changed nor deleted.
func IsBuiltInNodePool(name string) bool { return builtInPools[name] != nil }

// UpsertNamespaces inserts or replaces namespaces (by name), keeping each
// one's create index.
func (t *Txn) UpsertNamespaces(nss []*Namespace) error {
	for _, ns := range nss {
		if ns == nil || ns.Name == "" {
			return fmt.Errorf("state: namespace without name")
		}
		if !t.restore {
			ns.CreateIndex = t.index
			if old := first[Namespace](t.reader, TableNamespaces, "id", ns.Name); old != nil {
				ns.CreateIndex = old.CreateIndex
			} else if ns.Name == sdk.DefaultNamespace {
				ns.CreateIndex = defaultNamespace.CreateIndex
			}
			ns.ModifyIndex = t.index
		}
		if err := t.insert(TableNamespaces, ns); err != nil {
			return err
		}
	}
	return nil
}

// DeleteNamespaces removes namespaces by name, as Nomad's: not default,
// nor one with a job that is not dead or a variable (ErrInUse); an
// unknown name is ErrNotFound. Any refusal deletes none.
func (t *Txn) DeleteNamespaces(names []string) error {
	for _, name := range names {
		if name == sdk.DefaultNamespace {
			return Refuse(ErrBuiltIn, "can not delete default namespace")
		}
		old := first[Namespace](t.reader, TableNamespaces, "id", name)
		if old == nil {
			return fmt.Errorf("%w: namespace %q", ErrNotFound, name)
		}
		for j := range t.EachJob(name) {
			if j.Status != sdk.JobStatusDead {
				return Refuse(ErrInUse, "namespace %q contains at least one non-terminal job %q. "+
					"All jobs must be terminal in namespace before it can be deleted", name, j.ID)
			}
		}
		if first[Variable](t.reader, TableVariables, "id_prefix", name, "") != nil {
			// Nomad's words: no path, which the token may not be allowed to list.
			return Refuse(ErrInUse, "namespace %q contains at least one variable. "+
				"All variables in namespace must be deleted before it can be deleted", name)
		}
		if err := t.delete(TableNamespaces, old); err != nil {
			return err
		}
	}
	return nil
}

// UpsertNodePools inserts or replaces node pools (by name), keeping each
// one's create index; the built-ins are refused (ErrBuiltIn).
func (t *Txn) UpsertNodePools(ps []*NodePool) error {
	for _, p := range ps {
		if p == nil || p.Name == "" {
			return fmt.Errorf("state: node pool without name")
		}
		if IsBuiltInNodePool(p.Name) {
			return Refuse(ErrBuiltIn, "modifying node pool %q is not allowed", p.Name)
		}
		if !t.restore {
			p.CreateIndex = t.index
			if old := t.NodePool(p.Name); old != nil {
				p.CreateIndex = old.CreateIndex
			}
			p.ModifyIndex = t.index
		}
		t.record(KindNodePool, p.Name)
		if err := t.insert(TableNodePools, p); err != nil {
			return err
		}
	}
	return nil
}

// DeleteNodePools removes node pools by name, as Nomad's: not a built-in
// (ErrBuiltIn), nor one with nodes or with a job, in any namespace, that
// is not dead (ErrInUse); an unknown name is ErrNotFound. Any refusal
// deletes none.
func (t *Txn) DeleteNodePools(names []string) error {
	for _, name := range names {
		if IsBuiltInNodePool(name) {
			return Refuse(ErrBuiltIn, "deleting node pool %q is not allowed", name)
		}
		old := first[NodePool](t.reader, TableNodePools, "id", name)
		if old == nil {
			return fmt.Errorf("%w: node pool %q", ErrNotFound, name)
		}
		for n := range t.EachNode() {
			if n.NodePool == name {
				return Refuse(ErrInUse, "node pool %q has nodes (node %s)", name, n.ID)
			}
		}
		for j := range t.EachJob("*") {
			if j.NodePool == name && j.Status != sdk.JobStatusDead {
				return Refuse(ErrInUse, "node pool %q has non-terminal jobs (job %q in namespace %q)", name, j.ID, j.Namespace)
			}
		}
		t.record(KindNodePool, name)
		if err := t.delete(TableNodePools, old); err != nil {
			return err
		}
	}
	return nil
}

// EnsureNodePool makes the named node pool, with nothing but its name,
// if it does not exist: a node registering in a pool makes it, as in
// Nomad.
func (t *Txn) EnsureNodePool(name string) error {
	if name == "" || t.NodePool(name) != nil {
		return nil
	}
	return t.UpsertNodePools([]*NodePool{{Name: name}})
}

// EnsureNamespace makes the named namespace, with nothing but its name, if
// it does not exist: what an older version's entries and snapshots used,
// when namespaces were implicit.
func (t *Txn) EnsureNamespace(name string) error {
	if name == "" || t.Namespace(name) != nil {
		return nil
	}
	return t.UpsertNamespaces([]*Namespace{{Name: name}})
}

// CheckJobRefs refuses (ErrNonexistent) a job whose namespace or node
// pool does not exist, with Nomad's words.
func (t *Txn) CheckJobRefs(j *sdk.Job) error {
	if t.Namespace(j.Namespace) == nil {
		return Refuse(ErrNonexistent, "job %q is in nonexistent namespace %q", j.ID, j.Namespace)
	}
	if j.NodePool != "" && t.NodePool(j.NodePool) == nil {
		return Refuse(ErrNonexistent, "job %q is in nonexistent node pool %q", j.ID, j.NodePool)
	}
	return nil
}

// Namespace returns a namespace by name: one written, else the built-in
// default; nil if there is none.
func (r reader) Namespace(name string) *Namespace {
	if ns := first[Namespace](r, TableNamespaces, "id", name); ns != nil {
		return ns
	}
	if name == sdk.DefaultNamespace {
		return defaultNamespace
	}
	return nil
}

// Namespaces returns every namespace, the built-in default among them,
// ordered by name.
func (r reader) Namespaces() []*Namespace {
	out := all[Namespace](r, TableNamespaces, "id")
	return withBuiltIns(out, []*Namespace{defaultNamespace}, func(ns *Namespace) string { return ns.Name })
}

// NodePool returns a node pool by name, the built-ins among them; nil if
// there is none.
func (r reader) NodePool(name string) *NodePool {
	if p := builtInPools[name]; p != nil {
		return p
	}
	return first[NodePool](r, TableNodePools, "id", name)
}

// NodePools returns every node pool, the built-ins among them, ordered by
// name.
func (r reader) NodePools() []*NodePool {
	out := all[NodePool](r, TableNodePools, "id")
	return withBuiltIns(out, []*NodePool{builtInPools[sdk.AllNodePool], builtInPools[sdk.DefaultNodePool]},
		func(p *NodePool) string { return p.Name })
}

// withBuiltIns merges the built-ins (ordered by name) that rows (ordered by
// name) do not hold into rows, keeping the order.
func withBuiltIns[T any](rows, builtIns []*T, name func(*T) string) []*T {
	out := make([]*T, 0, len(rows)+len(builtIns))
	i := 0
	for _, b := range builtIns {
		for i < len(rows) && name(rows[i]) < name(b) {
			out = append(out, rows[i])
			i++
		}
		if i < len(rows) && name(rows[i]) == name(b) {
			continue // written over
		}
		out = append(out, b)
	}
	return append(out, rows[i:]...)
}

// RefsExplicit reports whether namespaces and node pools are written
// objects in this state (RefsExplicitKey): whether their rows are the same
// on every server, and so may decide what an entry does.
func (r reader) RefsExplicit() bool { return r.TableIndex(RefsExplicitKey) != 0 }

// MakeRefsExplicit makes namespaces and node pools written objects, once:
// the first namespace or node pool write does it as it applies (a
// leader makes an empty one as soon as every server applies them:
// server's makeRefsExplicit, in a new cluster as in one an older version
// began, when they were implicit). Until
// then their rows depend on how a server came by its state: replaying an
// older version's entries keeps what they made though nothing is in it
// any more (a job purged, a node gone), while an older version's snapshot
// restores only those in use (RestoreImplicitRefs). So it replaces the
// rows with those in use (the namespaces of the jobs and variables, the
// pools of the nodes and jobs), which the state, the same on every server,
// decides alike. (The pools it removes or adds make no events: it happens
// once in a cluster's life.)
func (t *Txn) MakeRefsExplicit() error {
	if t.RefsExplicit() {
		return nil
	}
	for _, ns := range all[Namespace](t.reader, TableNamespaces, "id") {
		if err := t.delete(TableNamespaces, ns); err != nil {
			return err
		}
	}
	for _, p := range all[NodePool](t.reader, TableNodePools, "id") {
		if err := t.delete(TableNodePools, p); err != nil {
			return err
		}
	}
	if _, err := t.insertRefsInUse(); err != nil {
		return err
	}
	if err := t.txn.Insert(TableIndex, &IndexEntry{Key: RefsExplicitKey, Value: t.index}); err != nil {
		return fmt.Errorf("state: insert %s: %w", RefsExplicitKey, err)
	}
	return nil
}

// RestoreImplicitRefs makes, as a restore of a snapshot an older version
// wrote ends, the namespaces and node pools that version's were implicit
// in (insertRefsInUse), for the reads and the checks made before a write
// until MakeRefsExplicit.
func (t *Txn) RestoreImplicitRefs() error {
	top, err := t.insertRefsInUse()
	if err != nil {
		return err
	}
	for _, table := range []string{TableNamespaces, TableNodePools} {
		if err := t.RestoreTableIndex(&IndexEntry{Key: table, Value: top}); err != nil {
			return err
		}
	}
	return nil
}

// insertRefsInUse inserts the namespaces and node pools in use that do
// not exist: the namespaces of the jobs and variables, the pools of the
// nodes and jobs. Each is created at the create index of the first object
// in it and modified at the last's. It returns the highest modify index
// inserted.
func (t *Txn) insertRefsInUse() (uint64, error) {
	nss, pools := map[string]*Namespace{}, map[string]*NodePool{}
	use := func(ns, pool string, create, modify uint64) {
		if ns != "" && t.Namespace(ns) == nil {
			n := nss[ns]
			if n == nil {
				n = &Namespace{Name: ns, CreateIndex: create}
				nss[ns] = n
			}
			n.CreateIndex, n.ModifyIndex = min(n.CreateIndex, create), max(n.ModifyIndex, modify)
		}
		if pool != "" && t.NodePool(pool) == nil {
			p := pools[pool]
			if p == nil {
				p = &NodePool{Name: pool, CreateIndex: create}
				pools[pool] = p
			}
			p.CreateIndex, p.ModifyIndex = min(p.CreateIndex, create), max(p.ModifyIndex, modify)
		}
	}
	for j := range t.EachJob("*") {
		use(j.Namespace, j.NodePool, j.CreateIndex, j.ModifyIndex)
	}
	for n := range t.EachNode() {
		use("", n.NodePool, n.CreateIndex, n.ModifyIndex)
	}
	each(t.reader, func(v *Variable) bool {
		use(v.Namespace, "", v.CreateIndex, v.ModifyIndex)
		return true
	}, TableVariables, "id")
	var top uint64
	for _, ns := range nss {
		top = max(top, ns.ModifyIndex)
		if err := t.insert(TableNamespaces, ns); err != nil {
			return 0, err
		}
	}
	for _, p := range pools {
		top = max(top, p.ModifyIndex)
		if err := t.insert(TableNodePools, p); err != nil {
			return 0, err
		}
	}
	return top, nil
}
