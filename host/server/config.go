package server

import (
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/drover-sched/drover/host/broker"
	"github.com/drover-sched/drover/host/events"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/host/telemetry"
	"github.com/drover-sched/drover/host/tlsutil"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/verify"
)

// Config configures a server.
type Config struct {
	// NodeName names this server in raft.
	NodeName string
	Region   string
	// Datacenter is the server's own datacenter (informational).
	Datacenter string
	// Dev keeps everything in memory.
	Dev bool
	// DataDir holds the raft log, snapshots and plugin caches (not Dev).
	DataDir string
	// NumWorkers is how many scheduling workers run; default: one per core.
	NumWorkers int
	// Broker configures the evaluation broker.
	Broker broker.Config
	// PlanLimits bound plans.
	PlanLimits verify.Limits
	// Telemetry says how metrics are kept (/v1/metrics).
	Telemetry telemetry.Config
	// EventBufferSize is how many committed entries the event stream
	// keeps for subscribers that start from an earlier index or fall
	// behind; 0 turns the event stream off.
	EventBufferSize int
	// MinHeartbeatTTL and MaxHeartbeatsPerSecond set node heartbeat TTLs as
	// Nomad does: TTL grows with the number of nodes so that the servers
	// see at most MaxHeartbeatsPerSecond.
	MinHeartbeatTTL        time.Duration
	MaxHeartbeatsPerSecond float64
	// HeartbeatGrace is added to a TTL before a node is marked down.
	HeartbeatGrace time.Duration
	// FailoverHeartbeatTTL is the TTL a new leader gives every node, so
	// nodes have time to find it before they are marked down.
	FailoverHeartbeatTTL time.Duration
	// FailedEvalFollowupBaseline and FailedEvalFollowupJitter delay the
	// follow-up of a failed eval by baseline + random(jitter).
	FailedEvalFollowupBaseline time.Duration
	FailedEvalFollowupJitter   time.Duration
	// FailedEvalUnblockInterval is how often evals blocked after running
	// out of plan attempts (max-plan-attempts) are retried.
	FailedEvalUnblockInterval time.Duration
	// EvalGCInterval, JobGCInterval, NodeGCInterval and
	// DeploymentGCInterval are how often the leader creates the core
	// scheduler's eval-gc, job-gc, node-gc and deployment-gc evals, as
	// Nomad's leader does (zero: never); only JobGCInterval is an agent
	// setting (job_gc_interval), as in Nomad. Thresholds are how old
	// objects must be to be collected. BatchEvalGCThreshold holds batch
	// jobs' evals in eval GC.
	EvalGCInterval        time.Duration
	JobGCInterval         time.Duration
	NodeGCInterval        time.Duration
	DeploymentGCInterval  time.Duration
	EvalGCThreshold       time.Duration
	BatchEvalGCThreshold  time.Duration
	JobGCThreshold        time.Duration
	NodeGCThreshold       time.Duration
	DeploymentGCThreshold time.Duration
	// RaftApplyTimeout bounds one raft apply.
	RaftApplyTimeout time.Duration
	// SnapshotThreshold and SnapshotInterval tune raft snapshots; raft
	// keeps RaftTrailingLogs entries behind a snapshot.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	RaftTrailingLogs  uint64

	// RPCAddr (host:port) is where the server listens for the other
	// servers of its cluster: raft, and the API requests they forward to
	// the leader. Empty keeps raft in memory: a cluster of one.
	RPCAddr string
	// TLS, when it has RPC on, makes the RPC port speak mutual TLS (the
	// agent's tls block): see rpcmux.go.
	TLS *tlsutil.TLS
	// RPCHandshakeTimeout bounds how long a new connection to the RPC
	// port may take to send its first byte and, when that byte starts TLS,
	// again to finish the TLS handshake and send the byte within it (the
	// agent's limits block's rpc_handshake_timeout, Nomad's, 5s); 0: no
	// bound.
	RPCHandshakeTimeout time.Duration
	// RPCMaxConnsPerClient is how many connections one IP address may
	// hold open to the RPC port at once (rpc_max_conns_per_client, 100);
	// one more is closed as it comes. 0: no limit.
	RPCMaxConnsPerClient int
	// RPCAdvertise is the address the other servers reach RPCAddr at
	// (default: RPCAddr, which must then name an interface).
	RPCAdvertise string
	// BootstrapExpect is how many servers form a new cluster: it is
	// bootstrapped once exactly that many, none yet in a cluster, know
	// each other. Without RetryJoin, 0 or 1 is this server alone, at once;
	// with RetryJoin, 0 only joins an existing cluster.
	BootstrapExpect int
	// RetryJoin lists other servers' RPC addresses; a server not yet in a
	// cluster asks them every RetryInterval until it is.
	RetryJoin     []string
	RetryInterval time.Duration
	// JobMaxSourceSize is the largest job submission (its source and
	// variables) kept with a job version, in bytes; a larger one is
	// dropped with a warning and the job still registered, as in Nomad.
	JobMaxSourceSize int
	// DefaultSchedulerConfig is the scheduler configuration a cluster
	// starts with (nil: Nomad's default); the first leader writes it.
	DefaultSchedulerConfig *sdk.SchedulerConfiguration

	// EnableDebug serves the Go profiler (/v1/agent/pprof) to requests of
	// a server without ACLs (the agent's enable_debug); with ACLs it is
	// served to tokens with agent write, whatever this says, as Nomad's.
	EnableDebug bool

	// ACLEnabled turns ACLs on (the agent's acl { enabled = true }): the
	// ACL endpoints (acl.go) answer, and refuse with "ACL support
	// disabled" otherwise, as Nomad's.
	ACLEnabled bool
	// ACLTokenMinExpirationTTL and ACLTokenMaxExpirationTTL bound the
	// expiration TTL a token may be created with (Nomad's acl block's
	// token_min_expiration_ttl and token_max_expiration_ttl: 1m and 24h).
	ACLTokenMinExpirationTTL time.Duration
	ACLTokenMaxExpirationTTL time.Duration
	// ACLTokenGCInterval is how often the leader deletes expired ACL
	// tokens (Nomad's ACLTokenExpirationGCInterval, 5m; zero: never).
	ACLTokenGCInterval time.Duration

	// Search bounds the fuzzy search API (the agent's server { search {} }).
	Search SearchConfig

	// Autopilot is the autopilot configuration until an operator writes
	// one (the agent's autopilot block; Nomad's defaults).
	Autopilot state.AutopilotConfig
	// AutopilotFailedAfter is how long a server of the raft configuration
	// may not answer the leader before the autopilot takes it as failed
	// (and, with cleanup_dead_servers, removes it); a server without a
	// leader that long asks to join again, in case it was removed while
	// away. Nomad learns of failures from its gossip; Drover has none.
	AutopilotFailedAfter time.Duration
	// AutopilotInterval is how often the autopilot looks at the servers
	// and acts (0: raft-autopilot's defaults, 2 s and 10 s).
	AutopilotInterval time.Duration
}

// SearchConfig is what the fuzzy search API (/v1/search/fuzzy) may cost a
// request, as Nomad's server search block: its defaults are Nomad's.
type SearchConfig struct {
	// FuzzyEnabled serves fuzzy search; without it the endpoint refuses
	// every request, which Nomad's web UI takes as fuzzy search missing.
	FuzzyEnabled bool
	// LimitQuery bounds the objects examined per context (those the
	// token may see), and LimitResults the matches answered per context;
	// either reached marks the context truncated.
	LimitQuery   int
	LimitResults int
	// MinTermLength is the shortest text searched for, in bytes.
	MinTermLength int
}

// DefaultSearchConfig returns Nomad's defaults.
func DefaultSearchConfig() SearchConfig {
	return SearchConfig{FuzzyEnabled: true, LimitQuery: 20, LimitResults: 100, MinTermLength: 2}
}

// DefaultConfig returns Nomad's defaults.
func DefaultConfig() Config {
	gc := sdk.DefaultGCThresholds()
	return Config{
		NodeName:                   "drover-server",
		Region:                     "global",
		Datacenter:                 "dc1",
		NumWorkers:                 runtime.NumCPU(),
		Broker:                     broker.DefaultConfig(),
		PlanLimits:                 verify.DefaultLimits(),
		Telemetry:                  telemetry.DefaultConfig(),
		EventBufferSize:            events.DefaultSize,
		MinHeartbeatTTL:            10 * time.Second,
		MaxHeartbeatsPerSecond:     50,
		HeartbeatGrace:             10 * time.Second,
		FailoverHeartbeatTTL:       5 * time.Minute,
		FailedEvalFollowupBaseline: time.Minute,
		FailedEvalFollowupJitter:   5 * time.Minute,
		FailedEvalUnblockInterval:  time.Minute,
		EvalGCInterval:             5 * time.Minute,
		JobGCInterval:              5 * time.Minute,
		NodeGCInterval:             5 * time.Minute,
		DeploymentGCInterval:       5 * time.Minute,
		EvalGCThreshold:            gc.Eval,
		BatchEvalGCThreshold:       gc.BatchEval,
		JobGCThreshold:             gc.Job,
		NodeGCThreshold:            gc.Node,
		DeploymentGCThreshold:      gc.Deployment,
		RaftApplyTimeout:           30 * time.Second,
		SnapshotThreshold:          8192,
		SnapshotInterval:           2 * time.Minute,
		RaftTrailingLogs:           10240,
		RetryInterval:              5 * time.Second,
		RPCHandshakeTimeout:        5 * time.Second,
		RPCMaxConnsPerClient:       100,
		JobMaxSourceSize:           1_000_000,
		ACLTokenMinExpirationTTL:   time.Minute,
		ACLTokenMaxExpirationTTL:   24 * time.Hour,
		ACLTokenGCInterval:         5 * time.Minute,
		Search:                     DefaultSearchConfig(),
		Autopilot:                  DefaultAutopilotConfig(),
		AutopilotFailedAfter:       30 * time.Second,
	}
}

// Joins reports whether the server looks for other servers to form or join
// a cluster with.
func (c Config) Joins() bool { return c.BootstrapExpect > 1 || len(c.RetryJoin) > 0 }

// Validate checks the configuration.
func (c Config) Validate() error {
	if err := c.Broker.Validate(); err != nil {
		return err
	}
	if d := c.DefaultSchedulerConfig; d != nil {
		if err := normalizeSchedulerConfig(new(*d)); err != nil {
			return fmt.Errorf("server: default scheduler configuration: %w", err)
		}
	}
	switch {
	case !c.Dev && c.DataDir == "":
		return fmt.Errorf("server: a data dir is required outside dev mode")
	case c.NumWorkers < 0:
		return fmt.Errorf("server: workers must not be negative, got %d", c.NumWorkers)
	case c.NodeName == "":
		return fmt.Errorf("server: node name is required")
	case c.PlanLimits.MaxAllocs <= 0:
		return fmt.Errorf("server: plan allocation limit must be positive")
	case c.MinHeartbeatTTL <= 0 || c.MaxHeartbeatsPerSecond <= 0:
		return fmt.Errorf("server: heartbeat TTL and rate must be positive")
	case c.HeartbeatGrace < 0 || c.FailoverHeartbeatTTL < 0:
		return fmt.Errorf("server: heartbeat grace and failover TTL must not be negative")
	case c.FailedEvalFollowupBaseline < 0 || c.FailedEvalFollowupJitter < 0:
		return fmt.Errorf("server: failed eval follow-up delays must not be negative")
	case c.FailedEvalUnblockInterval <= 0:
		return fmt.Errorf("server: failed eval unblock interval must be positive")
	case c.EvalGCInterval < 0 || c.JobGCInterval < 0 || c.NodeGCInterval < 0 || c.DeploymentGCInterval < 0:
		return fmt.Errorf("server: GC intervals must not be negative")
	case c.EvalGCThreshold < 0 || c.BatchEvalGCThreshold < 0 || c.JobGCThreshold < 0 || c.NodeGCThreshold < 0 || c.DeploymentGCThreshold < 0:
		return fmt.Errorf("server: GC thresholds must not be negative")
	case c.RaftApplyTimeout <= 0:
		return fmt.Errorf("server: raft apply timeout must be positive")
	case c.SnapshotThreshold == 0 || c.SnapshotInterval <= 0:
		return fmt.Errorf("server: raft snapshot threshold and interval must be positive")
	case c.JobMaxSourceSize < 0:
		return fmt.Errorf("server: job_max_source_size must not be negative")
	case c.ACLTokenMinExpirationTTL < 0 || c.ACLTokenMaxExpirationTTL < 0 || c.ACLTokenGCInterval < 0:
		return fmt.Errorf("server: ACL token expiration TTLs and GC interval must not be negative")
	case c.ACLTokenMinExpirationTTL > c.ACLTokenMaxExpirationTTL:
		return fmt.Errorf("server: the ACL token minimum expiration TTL (%s) is more than the maximum (%s)",
			c.ACLTokenMinExpirationTTL, c.ACLTokenMaxExpirationTTL)
	case c.RPCHandshakeTimeout < 0:
		return fmt.Errorf("server: rpc_handshake_timeout must not be negative, got %s", c.RPCHandshakeTimeout)
	case c.RPCMaxConnsPerClient < 0:
		return fmt.Errorf("server: rpc_max_conns_per_client must not be negative, got %d", c.RPCMaxConnsPerClient)
	case c.BootstrapExpect < 0:
		return fmt.Errorf("server: bootstrap_expect must not be negative, got %d", c.BootstrapExpect)
	case c.Search.LimitQuery < 1 || c.Search.LimitResults < 1 || c.Search.MinTermLength < 1:
		return fmt.Errorf("server: search limit_query, limit_results and min_term_length must be at least 1, got %d, %d and %d",
			c.Search.LimitQuery, c.Search.LimitResults, c.Search.MinTermLength)
	case c.AutopilotFailedAfter <= 0 || c.AutopilotInterval < 0:
		return fmt.Errorf("server: the autopilot's failure timeout must be positive and its interval not negative, got %s and %s",
			c.AutopilotFailedAfter, c.AutopilotInterval)
	case c.Autopilot.LastContactThreshold < 0 || c.Autopilot.ServerStabilizationTime < 0:
		return fmt.Errorf("server: autopilot last_contact_threshold and server_stabilization_time must not be negative")
	case c.RPCAddr == "" && (c.BootstrapExpect > 1 || len(c.RetryJoin) > 0):
		return fmt.Errorf("server: joining other servers (bootstrap_expect > 1, retry_join) needs an RPC address")
	case c.RPCAddr != "" && c.Dev:
		return fmt.Errorf("server: a dev server runs alone: it takes no RPC address")
	case c.RPCAddr != "" && c.RetryInterval <= 0:
		return fmt.Errorf("server: retry interval must be positive")
	case c.BootstrapExpect > 1 && len(c.RetryJoin) == 0:
		return fmt.Errorf("server: bootstrap_expect = %d needs retry_join addresses to find the other servers", c.BootstrapExpect)
	case c.BootstrapExpect == 1 && len(c.RetryJoin) > 0:
		return fmt.Errorf("server: bootstrap_expect = 1 makes a cluster of this server alone, which cannot also join others: " +
			"give every server the cluster's size, or leave bootstrap_expect out on a server that only joins")
	case c.RPCAdvertise != "" && c.RPCAddr == "":
		return fmt.Errorf("server: an RPC advertise address needs an RPC address to listen on")
	}
	others := map[string]bool{}
	for _, a := range c.RetryJoin {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("server: retry_join address %q is not host:port: %v", a, err)
		}
		if a != c.RPCAddr && a != c.RPCAdvertise {
			others[a] = true
		}
	}
	if c.BootstrapExpect > len(others)+1 {
		return fmt.Errorf("server: bootstrap_expect = %d, but retry_join names only %d other servers", c.BootstrapExpect, len(others))
	}
	return nil
}
