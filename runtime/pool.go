package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-sched/drover/sdk/abi"
	"github.com/rs/zerolog"
)

// PoolConfig sizes and recycles a plugin's instances.
type PoolConfig struct {
	// Instances is how many instances run at most (one per worker).
	Instances int
	// MaxEvals recycles an instance after this many evals (0: never).
	MaxEvals int
	// MaxMemoryBytes recycles an instance whose memory grew past this
	// (0: never); only for instances that report their size.
	MaxMemoryBytes uint64
	// IdleTimeout bounds an instance's work between evals (Idler; 0: 30
	// seconds): an instance that enforces deadlines and is still busy then
	// is stopped and replaced.
	IdleTimeout time.Duration
}

// DefaultPoolConfig returns a pool of n instances recycled after 10,000
// evals or past 1 GiB.
func DefaultPoolConfig(n int) PoolConfig {
	return PoolConfig{Instances: max(n, 1), MaxEvals: 10_000, MaxMemoryBytes: 1 << 30}
}

// slot is one place in the pool: an instance (nil until needed) and the
// index its mirror is at.
type slot struct {
	inst  Instance
	index uint64
	evals int
	// kept is the instance's last wholly committed plan, which it keeps
	// until its next sync (ABI 1.2).
	kept *keptPlan
}

// Plugin is a pool of instances of one plugin.
//
// A plugin can be replaced while evals run on it (Retire): evals in flight
// finish on the old instances, later calls are forwarded to the successor,
// and the old instances close once the last eval is done.
type Plugin struct {
	factory Factory
	info    abi.Info
	cfg     PoolConfig
	log     zerolog.Logger

	slots chan *slot

	mu       sync.Mutex
	closed   bool
	next     *Plugin // set by Retire
	inflight int
	idle     chan struct{} // closed when closed and nothing is in flight
	live     map[*slot]bool

	stats Stats
}

// Stats counts what a plugin did.
type Stats struct {
	Evals, Failures, Recycled, FullSyncs, DeltaSyncs atomic.Int64
	// KeptPlans counts syncs that left out a plan's allocations because
	// the instance kept them (ABI 1.2, abi.StateSync.Kept).
	KeptPlans atomic.Int64
	// JobStatuses counts jobs sent as their status alone (ABI 1.3,
	// abi.StateSync.JobStatuses).
	JobStatuses atomic.Int64
}

// NewPlugin returns a pool over factory. Instances start lazily.
func NewPlugin(factory Factory, cfg PoolConfig, log zerolog.Logger) *Plugin {
	cfg.Instances = max(cfg.Instances, 1)
	p := &Plugin{factory: factory, info: factory.Info(), cfg: cfg, log: log,
		slots: make(chan *slot, cfg.Instances), live: map[*slot]bool{}, idle: make(chan struct{})}
	for i := 0; i < cfg.Instances; i++ {
		p.slots <- &slot{}
	}
	return p
}

// Info returns the plugin's info.
func (p *Plugin) Info() abi.Info { return p.info }

// Stats returns the plugin's counters.
func (p *Plugin) Stats() *Stats { return &p.stats }

// acquire counts a call in on p, or on p's successor if p was retired.
func (p *Plugin) acquire() (*Plugin, error) {
	for {
		p.mu.Lock()
		if next := p.next; next != nil {
			p.mu.Unlock()
			p = next
			continue
		}
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		p.inflight++
		p.mu.Unlock()
		return p, nil
	}
}

// release counts a call out.
func (p *Plugin) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight--
	if p.closed && p.inflight == 0 {
		close(p.idle)
	}
}

// Process runs one evaluation on a free instance (of the successor, if this
// plugin was retired). It returns once the eval's answer is in; an
// instance with idle work (Idler) does it afterwards, before its next eval.
func (p *Plugin) Process(ctx context.Context, call *Call) error {
	p, err := p.acquire()
	if err != nil {
		return err
	}
	var s *slot
	select {
	case s = <-p.slots:
	case <-ctx.Done():
		p.release()
		return fmt.Errorf("plugin[%s] eval[%s]: waiting for a free instance: %w", p.info.Name, call.Eval.ID, ctx.Err())
	}
	err = p.process(ctx, s, call)
	if i, ok := s.inst.(Idler); ok {
		go p.idleThenPut(i, s)
	} else {
		p.put(s)
	}
	return err
}

// Settle waits until every instance is free: no eval in flight and no
// idle work left (a benchmark's warm-up, whose collection is setup, not
// the timed evals' work). It returns ctx's error if that comes first.
func (p *Plugin) Settle(ctx context.Context) error {
	return p.holdAll(ctx, func(*slot) {})
}

// Resync makes every instance's next eval start with a full sync, once
// the evals in flight and the idle work are done. It is for a caller
// that hands the plugin another state source whose indexes mean other
// changes (a benchmark's next cluster): a delta from the old sync point
// would be wrong there. The instances themselves stay, warm.
func (p *Plugin) Resync(ctx context.Context) error {
	return p.holdAll(ctx, func(s *slot) { s.index, s.kept = 0, nil })
}

// holdAll takes every slot, waiting for each to be free, applies fn to
// each, and gives them back. It returns ctx's error if that comes first,
// having applied fn to none.
func (p *Plugin) holdAll(ctx context.Context, fn func(*slot)) error {
	held := make([]*slot, 0, p.cfg.Instances)
	defer func() {
		for _, s := range held {
			p.slots <- s
		}
	}()
	for len(held) < p.cfg.Instances {
		select {
		case s := <-p.slots:
			held = append(held, s)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, s := range held {
		fn(s)
	}
	return nil
}

// put returns a slot to the pool and counts its call out.
func (p *Plugin) put(s *slot) {
	p.slots <- s
	p.release()
}

// idleThenPut does an instance's idle work, then returns its slot. The
// call it follows still counts as in flight, so Close and Retire wait for
// it.
func (p *Plugin) idleThenPut(i Idler, s *slot) {
	defer p.put(s)
	timeout := p.cfg.IdleTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := i.Idle(ctx); err != nil {
		p.log.Warn().Err(err).Str("plugin", p.info.Name).Msg("plugin instance failed between evals")
		p.recycle(context.Background(), s, "idle call failed")
	}
}

func (p *Plugin) process(ctx context.Context, s *slot, call *Call) error {
	p.stats.Evals.Add(1)
	if pr, ok := s.inst.(Prober); ok && !pr.Alive() {
		p.log.Warn().Str("plugin", p.info.Name).Msg("plugin instance ended between evals; starting another")
		p.recycle(ctx, s, "ended between evals")
	}
	if s.inst == nil {
		inst, err := p.factory.NewInstance(ctx)
		if err != nil {
			p.stats.Failures.Add(1)
			return fmt.Errorf("%w: plugin[%s]: start instance: %v", ErrPluginFailed, p.info.Name, err)
		}
		s.inst, s.index, s.evals, s.kept = inst, 0, 0, nil
		p.mu.Lock()
		p.live[s] = true
		p.mu.Unlock()
	}
	err := p.run(ctx, s, call, false)
	if err != nil {
		p.stats.Failures.Add(1)
	}
	if call.Scratch {
		s.index, s.kept = 0, nil
	}
	s.evals++
	if s.inst != nil && p.shouldRecycle(s) {
		p.recycle(ctx, s, "limit reached")
	}
	return err
}

func (p *Plugin) shouldRecycle(s *slot) bool {
	if p.cfg.MaxEvals > 0 && s.evals >= p.cfg.MaxEvals {
		return true
	}
	if sz, ok := s.inst.(Sizer); ok && p.cfg.MaxMemoryBytes > 0 && sz.MemoryBytes() > p.cfg.MaxMemoryBytes {
		return true
	}
	return false
}

func (p *Plugin) recycle(ctx context.Context, s *slot, why string) {
	p.stats.Recycled.Add(1)
	p.log.Debug().Str("plugin", p.info.Name).Str("why", why).Msg("recycling plugin instance")
	_ = s.inst.Close(ctx)
	p.mu.Lock()
	delete(p.live, s)
	p.mu.Unlock()
	s.inst, s.index, s.evals, s.kept = nil, 0, 0, nil
}

// run does one request on s; on an out-of-sync answer it retries once with
// a full sync.
func (p *Plugin) run(ctx context.Context, s *slot, call *Call, full bool) error {
	from := s.index
	if full {
		from = 0
	}
	sync := syncFor(call.State, from, p.info, &s.kept, &p.stats)
	if sync.Full {
		p.stats.FullSyncs.Add(1)
	} else {
		p.stats.DeltaSyncs.Add(1)
	}
	req := &abi.ProcessRequest{Eval: call.Eval, EvalToken: call.Token, Sync: sync,
		Now: call.Now.UnixNano(), Config: call.Config, HostABI: uint32(abi.Current)}
	reqBytes, err := req.MarshalMsg(nil)
	if err != nil {
		return fmt.Errorf("runtime: encode request: %w", err)
	}
	d := &dispatcher{ctx: ctx, call: call, index: sync.Index, info: p.info, kept: &s.kept, stats: &p.stats}
	out, err := s.inst.Process(ctx, reqBytes, d.host)
	if err != nil {
		p.recycle(ctx, s, "instance failed")
		return fmt.Errorf("%w: plugin[%s] eval[%s]: %v", ErrPluginFailed, p.info.Name, call.Eval.ID, err)
	}
	var resp abi.ProcessResponse
	if err := abi.Decode(out, &resp); err != nil {
		p.recycle(ctx, s, "undecodable response")
		return fmt.Errorf("%w: plugin[%s] eval[%s]: decode response: %v", ErrPluginFailed, p.info.Name, call.Eval.ID, err)
	}
	s.index = resp.Index
	if resp.UpdateEval != nil {
		// The plugin's last eval update, deferred to its answer (ABI 1.4):
		// applied first, as the call it stands for would have been.
		if err := call.Planner.UpdateEval(ctx, resp.UpdateEval); err != nil {
			return fmt.Errorf("plugin[%s] eval[%s]: %w", p.info.Name, call.Eval.ID, err)
		}
	}
	switch resp.Code {
	case abi.CodeOK:
		return nil
	case abi.CodeOutOfSync:
		if full {
			p.recycle(ctx, s, "out of sync after a full sync")
			return fmt.Errorf("%w: plugin[%s]: out of sync after a full sync: %s", ErrPluginFailed, p.info.Name, quoted(resp.Message))
		}
		return p.run(ctx, s, call, true)
	}
	if d.err != nil {
		// The host side failed a planner call; that is the root cause.
		return fmt.Errorf("plugin[%s] eval[%s]: %w", p.info.Name, call.Eval.ID, d.err)
	}
	return fmt.Errorf("%w: plugin[%s] eval[%s]: %w", ErrPluginFailed, p.info.Name, call.Eval.ID, abi.Err(resp.Code, quoted(resp.Message)))
}

// quoted bounds a plugin's own message where the host quotes it in an
// error: the agent logs that error with every delivery of the eval, and
// the message's size is the plugin's to choose (64 MiB made as many
// bytes of log a line). Cut as one of its log records is.
func quoted(msg string) string {
	budget := maxOutputLine
	if cut, ok := bounded(msg, &budget); ok {
		return fmt.Sprintf("%s... (%d bytes more)", cut, len(msg)-len(cut))
	}
	return msg
}

// Close waits for the evals in flight, then closes every instance and the
// factory. Later calls fail with ErrClosed.
func (p *Plugin) Close(ctx context.Context) error { return p.shutdown(ctx, nil) }

// Retire hands p's future calls to next, waits for the evals in flight on
// p, then closes p's instances and factory. The registry's Replace returns
// the entry to retire.
func (p *Plugin) Retire(ctx context.Context, next *Plugin) error { return p.shutdown(ctx, next) }

func (p *Plugin) shutdown(ctx context.Context, next *Plugin) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed, p.next = true, next
	if p.inflight == 0 {
		close(p.idle)
	}
	p.mu.Unlock()
	select {
	case <-p.idle:
	case <-ctx.Done():
		// Do not leak the instances (go-plugin processes): close them once
		// the evals in flight end, whenever that is.
		go func() {
			<-p.idle
			_ = p.closeInstances(context.Background())
		}()
		return fmt.Errorf("runtime: plugin[%s]: evals still in flight: %w", p.info.Name, ctx.Err())
	}
	return p.closeInstances(ctx)
}

// closeInstances closes every instance and the factory; no eval may be in
// flight.
func (p *Plugin) closeInstances(ctx context.Context) error {
	p.mu.Lock()
	live := make([]*slot, 0, len(p.live))
	for s := range p.live {
		live = append(live, s)
	}
	p.live = map[*slot]bool{}
	p.mu.Unlock()
	for _, s := range live {
		if s.inst != nil {
			_ = s.inst.Close(ctx)
			s.inst = nil
		}
	}
	return p.factory.Close(ctx)
}
