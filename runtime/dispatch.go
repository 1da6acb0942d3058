package runtime

import (
	"context"
	"errors"
	"strings"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/rs/zerolog"
	"github.com/tinylib/msgp/msgp"
)

// dispatcher answers one eval's planner calls.
type dispatcher struct {
	ctx   context.Context
	call  *Call
	info  abi.Info
	index uint64 // the plugin mirror's index
	// kept is the instance's last wholly committed plan (ABI 1.2), until a
	// sync consumes it.
	kept  **keptPlan
	stats *Stats
	// err is the first host-side failure, kept as the eval's root cause.
	err error
}

func (d *dispatcher) fail(err error) error {
	if d.err == nil && err != nil {
		d.err = err
	}
	return err
}

func (d *dispatcher) host(op abi.Op, msg []byte) ([]byte, error) {
	switch op {
	case abi.OpSubmitPlan:
		return d.submitPlan(msg)
	case abi.OpUpdateEval, abi.OpCreateEval, abi.OpReblockEval:
		return d.evalOp(op, msg)
	case abi.OpLog:
		d.logRecord(msg)
		return nil, nil
	case abi.OpGarbageCollect:
		return d.garbageCollect(msg)
	}
	return nil, abi.Err(abi.CodeUnknownOp, "host: unknown op "+op.String())
}

func encode(m msgp.Marshaler) ([]byte, error) { return m.MarshalMsg(nil) }

func (d *dispatcher) submitPlan(msg []byte) ([]byte, error) {
	plan, err := abi.DecodePlanRequest(msg)
	if err != nil {
		return encode(&abi.PlanResponse{Code: abi.CodeDecode, Message: "host: undecodable plan: " + err.Error()})
	}
	plan.EvalToken = d.call.Token
	if plan.EvalID != d.call.Eval.ID {
		return encode(&abi.PlanResponse{Code: abi.CodePlanInvalid,
			Message: "host: plan names eval " + plan.EvalID + ", not the eval being processed"})
	}
	var placed *keptPlan
	if abi.Version(d.info.ABI).KeepsPlans() {
		// Before the planner sees the plan: what the plugin keeps is what
		// it sent, whatever the host later does with these objects.
		placed = newKeptPlan(plan)
	}
	res, refreshed, err := d.call.Planner.SubmitPlan(d.ctx, plan)
	if err != nil {
		d.fail(err)
		return encode(&abi.PlanResponse{Code: abi.CodeOf(err), Message: err.Error()})
	}
	resp := &abi.PlanResponse{}
	if placed != nil && refreshed == nil && wholeCommit(plan, res) {
		c := *res
		c.NodeUpdate, c.NodeAllocation, c.NodePreemptions, c.Deployment = nil, nil, nil, nil
		resp.Result, resp.Whole = &c, true
		*d.kept = placed
	} else {
		resp.Result = slimResult(res)
	}
	if refreshed != nil {
		resp.Refresh = syncFor(refreshed, d.index, d.info, d.kept, d.stats)
		d.index = resp.Refresh.Index
	}
	return encode(resp)
}

// syncFor returns the sync that brings a plugin's mirror from index from
// to src's index, in the forms the plugin's ABI version reads, and
// consumes the instance's kept plan.
func syncFor(src StateSource, from uint64, info abi.Info, kept **keptPlan, stats *Stats) *abi.StateSync {
	sync := src.Sync(from, info.MirrorEvals)
	if markKept(sync, kept) {
		stats.KeptPlans.Add(1)
	}
	if !abi.Version(info.ABI).TakesCSIVolumes() {
		sync.CSIVolumes, sync.DeletedCSIVolumes = nil, nil
	}
	if abi.Version(info.ABI).TakesJobStatuses() {
		sync.CompactJobs()
		stats.JobStatuses.Add(int64(len(sync.JobStatuses)))
	}
	return sync
}

// wholeCommit reports whether res commits every allocation of plan, node
// by node and in order, and nothing else: then the plugin can take the
// result's allocation lists from its plan (abi.PlanResponse.Whole).
func wholeCommit(plan *sdk.Plan, res *sdk.PlanResult) bool {
	if res == nil || res.RefreshIndex != 0 || len(res.RejectedNodes) != 0 {
		return false
	}
	same := func(sent, got map[string][]*sdk.Allocation) bool {
		if len(sent) != len(got) {
			return false
		}
		for node, as := range sent {
			bs, ok := got[node]
			if !ok || len(as) != len(bs) {
				return false
			}
			for i := range as {
				if as[i] == nil || bs[i] == nil || as[i].ID != bs[i].ID {
					return false
				}
			}
		}
		return true
	}
	return same(plan.NodeUpdate, res.NodeUpdate) && same(plan.NodeAllocation, res.NodeAllocation) &&
		same(plan.NodePreemptions, res.NodePreemptions)
}

// slimResult keeps only what a plugin needs of committed allocations: it
// has the rest in its mirror or its plan.
func slimResult(r *sdk.PlanResult) *sdk.PlanResult {
	if r == nil {
		return nil
	}
	c := *r
	slim := func(m map[string][]*sdk.Allocation) map[string][]*sdk.Allocation {
		if m == nil {
			return nil
		}
		out := make(map[string][]*sdk.Allocation, len(m))
		for node, as := range m {
			s := make([]*sdk.Allocation, len(as))
			for i, a := range as {
				s[i] = &sdk.Allocation{ID: a.ID, NodeID: a.NodeID, Name: a.Name, TaskGroup: a.TaskGroup}
			}
			out[node] = s
		}
		return out
	}
	c.NodeUpdate, c.NodeAllocation, c.NodePreemptions = slim(r.NodeUpdate), slim(r.NodeAllocation), slim(r.NodePreemptions)
	c.Deployment = nil
	return &c
}

func (d *dispatcher) evalOp(op abi.Op, msg []byte) ([]byte, error) {
	var req abi.EvalRequest
	if err := abi.Decode(msg, &req); err != nil || req.Eval == nil {
		return encode(&abi.Status{Code: abi.CodeDecode, Message: "host: undecodable eval"})
	}
	var err error
	switch op {
	case abi.OpUpdateEval:
		err = d.call.Planner.UpdateEval(d.ctx, req.Eval)
	case abi.OpCreateEval:
		err = d.call.Planner.CreateEval(d.ctx, req.Eval)
	case abi.OpReblockEval:
		err = d.call.Planner.ReblockEval(d.ctx, req.Eval)
	}
	if err != nil {
		d.fail(err)
		return encode(&abi.Status{Code: abi.CodeOf(err), Message: err.Error()})
	}
	return encode(&abi.Status{})
}

func (d *dispatcher) garbageCollect(msg []byte) ([]byte, error) {
	var req abi.GCRequest
	if err := abi.Decode(msg, &req); err != nil || req.Request == nil {
		return encode(&abi.Status{Code: abi.CodeDecode, Message: "host: undecodable gc request"})
	}
	c, ok := d.call.Planner.(Collector)
	if !ok {
		return encode(&abi.Status{Code: abi.CodeUnknownOp, Message: "host: garbage collection is offered to core evaluations only"})
	}
	if err := c.GarbageCollect(d.ctx, req.Request); err != nil {
		d.fail(err)
		return encode(&abi.Status{Code: abi.CodeOf(err), Message: err.Error()})
	}
	return encode(&abi.Status{})
}

func (d *dispatcher) logRecord(msg []byte) {
	var rec abi.LogRecord
	if err := abi.Decode(msg, &rec); err != nil {
		return
	}
	var ev *zerolog.Event
	switch {
	case rec.Level >= 8:
		ev = d.call.Log.Error()
	case rec.Level >= 4:
		ev = d.call.Log.Warn()
	case rec.Level >= 0:
		ev = d.call.Log.Info()
	default:
		ev = d.call.Log.Debug()
	}
	ev = ev.Str("plugin", d.info.Name)
	budget := maxOutputLine
	text, cut := bounded(rec.Message, &budget)
	tags := d.hostTags()
	for i := 0; i+1 < len(rec.Attrs) && !cut; i += 2 {
		key, value := rec.Attrs[i], rec.Attrs[i+1]
		if host, taken := tags[key]; taken {
			if host != "" && host == value {
				continue // the Go SDK tags every record with its eval's ID
			}
			key = "attr." + key
		}
		if key, cut = bounded(key, &budget); cut {
			break
		}
		value, cut = bounded(value, &budget)
		ev = ev.Str(key, value)
	}
	if cut {
		ev = ev.Bool("truncated", true)
	}
	ev.Msg(text)
}

// hostTags are the keys the host's fields take in a plugin's log entries,
// each with the value the host gives it there ("" for one it does not
// know here, such as the worker). A plugin's attribute of the same key is
// renamed "attr.KEY", or left out when it repeats the host's value: JSON
// readers keep the last of duplicate keys, and a plugin must not pass its
// entries off as another plugin's, another eval's or of another level.
func (d *dispatcher) hostTags() map[string]string {
	return map[string]string{
		zerolog.LevelFieldName: "", zerolog.TimestampFieldName: "", zerolog.MessageFieldName: "",
		zerolog.ErrorFieldName: "", zerolog.CallerFieldName: "", "truncated": "",
		"plugin": d.info.Name, "eval_id": d.call.Eval.ID, "job_id": d.call.Eval.JobID,
		"triggered_by": d.call.Eval.TriggeredBy, "worker": "", "dry_run": "", "stream": "",
	}
}

// bounded cuts s to what is left of budget, which it charges, and
// reports whether it cut: one log record takes at most maxOutputLine
// bytes of the agent's log, as one line of a plugin's output does.
func bounded(s string, budget *int) (string, bool) {
	if len(s) <= *budget {
		*budget -= len(s)
		return s, false
	}
	s = strings.ToValidUTF8(s[:*budget], "")
	*budget = 0
	return s, true
}

// IsPluginFailure reports whether err means the plugin (not the host) failed.
func IsPluginFailure(err error) bool { return errors.Is(err, ErrPluginFailed) }
