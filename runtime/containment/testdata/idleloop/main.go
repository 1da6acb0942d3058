// Command idleloop is a wasm plugin written against the ABI without the
// SDK: it completes every eval, placing nothing, but its drover_idle
// export (ABI 1.5, called between evals) never returns.
package main

import (
	"github.com/drover-sched/drover/runtime/wasm/wasmtest/rawguest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
)

var out []byte

func init() { rawguest.Name = "idleloop" }

//go:wasmexport drover_process
func process(size uint32) uint64 {
	resp := abi.ProcessResponse{Code: abi.CodeOK}
	if req, ok := rawguest.Request(size); !ok {
		resp = abi.ProcessResponse{Code: abi.CodeDecode, Message: "idleloop: bad request"}
	} else {
		e := req.Eval.Copy()
		e.Status = sdk.EvalStatusComplete
		resp.UpdateEval, resp.Index = e, req.Sync.Index
	}
	out, _ = resp.MarshalMsg(out[:0])
	return rawguest.Pack(out)
}

var sink int

//go:wasmexport drover_idle
func idle() {
	for i := 0; ; i++ {
		sink += i
	}
}

func main() {}
