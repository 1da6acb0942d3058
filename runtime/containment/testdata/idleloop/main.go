// Command idleloop is a wasm plugin written against the ABI without the
// SDK: it completes every eval, placing nothing, but its drover_idle
// export (ABI 1.5, called between evals) never returns.
package main

import (
	"unsafe"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
)

var in, out []byte

func pack(b []byte) uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))<<32 | uint64(len(b))
}

//go:wasmexport drover_abi_version
func abiVersion() uint32 { return uint32(abi.Current) }

//go:wasmexport drover_info
func info() uint64 {
	out, _ = (&abi.Info{Name: "idleloop", ABI: uint32(abi.Current)}).MarshalMsg(out[:0])
	return pack(out)
}

//go:wasmexport drover_buffer
func buffer(size uint32) uint32 {
	if uint32(cap(in)) < size {
		in = make([]byte, size)
	}
	in = in[:size]
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(in))))
}

//go:wasmexport drover_process
func process(size uint32) uint64 {
	var req abi.ProcessRequest
	resp := abi.ProcessResponse{Code: abi.CodeOK}
	if _, err := req.UnmarshalMsg(in[:size]); err != nil || req.Eval == nil || req.Sync == nil {
		resp = abi.ProcessResponse{Code: abi.CodeDecode, Message: "idleloop: bad request"}
	} else {
		e := req.Eval.Copy()
		e.Status = sdk.EvalStatusComplete
		resp.UpdateEval, resp.Index = e, req.Sync.Index
	}
	out, _ = resp.MarshalMsg(out[:0])
	return pack(out)
}

var sink int

//go:wasmexport drover_idle
func idle() {
	for i := 0; ; i++ {
		sink += i
	}
}

func main() {}
