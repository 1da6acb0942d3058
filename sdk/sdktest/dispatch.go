package sdktest

import (
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/tinylib/msgp/msgp"
)

// dispatch is the harness's side of one eval's planner calls: it decodes
// each call, applies it to the harness and encodes the answer, exactly as
// the host's runtime does.
type dispatch struct {
	h     *Harness
	index uint64   // the plugin mirror's index
	info  abi.Info // the plugin's
	core  bool     // the eval is a core eval: garbage collection is offered
	// concluded is set once the plugin updated or reblocked its eval.
	concluded bool
}

func answer(m msgp.Marshaler) ([]byte, error) { return m.MarshalMsg(nil) }

func (d *dispatch) call(op abi.Op, msg []byte) ([]byte, error) {
	switch op {
	case abi.OpSubmitPlan:
		plan, err := abi.DecodePlanRequest(msg)
		if err != nil {
			return answer(&abi.PlanResponse{Code: abi.CodeDecode, Message: "sdktest: undecodable plan: " + err.Error()})
		}
		res, err := d.h.SubmitPlan(plan)
		if err != nil {
			return answer(&abi.PlanResponse{Code: abi.CodeOf(err), Message: err.Error()})
		}
		resp := &abi.PlanResponse{Result: res}
		if res.RefreshIndex != 0 {
			resp.Refresh = d.h.syncFor(d.index, d.info)
			d.index = resp.Refresh.Index
		}
		return answer(resp)
	case abi.OpUpdateEval, abi.OpCreateEval, abi.OpReblockEval:
		var req abi.EvalRequest
		if _, err := req.UnmarshalMsg(msg); err != nil || req.Eval == nil {
			return answer(&abi.Status{Code: abi.CodeDecode, Message: "sdktest: undecodable eval"})
		}
		var err error
		switch op {
		case abi.OpUpdateEval:
			err = d.h.UpdateEval(req.Eval)
		case abi.OpCreateEval:
			err = d.h.CreateEval(req.Eval)
		default:
			err = d.h.ReblockEval(req.Eval)
		}
		if err != nil {
			return answer(&abi.Status{Code: abi.CodeOf(err), Message: err.Error()})
		}
		d.concluded = d.concluded || op != abi.OpCreateEval
		return answer(&abi.Status{})
	case abi.OpGarbageCollect:
		if !d.core {
			return answer(&abi.Status{Code: abi.CodeUnknownOp, Message: "sdktest: garbage collection is offered to core evaluations only"})
		}
		var req abi.GCRequest
		if _, err := req.UnmarshalMsg(msg); err != nil || req.Request == nil {
			return answer(&abi.Status{Code: abi.CodeDecode, Message: "sdktest: undecodable gc request"})
		}
		if err := d.h.GarbageCollect(req.Request); err != nil {
			return answer(&abi.Status{Code: abi.CodeOf(err), Message: err.Error()})
		}
		return answer(&abi.Status{})
	case abi.OpLog:
		var rec abi.LogRecord
		if _, err := rec.UnmarshalMsg(msg); err == nil {
			d.h.Logs = append(d.h.Logs, rec)
		}
		return nil, nil
	}
	return nil, abi.Err(abi.CodeUnknownOp, "sdktest: unknown op "+op.String())
}
