package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// Namespaces and node pools are written objects, as Nomad's: what the
// endpoints check before the write is checked again as the entry applies
// (state), so a job registered while its pool is deleted is refused.

// maxDescription bounds a namespace's or node pool's description, as
// Nomad's.
const maxDescription = 256

// UpsertNamespaces creates or replaces namespaces, checked as Nomad
// checks them: a name of letters, digits and dashes, a description of at
// most 256 bytes, and task driver names. It returns the write's index.
func (s *Server) UpsertNamespaces(nss []*state.Namespace) (uint64, error) {
	if len(nss) == 0 {
		return 0, badRequest(errors.New("must specify at least one namespace"))
	}
	for _, ns := range nss {
		var errs []error
		if !validNamespaceName.MatchString(ns.Name) {
			errs = append(errs, fmt.Errorf("invalid name %q. Must match regex %s", ns.Name, validNamespaceName))
		}
		if len(ns.Description) > maxDescription {
			errs = append(errs, fmt.Errorf("description longer than %d", maxDescription))
		}
		if c := ns.Capabilities; c != nil {
			for _, d := range slices.Concat(c.EnabledTaskDrivers, c.DisabledTaskDrivers) {
				if strings.TrimSpace(d) == "" {
					errs = append(errs, errors.New("a task driver in capabilities is empty"))
					break
				}
			}
		}
		if err := errors.Join(errs...); err != nil {
			return 0, badRequest(fmt.Errorf("Invalid namespace %q: %w", ns.Name, err))
		}
	}
	return s.Apply(fsm.NamespaceUpsertRequestType, &fsm.NamespaceUpsertRequest{Namespaces: nss})
}

// DeleteNamespace deletes a namespace: not default, nor one with a job
// that is not dead or a variable (refused as the entry applies).
func (s *Server) DeleteNamespace(name string) (uint64, error) {
	if name == "" {
		return 0, badRequest(errors.New("must specify at least one namespace to delete"))
	}
	if s.store.Snapshot().Namespace(name) == nil {
		// Not a raft entry every server would refuse, and log.
		return 0, fmt.Errorf("%w: namespace %q", ErrNotFound, name)
	}
	return s.Apply(fsm.NamespaceDeleteRequestType, &fsm.NamespaceDeleteRequest{Names: []string{name}})
}

// UpsertNodePools creates or replaces node pools, checked as Nomad checks
// them: a name of letters, digits, dashes and underscores, a description
// of at most 256 bytes, not a built-in pool.
func (s *Server) UpsertNodePools(ps []*state.NodePool) (uint64, error) {
	if len(ps) == 0 {
		return 0, badRequest(errors.New("must specify at least one node pool"))
	}
	for _, p := range ps {
		var errs []error
		if !validNodePoolName.MatchString(p.Name) {
			errs = append(errs, fmt.Errorf("invalid name %q, must match regex %s", p.Name, validNodePoolName))
		}
		if len(p.Description) > maxDescription {
			errs = append(errs, fmt.Errorf("description longer than %d", maxDescription))
		}
		if err := errors.Join(errs...); err != nil {
			return 0, badRequest(fmt.Errorf("invalid node pool %q: %w", p.Name, err))
		}
		if state.IsBuiltInNodePool(p.Name) {
			return 0, badRequest(fmt.Errorf("modifying node pool %q is not allowed", p.Name))
		}
	}
	return s.Apply(fsm.NodePoolUpsertRequestType, &fsm.NodePoolUpsertRequest{NodePools: ps})
}

// DeleteNodePool deletes a node pool: not a built-in, nor one with nodes
// or with a job that is not dead (refused as the entry applies).
func (s *Server) DeleteNodePool(name string) (uint64, error) {
	if name == "" {
		return 0, badRequest(errors.New("node pool name is empty"))
	}
	if state.IsBuiltInNodePool(name) {
		return 0, badRequest(fmt.Errorf("deleting node pool %q is not allowed", name))
	}
	if s.store.Snapshot().NodePool(name) == nil {
		return 0, fmt.Errorf("%w: node pool %q", ErrNotFound, name)
	}
	return s.Apply(fsm.NodePoolDeleteRequestType, &fsm.NodePoolDeleteRequest{Names: []string{name}})
}

// checkJobPlacement refuses, as Nomad's job admission does, a job whose
// namespace or node pool does not exist, or whose tasks use a driver its
// namespace does not allow.
func checkJobPlacement(snap *state.Snapshot, job *sdk.Job) error {
	ns := snap.Namespace(job.Namespace)
	if ns == nil {
		return badRequest(fmt.Errorf("job %q is in nonexistent namespace %q", job.ID, job.Namespace))
	}
	if job.NodePool != "" && snap.NodePool(job.NodePool) == nil {
		return badRequest(fmt.Errorf("job %q is in nonexistent node pool %q", job.ID, job.NodePool))
	}
	var refused []string
	for _, tg := range job.TaskGroups {
		for _, t := range tg.Tasks {
			if !ns.AllowsDriver(t.Driver) && !slices.Contains(refused, t.Driver) {
				refused = append(refused, t.Driver)
			}
		}
	}
	switch len(refused) {
	case 0:
		return nil
	case 1:
		return badRequest(fmt.Errorf("used task driver %q is not allowed in namespace %q", refused[0], ns.Name))
	}
	return badRequest(fmt.Errorf("used task drivers %q are not allowed in namespace %q", refused, ns.Name))
}

// checkVariablePlacement refuses a new variable (cur nil) in a namespace
// that does not exist, before the write: its entry checks it again as it
// applies once namespaces are written objects, and only then
// (fsm.VariableApplyRequest).
func checkVariablePlacement(snap *state.Snapshot, cur *state.Variable, ns, path string) error {
	if cur == nil && snap.Namespace(ns) == nil {
		return badRequest(fmt.Errorf("variable %q is in nonexistent namespace %q", path, ns))
	}
	return nil
}

// refsExplicitRetry is how often a leader tries again to make namespaces
// and node pools written objects while a server runs an older version.
const refsExplicitRetry = 30 * time.Second

// makeRefsExplicit makes namespaces and node pools written objects
// (state.Txn.MakeRefsExplicit), the leader's duty once per cluster: in a
// new cluster, and in one an older version began, as soon as every server
// runs this one. Until then a job's or a variable's namespace and pool
// are checked only before the write, not again as it applies. It writes
// an empty namespace write, whose entry the gate lets through only once
// every server applies it, and reports whether there is nothing left to
// do (done, or no longer the leader's to do).
func (s *Server) makeRefsExplicit() bool {
	if s.store.Snapshot().RefsExplicit() {
		return true
	}
	_, err := s.Apply(fsm.NamespaceUpsertRequestType, &fsm.NamespaceUpsertRequest{})
	if err != nil && !errors.Is(err, ErrNotLeader) {
		s.log.Debug().Err(err).Msg("namespaces and node pools stay implicit until every server runs this version")
		return false
	}
	return true
}

// ensureRefsExplicit runs makeRefsExplicit at once, then every
// refsExplicitRetry until it is done.
func (s *Server) ensureRefsExplicit(ctx context.Context) {
	t := time.NewTicker(refsExplicitRetry)
	defer t.Stop()
	for !s.makeRefsExplicit() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
