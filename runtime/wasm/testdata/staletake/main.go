// Command staletake is a wasm plugin written against the ABI without the
// SDK: it makes a planner call and leaves its answer, makes a call the
// host cannot read (its message is past the guest's memory), then calls
// take_result. The failed call must have dropped the answer it left: the
// plugin fails its eval if take_result still copies one.
package main

import (
	"unsafe"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
)

var in, out, msg []byte

func pack(b []byte) uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))<<32 | uint64(len(b))
}

func addr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

//go:wasmimport drover create_eval
func createEval(ptr, size uint32) int32

//go:wasmimport drover take_result
func takeResult(ptr uint32)

//go:wasmexport drover_abi_version
func abiVersion() uint32 { return uint32(abi.Current) }

//go:wasmexport drover_info
func info() uint64 {
	out, _ = (&abi.Info{Name: "staletake", ABI: uint32(abi.Current)}).MarshalMsg(out[:0])
	return pack(out)
}

//go:wasmexport drover_buffer
func buffer(size uint32) uint32 {
	if uint32(cap(in)) < size {
		in = make([]byte, size)
	}
	in = in[:size]
	return addr(in)
}

//go:wasmexport drover_process
func process(size uint32) uint64 {
	var req abi.ProcessRequest
	resp := abi.ProcessResponse{Code: abi.CodeOK}
	if _, err := req.UnmarshalMsg(in[:size]); err != nil || req.Eval == nil || req.Sync == nil {
		resp = abi.ProcessResponse{Code: abi.CodeDecode, Message: "staletake: bad request"}
	} else {
		// An eval the host refuses (no ID): its answer, a Status, is left.
		msg, _ = (&abi.EvalRequest{Eval: &sdk.Evaluation{Namespace: req.Eval.Namespace, JobID: req.Eval.JobID}}).MarshalMsg(msg[:0])
		left := createEval(addr(msg), uint32(len(msg)))
		failed := createEval(0xffff_fff0, 64)
		buf := make([]byte, 64)
		takeResult(addr(buf))
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
	return pack(out)
}

func main() {}
