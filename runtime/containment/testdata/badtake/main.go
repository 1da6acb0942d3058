// Command badtake is a wasm plugin written against the ABI without the
// SDK: it makes a planner call, then asks take_result to copy the answer
// to an address past its memory, and completes its eval as if the copy
// had worked. The host must stop it there: the guest would otherwise go
// on with whatever its buffer held.
package main

import (
	"github.com/drover-sched/drover/runtime/wasm/wasmtest/rawguest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
)

var out, msg []byte

func init() { rawguest.Name = "badtake" }

//go:wasmexport drover_process
func process(size uint32) uint64 {
	resp := abi.ProcessResponse{Code: abi.CodeOK}
	if req, ok := rawguest.Request(size); !ok {
		resp = abi.ProcessResponse{Code: abi.CodeDecode, Message: "badtake: bad request"}
	} else {
		// An eval the host refuses (no ID): its answer is a Status.
		msg, _ = (&abi.EvalRequest{Eval: &sdk.Evaluation{Namespace: req.Eval.Namespace, JobID: req.Eval.JobID}}).MarshalMsg(msg[:0])
		if n := rawguest.CreateEval(rawguest.Addr(msg), uint32(len(msg))); n > 0 {
			rawguest.TakeResult(0xffff_fff0)
		}
		e := req.Eval.Copy()
		e.Status = sdk.EvalStatusComplete
		resp.UpdateEval, resp.Index = e, req.Sync.Index
	}
	out, _ = resp.MarshalMsg(out[:0])
	return rawguest.Pack(out)
}

func main() {}
