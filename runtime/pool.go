package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

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
}

// Plugin is a pool of instances of one plugin.
type Plugin struct {
	factory Factory
	info    abi.Info
	cfg     PoolConfig
	log     zerolog.Logger

	slots  chan *slot
	closed atomic.Bool
	mu     sync.Mutex // guards the set of live instances on close
	live   map[*slot]bool

	stats Stats
}

// Stats counts what a plugin did.
type Stats struct {
	Evals, Failures, Recycled, FullSyncs, DeltaSyncs atomic.Int64
}

// NewPlugin returns a pool over factory. Instances start lazily.
func NewPlugin(factory Factory, cfg PoolConfig, log zerolog.Logger) *Plugin {
	cfg.Instances = max(cfg.Instances, 1)
	p := &Plugin{factory: factory, info: factory.Info(), cfg: cfg, log: log,
		slots: make(chan *slot, cfg.Instances), live: map[*slot]bool{}}
	for i := 0; i < cfg.Instances; i++ {
		p.slots <- &slot{}
	}
	return p
}

// Info returns the plugin's info.
func (p *Plugin) Info() abi.Info { return p.info }

// Stats returns the plugin's counters.
func (p *Plugin) Stats() *Stats { return &p.stats }

// Process runs one evaluation on a free instance.
func (p *Plugin) Process(ctx context.Context, call *Call) error {
	if p.closed.Load() {
		return ErrClosed
	}
	var s *slot
	select {
	case s = <-p.slots:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { p.slots <- s }()
	if p.closed.Load() {
		return ErrClosed
	}
	p.stats.Evals.Add(1)
	if s.inst == nil {
		inst, err := p.factory.NewInstance(ctx)
		if err != nil {
			p.stats.Failures.Add(1)
			return fmt.Errorf("%w: plugin[%s]: start instance: %v", ErrPluginFailed, p.info.Name, err)
		}
		s.inst, s.index, s.evals = inst, 0, 0
		p.mu.Lock()
		p.live[s] = true
		p.mu.Unlock()
	}
	err := p.run(ctx, s, call, false)
	if err != nil {
		p.stats.Failures.Add(1)
	}
	if call.Scratch {
		s.index = 0
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
	s.inst, s.index, s.evals = nil, 0, 0
}

// run does one request on s; on an out-of-sync answer it retries once with
// a full sync.
func (p *Plugin) run(ctx context.Context, s *slot, call *Call, full bool) error {
	from := s.index
	if full {
		from = 0
	}
	sync := call.State.Sync(from)
	if sync.Full {
		p.stats.FullSyncs.Add(1)
	} else {
		p.stats.DeltaSyncs.Add(1)
	}
	req := &abi.ProcessRequest{Eval: call.Eval, EvalToken: call.Token, Sync: sync,
		Now: call.Now.UnixNano(), Config: call.Config}
	reqBytes, err := req.MarshalMsg(nil)
	if err != nil {
		return fmt.Errorf("runtime: encode request: %w", err)
	}
	d := &dispatcher{ctx: ctx, call: call, index: sync.Index, name: p.info.Name}
	out, err := s.inst.Process(ctx, reqBytes, d.host)
	if err != nil {
		p.recycle(ctx, s, "instance failed")
		return fmt.Errorf("%w: plugin[%s] eval[%s]: %v", ErrPluginFailed, p.info.Name, call.Eval.ID, err)
	}
	var resp abi.ProcessResponse
	if _, err := resp.UnmarshalMsg(out); err != nil {
		p.recycle(ctx, s, "undecodable response")
		return fmt.Errorf("%w: plugin[%s] eval[%s]: decode response: %v", ErrPluginFailed, p.info.Name, call.Eval.ID, err)
	}
	s.index = resp.Index
	switch resp.Code {
	case abi.CodeOK:
		return nil
	case abi.CodeOutOfSync:
		if full {
			p.recycle(ctx, s, "out of sync after a full sync")
			return fmt.Errorf("%w: plugin[%s]: out of sync after a full sync: %s", ErrPluginFailed, p.info.Name, resp.Message)
		}
		return p.run(ctx, s, call, true)
	}
	if d.err != nil {
		// The host side failed a planner call; that is the root cause.
		return fmt.Errorf("plugin[%s] eval[%s]: %w", p.info.Name, call.Eval.ID, d.err)
	}
	return fmt.Errorf("%w: plugin[%s] eval[%s]: %w", ErrPluginFailed, p.info.Name, call.Eval.ID, abi.Err(resp.Code, resp.Message))
}

// Close closes every instance and the factory.
func (p *Plugin) Close(ctx context.Context) error {
	if p.closed.Swap(true) {
		return nil
	}
	p.mu.Lock()
	live := make([]*slot, 0, len(p.live))
	for s := range p.live {
		live = append(live, s)
	}
	p.mu.Unlock()
	// Take every slot so no call is in flight, then close.
	for i := 0; i < p.cfg.Instances; i++ {
		select {
		case <-p.slots:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, s := range live {
		if s.inst != nil {
			_ = s.inst.Close(ctx)
		}
	}
	return p.factory.Close(ctx)
}
