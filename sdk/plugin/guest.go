// Package plugin runs an sdk.Scheduler behind Drover's plugin ABI.
//
// A plugin's main package registers its scheduler in init and calls Serve
// (examples/plugins/zones):
//
//	func init() {
//		// No Types: jobs select it with scheduler = "zones". A type that
//		// a built-in already serves (service, batch, ...) is refused by
//		// the agent, unless the built-in's plugin is left out.
//		plugin.Register(plugin.Info{Name: "zones", Version: "1.0.0"}, zones.Scheduler{})
//	}
//
//	func main() { plugin.Serve() }
//
// Built for GOOS=wasip1 with -buildmode=c-shared the package exports the
// wasm ABI (a reactor runs init but never main, hence registration in init);
// built natively, Serve serves the same scheduler as a go-plugin binary.
// Guest is the transport-independent core both use, and what the host's
// in-process runtime calls directly.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/mirror"
)

// Info names a plugin and the job types it serves by default.
type Info struct {
	// Name is the plugin's name, unique in an agent.
	Name string
	// Types are the job types the plugin serves when a job names no
	// scheduler; empty for a plugin picked only with `scheduler = "NAME"`.
	// An agent serves each type by one plugin: it refuses a plugin that
	// lists a type another one (such as the built-in service scheduler)
	// already serves.
	Types []string
	// Version is the plugin's own version.
	Version string
	// MirrorEvals asks the host to mirror evaluations into the plugin's
	// state (sdk.EvalState); the core scheduler needs them.
	MirrorEvals bool
}

// HostFunc is a transport's way to call a planner operation on the host: it
// sends one encoded message and returns the encoded answer.
type HostFunc func(op abi.Op, msg []byte) ([]byte, error)

// Guest runs one scheduler behind the ABI and keeps its state mirror.
// It processes one request at a time.
type Guest struct {
	// mu keeps requests one at a time, whichever transport brings them.
	mu     sync.Mutex
	info   abi.Info
	sched  sdk.Scheduler
	mirror *mirror.Mirror
	enc    planEncoder
	// host is the ABI version of the host that sent the last request.
	host abi.Version
}

// planEncoder is what encoding plans reuses from one eval to the next, so
// that a large plan makes little garbage for the guest's collector.
type planEncoder struct {
	buf []byte
	// cleared lists the Jobs taken off allocations for an encoding.
	cleared []jobOf
	// perAlloc is the encoded size of an allocation in the last plan.
	perAlloc int
	// placements splits new allocations into templates and what each has
	// of its own, for hosts that take them so (ABI 1.8).
	placements abi.Placements
}

// reserve makes room in the buffer for a plan of n allocations at once.
// Left to append, a buffer grows by a quarter at a time once large: a
// 5,000-allocation plan allocated about five times its size, most of a
// large eval's garbage inside wasm.
func (e *planEncoder) reserve(n int) []byte {
	per := e.perAlloc
	if per == 0 {
		per = 1024
	}
	if need := n*per + n*per/8 + 4096; cap(e.buf) < need {
		e.buf = make([]byte, 0, need)
	}
	return e.buf[:0]
}

// NewGuest returns a guest for the scheduler.
func NewGuest(info Info, s sdk.Scheduler) *Guest {
	return &Guest{
		info: abi.Info{Name: info.Name, Types: info.Types, PluginVersion: info.Version, ABI: uint32(abi.Current),
			MirrorEvals: info.MirrorEvals},
		sched:  s,
		mirror: mirror.New(),
	}
}

// Info returns the plugin's ABI info.
func (g *Guest) Info() abi.Info { return g.info }

// HostABI is the ABI version declared by the host that sent the last
// request (zero before the first, or from a host older than 1.4).
func (g *Guest) HostABI() abi.Version { return g.host }

// Process handles one encoded abi.ProcessRequest and returns the encoded
// abi.ProcessResponse. It never panics: a panicking scheduler yields
// CodeScheduler, and the mirror is reset so the next request gets a full sync.
func (g *Guest) Process(req []byte, host HostFunc) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	resp := g.process(req, host)
	resp.Index = g.mirror.Index()
	out, err := resp.MarshalMsg(nil)
	if err != nil { // cannot happen for this message; keep the guarantee anyway
		out, _ = (&abi.ProcessResponse{Code: abi.CodeInternal, Message: err.Error()}).MarshalMsg(nil)
	}
	return out
}

func (g *Guest) process(reqBytes []byte, host HostFunc) (resp abi.ProcessResponse) {
	var req abi.ProcessRequest
	if _, err := req.UnmarshalMsg(reqBytes); err != nil {
		return abi.ProcessResponse{Code: abi.CodeDecode, Message: "plugin: decode request: " + err.Error()}
	}
	g.host = abi.Version(req.HostABI)
	// A panic anywhere below, the mirror's sync included, may have left
	// the mirror half changed: it is reset, so the next request gets a
	// full sync.
	defer func() {
		if r := recover(); r != nil {
			g.mirror = mirror.New()
			resp = abi.ProcessResponse{Code: abi.CodeScheduler,
				Message: fmt.Sprintf("plugin %s: panic: %v\n%s", g.info.Name, r, debug.Stack())}
		}
	}()
	if err := g.mirror.Apply(req.Sync); err != nil {
		code := abi.CodeOutOfSync
		if errors.Is(err, mirror.ErrMalformed) {
			code = abi.CodeDecode
		}
		return abi.ProcessResponse{Code: code, Message: err.Error()}
	}
	if req.Eval == nil {
		return abi.ProcessResponse{Code: abi.CodeInvalidEval, Message: "plugin: request carries no evaluation"}
	}
	p := &planner{host: host, mirror: g.mirror, token: req.EvalToken, enc: &g.enc,
		deferUpdates: g.host.TakesDeferredUpdates(), placed: g.host.TakesPlaced(),
		nodesAvailable: g.host.TakesNodesAvailable()}
	logger := slog.New(&logHandler{host: host}).With("eval_id", req.Eval.ID)
	ctx := sdk.NewContext(g.mirror, p, logger, time.Unix(0, req.Now).UTC(), req.Config, req.Eval.ID)
	err := g.sched.Process(ctx, req.Eval)
	// A held update goes with the answer, error or not; the host applies it
	// before it reads the rest, as it would have had it before the answer.
	resp.UpdateEval = p.pending
	if err != nil {
		// A planner sentinel the scheduler passed on keeps its code, so
		// errors.Is still matches it on the host side.
		resp.Code = abi.CodeOf(err)
		if resp.Code == abi.CodeInternal {
			resp.Code = abi.CodeScheduler
		}
		resp.Message = err.Error()
	}
	return resp
}

// Idle does what the next eval would otherwise start with, once the
// host has the last eval's answer: it adds the allocations of a plan the
// host committed whole to the mirror (mirror.PreApply), ahead of the sync
// that confirms them. Each transport calls it between evals (wasm:
// drover_idle; go-plugin: after writing an answer; native: the pool's
// idle work); an eval that comes first does the work itself.
func (g *Guest) Idle() {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer func() {
		if recover() != nil {
			g.mirror = mirror.New() // the next request gets a full sync
		}
	}()
	g.mirror.PreApply()
}

// CheckConfig handles one encoded abi.ConfigRequest (ABI 1.7) and returns
// the encoded abi.Status: CodeOK when the scheduler accepts the
// configuration, or does not check it (sdk.ConfigChecker), and
// CodeConfigRefused with the scheduler's error otherwise. It never panics:
// a panicking check yields CodeScheduler. The mirror is left alone.
func (g *Guest) CheckConfig(req []byte) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.checkConfig(req)
	out, err := st.MarshalMsg(nil)
	if err != nil { // cannot happen for this message; keep the guarantee anyway
		out, _ = (&abi.Status{Code: abi.CodeInternal, Message: err.Error()}).MarshalMsg(nil)
	}
	return out
}

func (g *Guest) checkConfig(raw []byte) (st abi.Status) {
	var req abi.ConfigRequest
	if _, err := req.UnmarshalMsg(raw); err != nil {
		return abi.Status{Code: abi.CodeDecode, Message: "plugin: decode config request: " + err.Error()}
	}
	c, ok := g.sched.(sdk.ConfigChecker)
	if !ok {
		return abi.Status{}
	}
	defer func() {
		if r := recover(); r != nil {
			st = abi.Status{Code: abi.CodeScheduler, Message: fmt.Sprintf("plugin %s: panic in CheckConfig: %v", g.info.Name, r)}
		}
	}()
	if err := c.CheckConfig(req.Config); err != nil {
		msg := err.Error()
		if msg == "" {
			msg = "plugin " + g.info.Name + ": configuration refused"
		}
		return abi.Status{Code: abi.CodeConfigRefused, Message: msg}
	}
	return abi.Status{}
}

// planner is the guest side of sdk.Planner.
type planner struct {
	host   HostFunc
	mirror *mirror.Mirror
	token  string
	enc    *planEncoder
	// deferUpdates: the host takes the last eval update in the response
	// (ABI 1.4), which spares a go-plugin a round trip per eval. pending
	// is that update while no other planner call has followed it.
	deferUpdates bool
	pending      *sdk.Evaluation
	// placed: the host expands PlanRequest.Placed (ABI 1.8);
	// nodesAvailable: and fills their metrics from
	// PlanRequest.NodesAvailable (ABI 1.10).
	placed, nodesAvailable bool
}

// call makes one planner call on the host, after the held eval update if
// there is one, so that the host sees the calls in the scheduler's order.
func (p *planner) call(op abi.Op, msg []byte) ([]byte, error) {
	if err := p.flush(); err != nil {
		return nil, err
	}
	return p.host(op, msg)
}

// flush sends the held eval update, if there is one.
func (p *planner) flush() error {
	e := p.pending
	if e == nil {
		return nil
	}
	p.pending = nil
	return p.evalOp(abi.OpUpdateEval, e)
}

func (p *planner) SubmitPlan(plan *sdk.Plan) (*sdk.PlanResult, error) {
	wire := *plan
	wire.EvalToken = p.token
	if j := plan.Job; j != nil {
		// The host resolves the plan's job to the version it stores by
		// these four fields and reads nothing else of it: the job's groups
		// and tasks need not travel.
		wire.Job = &sdk.Job{Namespace: j.Namespace, ID: j.ID, Version: j.Version, JobModifyIndex: j.JobModifyIndex}
	}
	// New allocations travel without their Job (the plan carries it
	// once). Clearing it for the encoding and restoring it after, rather
	// than copying every allocation, spares a large plan's worth of
	// garbage, which costs most inside wasm.
	enc := p.enc
	cleared, n := enc.cleared[:0], 0
	for _, allocs := range plan.NodeAllocation {
		n += len(allocs)
		for _, a := range allocs {
			if a != nil && a.Job != nil {
				cleared = append(cleared, jobOf{a, a.Job})
				a.Job = nil
			}
		}
	}
	for _, stops := range plan.NodeUpdate {
		n += len(stops)
	}
	req := &abi.PlanRequest{Plan: &wire}
	if p.placed {
		enc.placements.ShareNodesAvailable(p.nodesAvailable)
		enc.placements.Split(plan.NodeAllocation)
		wire.NodeAllocation, req.Shared, req.Placed = enc.placements.Whole, enc.placements.Shared, enc.placements.Placed
		req.NodesAvailable = enc.placements.NodesAvailable()
	}
	msg, err := req.MarshalMsg(enc.reserve(n))
	enc.placements.Reset()
	for i, c := range cleared {
		c.alloc.Job = c.job
		cleared[i] = jobOf{}
	}
	enc.cleared = cleared[:0]
	if err != nil {
		return nil, fmt.Errorf("plugin: encode plan: %w", err)
	}
	enc.buf = msg // the host reads the message during the call only
	if n > 0 {
		enc.perAlloc = len(msg) / n
	}
	out, err := p.call(abi.OpSubmitPlan, msg)
	if err != nil {
		return nil, err
	}
	var resp abi.PlanResponse
	if _, err := resp.UnmarshalMsg(out); err != nil {
		return nil, fmt.Errorf("plugin: decode plan response: %w", err)
	}
	if err := abi.Err(resp.Code, resp.Message); err != nil {
		return nil, err
	}
	if resp.Refresh != nil {
		if err := p.mirror.Apply(resp.Refresh); err != nil {
			return nil, fmt.Errorf("plugin: refresh state: %w", err)
		}
	}
	if resp.Whole && resp.Result != nil {
		// The host sent no allocation lists: they are the plan's. Keep the
		// plan so that the next sync need not send its allocations back.
		res := resp.Result
		res.NodeUpdate, res.NodeAllocation, res.NodePreemptions = plan.NodeUpdate, plan.NodeAllocation, plan.NodePreemptions
		res.Whole = true
		p.mirror.Keep(plan)
	}
	return resp.Result, nil
}

// jobOf remembers an allocation's Job while the plan is encoded without it.
type jobOf struct {
	alloc *sdk.Allocation
	job   *sdk.Job
}

func (p *planner) evalOp(op abi.Op, eval *sdk.Evaluation) error {
	msg, err := (&abi.EvalRequest{Eval: eval}).MarshalMsg(nil)
	if err != nil {
		return fmt.Errorf("plugin: encode eval: %w", err)
	}
	out, err := p.call(op, msg)
	if err != nil {
		return err
	}
	var st abi.Status
	if _, err := st.UnmarshalMsg(out); err != nil {
		return fmt.Errorf("plugin: decode %s status: %w", op, err)
	}
	return abi.Err(st.Code, st.Message)
}

// GarbageCollect implements sdk.Collector. The host accepts it only from
// core evaluations.
func (p *planner) GarbageCollect(req *sdk.GCRequest) error {
	msg, err := (&abi.GCRequest{Request: req}).MarshalMsg(nil)
	if err != nil {
		return fmt.Errorf("plugin: encode gc request: %w", err)
	}
	out, err := p.call(abi.OpGarbageCollect, msg)
	if err != nil {
		return err
	}
	var st abi.Status
	if _, err := st.UnmarshalMsg(out); err != nil {
		return fmt.Errorf("plugin: decode gc status: %w", err)
	}
	return abi.Err(st.Code, st.Message)
}

// UpdateEval sends the update, or holds it for the response when the
// host takes that (a copy: the scheduler may change its eval afterwards).
// An update already held is sent first.
func (p *planner) UpdateEval(e *sdk.Evaluation) error {
	if !p.deferUpdates || e == nil {
		return p.evalOp(abi.OpUpdateEval, e)
	}
	if err := p.flush(); err != nil {
		return err
	}
	p.pending = e.Copy()
	return nil
}

func (p *planner) CreateEval(e *sdk.Evaluation) error  { return p.evalOp(abi.OpCreateEval, e) }
func (p *planner) ReblockEval(e *sdk.Evaluation) error { return p.evalOp(abi.OpReblockEval, e) }

// logHandler forwards slog records to the host.
type logHandler struct {
	host  HostFunc
	attrs []string
	group string
}

func (h *logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	rec := abi.LogRecord{Level: int(r.Level), Message: r.Message, Attrs: append([]string(nil), h.attrs...)}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs = append(rec.Attrs, h.key(a.Key), a.Value.String())
		return true
	})
	msg, err := rec.MarshalMsg(nil)
	if err != nil {
		return err
	}
	_, err = h.host(abi.OpLog, msg)
	return err
}

func (h *logHandler) key(k string) string {
	if h.group == "" {
		return k
	}
	return h.group + "." + k
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append([]string(nil), h.attrs...)
	for _, a := range as {
		c.attrs = append(c.attrs, h.key(a.Key), a.Value.String())
	}
	return &c
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.group = h.key(name)
	return &c
}
