package sdk

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scheduler is a scheduling policy. The host calls Process once per
// evaluation, never concurrently on one instance. Process returns an error
// only when something broke (the host then retries the eval); an eval that
// cannot place everything is a result, written into the eval (FailedTGAllocs,
// a blocked eval), not an error.
type Scheduler interface {
	Process(ctx *Context, eval *Evaluation) error
}

// ConfigChecker is implemented by a scheduler that checks its
// configuration (Context.Config, the config map of its plugin block in
// the agent's configuration) when the host loads it: at the agent's
// start, when a replaced plugin file is picked up, and in `drover plugin
// validate`. A configuration it refuses refuses the load, with its error's
// text: the agent does not start, or a replacement is refused and the
// running version stays. A scheduler that does not implement it accepts
// any configuration.
//
// The host asks from ABI 1.7 (docs/abi.md), on an instance that processes
// no eval: CheckConfig must not rely on being called before Process, nor
// keep anything for it, and an older host never calls it. It should only
// look at the map (no planner, no state) and answer at once.
type ConfigChecker interface {
	CheckConfig(config map[string]string) error
}

// CheckConfigKeys returns an error that names the keys of config that are
// not among known, or nil. A ConfigChecker starts with it: a key the
// scheduler does not read is nearly always a typo, which would otherwise
// be ignored without a word.
func CheckConfigKeys(config map[string]string, known ...string) error {
	var unknown []string
	for k := range config {
		if !slices.Contains(known, k) {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	takes := "it takes none"
	if len(known) > 0 {
		quoted := make([]string, len(known))
		for i, k := range known {
			quoted[i] = strconv.Quote(k)
		}
		takes = "it takes " + strings.Join(quoted, ", ")
	}
	noun := "key"
	if len(unknown) > 1 {
		noun = "keys"
	}
	return fmt.Errorf("unknown configuration %s %s (%s)", noun, strings.Join(unknown, ", "), takes)
}

// SchedulerFunc adapts a function to Scheduler.
type SchedulerFunc func(ctx *Context, eval *Evaluation) error

// Process calls f.
func (f SchedulerFunc) Process(ctx *Context, eval *Evaluation) error { return f(ctx, eval) }

// Context is what a scheduler gets for one evaluation.
type Context struct {
	// State is a consistent, read-only view at the eval's snapshot index.
	// After a partially committed plan it has been refreshed to the plan
	// result's RefreshIndex.
	State State
	// Planner is the only way to change anything.
	Planner Planner
	// Logger writes to the host's log, tagged with the plugin and eval.
	Logger *slog.Logger
	// Now is the host's time when the eval was handed over. Decision code
	// uses it instead of the clock, so that a decision can be replayed.
	Now time.Time
	// Config is the plugin's configuration from the agent config.
	Config map[string]string

	seed uint64
	pcg  *rand.PCG // rng's source, called directly by NewID
	rng  *rand.Rand
}

// NewContext returns a context whose random source is seeded from the eval
// ID and the index of state: the same eval over the same state decides the
// same way, and an eval processed again at a later index (a blocked eval
// unblocked once more, an eval delivered again after a commit) draws
// other IDs than the allocations and evals it created before.
func NewContext(state State, planner Planner, logger *slog.Logger, now time.Time, config map[string]string, evalID string) *Context {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var index uint64
	if state != nil {
		index = state.Index()
	}
	return &Context{State: state, Planner: planner, Logger: logger, Now: now, Config: config, seed: Seed(evalID, index)}
}

// Rand returns the context's deterministic random source.
func (c *Context) Rand() *rand.Rand {
	if c.rng == nil {
		c.pcg = rand.NewPCG(c.seed, c.seed^0x9e3779b97f4a7c15)
		c.rng = rand.New(c.pcg)
	}
	return c.rng
}

// Seed derives a random seed from an eval ID and a state index.
func Seed(evalID string, index uint64) uint64 {
	h := fnv.New64a()
	h.Write([]byte(evalID))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], index)
	h.Write(b[:])
	return h.Sum64()
}

// State is a read-only view of the cluster at one index. Slices and objects
// it returns are shared: never modify them.
type State interface {
	// Index is the state index the view reflects.
	Index() uint64
	// Nodes returns every node, ordered by ID.
	Nodes() []*Node
	Node(id string) *Node
	// NodeUsage is what the node's allocations hold, kept up to date as
	// allocations change rather than summed on demand: all but those the
	// node reports finished, so that one the servers stopped holds its
	// resources until its tasks have stopped.
	NodeUsage(nodeID string) Usage
	Job(namespace, id string) *Job
	// JobVersion returns a version of a job that allocations still run.
	JobVersion(namespace, id string, version uint64) *Job
	Alloc(id string) *Allocation
	// AllocsByJob returns the job's allocations, terminal ones included.
	AllocsByJob(namespace, jobID string) []*Allocation
	// AllocsByNode returns the node's allocations, terminal ones included.
	AllocsByNode(nodeID string) []*Allocation
	Deployment(id string) *Deployment
	// LatestDeployment returns the job's most recently created deployment.
	LatestDeployment(namespace, jobID string) *Deployment
	SchedulerConfig() *SchedulerConfiguration
	// CSIVolume returns a CSI volume, with its claims, nil if there is
	// none. A host older than ABI 1.11 sends none.
	CSIVolume(namespace, id string) *CSIVolume
}

// Planner is how a scheduler changes the cluster. Methods are called from
// the scheduler's goroutine only.
type Planner interface {
	// SubmitPlan hands a plan to the host's plan queue and waits for the
	// applier's verdict. When only part of it was committed,
	// result.RefreshIndex is set and the context's State has already been
	// refreshed to it, so the scheduler can simply retry.
	SubmitPlan(plan *Plan) (*PlanResult, error)
	// UpdateEval writes the eval's status (complete, failed, ...).
	UpdateEval(eval *Evaluation) error
	// CreateEval creates a follow-up eval (rolling-update, blocked, ...).
	CreateEval(eval *Evaluation) error
	// ReblockEval puts a blocked eval that still cannot place back in the
	// blocked tracker, updated.
	ReblockEval(eval *Evaluation) error
}

// NewID returns a new UUID (version 4 layout) drawn from the context's
// deterministic random source, so replaying an eval over the same state
// yields the same IDs.
func (c *Context) NewID() string {
	c.Rand()
	// The source is called directly (Rand.Uint64 only forwards to it) and
	// the digits come from a table: a scheduler draws an ID per placement,
	// and the byte loop this replaces was most of NewID's 8.5% of a wasm
	// system-1 eval's guest samples.
	hi, lo := c.pcg.Uint64(), c.pcg.Uint64()
	hi = hi&^(0xf0<<48) | 0x40<<48 // version 4 (the seventh byte)
	lo = lo&^0xc0 | 0x80           // variant 10 (the ninth byte)
	var out [36]byte
	out[8], out[13], out[18], out[23] = '-', '-', '-', '-'
	for i := range 8 {
		h, l := hexPairs[byte(hi>>(8*i))], hexPairs[byte(lo>>(8*i))]
		at, bt := idDigits[i], idDigits[8+i]
		out[at], out[at+1], out[bt], out[bt+1] = h[0], h[1], l[0], l[1]
	}
	return string(out[:])
}

// idDigits is where each of a UUID's 16 bytes is written in its text:
// the first draw's bytes, lowest first, then the second's.
var idDigits = [16]uint8{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

// hexPairs holds each byte's two lowercase hex digits.
var hexPairs = func() (t [256][2]byte) {
	const hex = "0123456789abcdef"
	for v := range t {
		t[v] = [2]byte{hex[v>>4], hex[v&0x0f]}
	}
	return t
}()
