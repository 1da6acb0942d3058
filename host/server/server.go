// Package server is Drover's server: it owns the state (memdb made durable
// by raft), and on the leader runs the evaluation broker, the blocked-evals
// tracker, the plan queue and applier, the scheduling workers and the
// timers (heartbeats, reapers, garbage collection).
//
// Writes go through Apply (one raft entry each); reads take a snapshot of
// the state store. The endpoints in endpoints.go are what the HTTP API calls.
package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-sched/drover/host/blocked"
	"github.com/drover-sched/drover/host/broker"
	"github.com/drover-sched/drover/host/events"
	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/plan"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/host/telemetry"
	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/sdk"
	"github.com/google/uuid"
	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"
	"github.com/rs/zerolog"
)

// Version is Drover's version.
const Version = "0.1.0-dev"

// ErrNotLeader is returned by writes on a server that is not the leader.
var ErrNotLeader = errors.New("server: not the leader")

// Server is a Drover server.
type Server struct {
	cfg Config
	// acls keeps the ACLs tokens resolve to (ResolveToken).
	acls aclCache
	// keyringMu orders the leader's root key writes (variables.go);
	// rekeyKick wakes its re-encryption of variables after a full
	// rotation.
	keyringMu sync.Mutex
	rekeyKick chan struct{}
	// varLocks are the leases of the variable locks, while it leads.
	varLocks lockLeases
	// autopilot runs while this server leads (autopilot.go);
	// autopilotSeen is when each server last answered it.
	autopilot     atomic.Pointer[autopilot.Autopilot]
	autopilotSeen seenServers
	// applies is the newest log entry type this server applies, as it
	// tells the others (fsm.LastMessageType; lower in tests of gate.go).
	applies atomic.Uint32
	// upToDate remembers the servers known to apply every entry type
	// this one does (gate.go).
	upToDate upToDatePeers
	log      zerolog.Logger
	plugins  *runtime.Registry
	now      func() time.Time

	store     *state.Store
	fsm       *fsm.FSM
	raftLayer raftLayer
	// rpc, rpcHTTP and forwarded serve the RPC address of a clustered
	// server (cluster.go); nil otherwise.
	rpc       *rpcMux
	rpcHTTP   *http.Server
	forwarded atomic.Pointer[http.Handler]

	broker    *broker.Broker
	blocked   *blocked.Tracker
	plans     *plan.Queue
	applier   *plan.Applier
	evalBatch *evalBatcher

	heartbeats *heartbeats
	phases     *phaseTracker
	periodic   *periodicLauncher
	telemetry  *telemetry.Telemetry
	metrics    *metrics.Metrics
	events     *events.Broker // nil when the event stream is off

	mu           sync.Mutex
	shutdownOnce sync.Once
	shutdownErr  error
	leaderStop   context.CancelFunc
	leaderDone   sync.WaitGroup
	shutdown     context.CancelFunc
	done         sync.WaitGroup
	rngMu        sync.Mutex
	rng          *rand.Rand
	// dispatchMu serialises dispatches of parameterized jobs (their
	// idempotency tokens).
	dispatchMu sync.Mutex
	// restoreMu serialises operator snapshot restores.
	restoreMu sync.Mutex
	// cluster is the ID of the cluster this server belongs to (clusterid.go).
	cluster clusterIdentity
	// evalBudget bounds how fast each job's plugins create evals.
	evalBudget *evalBudget
}

// New creates a server and starts raft; in durable mode it opens the data
// dir and restores the state in it first (see the ErrDataDir errors).
// Plugins schedule the evaluations.
func New(cfg Config, plugins *runtime.Registry, log zerolog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	store, err := state.NewStore()
	if err != nil {
		return nil, err
	}
	tel, err := telemetry.New(cfg.Telemetry)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			tel.Close()
		}
	}()
	s := &Server{
		cfg: cfg, log: log, plugins: plugins, now: time.Now, store: store,
		plans: plan.NewQueue(), phases: newPhaseTracker(), telemetry: tel, metrics: tel.Metrics(),
		rng:        rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0)),
		evalBudget: newEvalBudget(),
		rekeyKick:  make(chan struct{}, 1),
	}
	s.applies.Store(uint32(fsm.LastMessageType))
	b, err := broker.New(cfg.Broker, nil, phaseObserver{s})
	if err != nil {
		return nil, err
	}
	s.broker = b
	s.blocked = blocked.New(b)
	s.fsm = fsm.New(store, s, log)
	s.fsm.SetClusterHook(s.learnClusterID)
	if cfg.EventBufferSize > 0 {
		s.events = events.New(cfg.EventBufferSize)
		s.fsm.SetPublisher(s.events)
	}
	s.applier = plan.NewApplier(s.plans, store, s, b, cfg.PlanLimits, s.now, nil, log)
	s.applier.Metrics = s.metrics
	s.evalBatch = newEvalBatcher(s)
	s.heartbeats = newHeartbeats(s)
	s.periodic = newPeriodicLauncher(s)
	if err := s.setupRaft(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.shutdown = cancel
	s.done.Add(2)
	go s.monitorLeadership(ctx)
	go s.emitStats(ctx)
	if s.rpc != nil {
		s.startRPC()
		if len(cfg.RetryJoin) > 0 || !s.inCluster() {
			// Until it is in a cluster, then watching that it stays.
			s.done.Add(1)
			go s.joinCluster(ctx)
		}
		// Followers schedule too: their workers take evals from the
		// leader's broker and submit plans to its queue.
		host := newRemoteHost(s)
		for i := 0; i < cfg.NumWorkers; i++ {
			w := newRemoteWorker(s, i, host)
			s.done.Add(1)
			go func() {
				defer s.done.Done()
				w.run(ctx)
			}()
		}
	}
	started = true
	return s, nil
}

// newID returns a random UUID for objects the server creates.
func newID() string { return uuid.NewString() }

// Store returns the state store (read through snapshots).
func (s *Server) Store() *state.Store { return s.store }

// Broker returns the evaluation broker.
func (s *Server) Broker() *broker.Broker { return s.broker }

// Blocked returns the blocked-evals tracker.
func (s *Server) Blocked() *blocked.Tracker { return s.blocked }

// Plugins returns the plugin registry.
func (s *Server) Plugins() *runtime.Registry { return s.plugins }

// Events returns the event stream's broker, or nil when it is off.
func (s *Server) Events() *events.Broker { return s.events }

// Telemetry returns the server's metrics.
func (s *Server) Telemetry() *telemetry.Telemetry { return s.telemetry }

// Config returns the server's configuration.
func (s *Server) Config() Config { return s.cfg }

// IsLeader reports whether this server leads.
func (s *Server) IsLeader() bool { return s.raftLayer.raft.State() == raft.Leader }

// RaftStats returns raft's own statistics (state, term, indexes, peers),
// as Nomad's /v1/agent/self shows them.
func (s *Server) RaftStats() map[string]string { return s.raftLayer.raft.Stats() }

// Leader returns the leader's address, or "" while there is none.
func (s *Server) Leader() string {
	addr, _ := s.raftLayer.raft.LeaderWithID()
	return string(addr)
}

// WaitForLeader blocks until this server leads and its leader duties run.
func (s *Server) WaitForLeader(ctx context.Context) error {
	for {
		s.mu.Lock()
		running := s.leaderStop != nil
		s.mu.Unlock()
		if running {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Shutdown stops leader duties and raft and closes the data dir; calling it
// again does nothing. The plugins' pools are left to the caller (the
// registry outlives the server in tests).
func (s *Server) Shutdown() error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.stop() })
	return s.shutdownErr
}

func (s *Server) stop() error {
	s.transferLeadership()
	s.shutdown()
	s.done.Wait()
	s.revokeLeadership()
	var errs []error
	if err := s.raftLayer.raft.Shutdown().Error(); err != nil {
		errs = append(errs, fmt.Errorf("server: raft shutdown: %w", err))
	}
	if c, ok := s.raftLayer.trans.(interface{ Close() error }); ok {
		_ = c.Close()
	}
	if s.rpc != nil {
		s.rpc.close() // first: the HTTP server waits for its Accept to end
		_ = s.rpcHTTP.Close()
	}
	s.closeRaftStore()
	s.telemetry.Close()
	return errors.Join(errs...)
}

// Snapshot forces a raft snapshot (tests, operators).
func (s *Server) Snapshot() error { return s.raftLayer.raft.Snapshot().Error() }

func (s *Server) monitorLeadership(ctx context.Context) {
	defer s.done.Done()
	ch := s.raftLayer.raft.LeaderCh()
	for {
		select {
		case <-ctx.Done():
			return
		case isLeader := <-ch:
			if isLeader {
				if err := s.establishLeadership(); err != nil {
					s.log.Error().Err(err).Msg("failed to establish leadership")
				}
			} else {
				s.revokeLeadership()
			}
		}
	}
}

var _ fsm.Notifier = (*Server)(nil)

// Committed implements fsm.Notifier: committed evals go to the broker
// (pending) or the blocked tracker (blocked); a successful eval retires its
// job's blocked eval; capacity changes unblock evals; job changes reach the
// periodic launcher. On a follower the broker and the tracker are off, and
// only the phase history is kept.
func (s *Server) Committed(c *fsm.Commit) {
	now := s.now()
	for _, e := range c.Evals {
		s.evalCommitted(e, now)
	}
	for _, id := range c.DeletedEvals {
		s.phases.forget(id)
		// A deleted blocked eval (eval delete) would otherwise stand for
		// its job in the tracker, and be run when capacity comes.
		s.blocked.Forget(id)
	}
	for _, class := range c.Classes {
		s.blocked.Unblock(class, c.Index)
	}
	if len(c.Jobs) > 0 {
		s.periodic.jobsChanged(c.Jobs)
	}
}

func (s *Server) evalCommitted(e *sdk.Evaluation, now time.Time) {
	s.phases.set(e.ID, e.Status, now)
	switch {
	case e.ShouldEnqueue():
		s.broker.Enqueue(e)
	case e.ShouldBlock():
		if tok, ok := s.broker.Outstanding(e.ID); ok {
			s.blocked.Reblock(e, tok)
		} else {
			s.blocked.Block(e)
		}
	case e.Status == sdk.EvalStatusComplete && len(e.FailedTGAllocs) == 0:
		s.blocked.Untrack(e.Namespace, e.JobID)
	}
}
