// Command staletake is a wasm plugin written against the ABI without the
// SDK: it makes a planner call and leaves its answer, makes a call the
// host cannot read (its message is past the guest's memory), then calls
// take_result. The failed call must have dropped the answer it left: the
// plugin fails its eval if take_result still copies one.
package main

import (
	"github.com/drover-sched/drover/runtime/wasm/wasmtest/rawguest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
)

var out, msg []byte

func init() { rawguest.Name = "staletake" }

//go:wasmexport drover_process
func process(size uint32) uint64 {
	resp := abi.ProcessResponse{Code: abi.CodeOK}
	if req, ok := rawguest.Request(size); !ok {
		resp = abi.ProcessResponse{Code: abi.CodeDecode, Message: "staletake: bad request"}
	} else {
		// An eval the host refuses (no ID): its answer, a Status, is left.
		msg, _ = (&abi.EvalRequest{Eval: &sdk.Evaluation{Namespace: req.Eval.Namespace, JobID: req.Eval.JobID}}).MarshalMsg(msg[:0])
		left := rawguest.CreateEval(rawguest.Addr(msg), uint32(len(msg)))
		failed := rawguest.CreateEval(0xffff_fff0, 64)
		buf := make([]byte, 64)
		rawguest.TakeResult(rawguest.Addr(buf))
		e := req.Eval.Copy()
		e.Status = sdk.EvalStatusComplete
		switch {
		case left <= 0 || failed >= 0:
			resp = abi.ProcessResponse{Code: abi.CodeInternal, Message: "staletake: the calls did not answer as expected"}
		case buf[0] != 0:
			resp = abi.ProcessResponse{Code: abi.CodeInternal, Message: "staletake: take_result copied the answer of an earlier call"}
		default:
			resp.UpdateEval, resp.Index = e, req.Sync.Index
		}
	}
	out, _ = resp.MarshalMsg(out[:0])
	return rawguest.Pack(out)
}

func main() {}
