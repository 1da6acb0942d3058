//go:build wasip1

// Package rawguest is the scaffolding of test plugins written against the
// ABI without the SDK (such as runtime/containment/testdata/badtake): the
// exports every plugin has (drover_abi_version, drover_info,
// drover_buffer), the ABI's packing of addresses and the planner calls
// the plugins make. A plugin sets Name in an init function and exports its
// own drover_process, which reads its request (Request) and answers with
// Pack.
package rawguest

import (
	"unsafe"

	"github.com/drover-sched/drover/sdk/abi"
)

// Name is the plugin's name, as drover_info reports it.
var Name string

// In holds the request of the current drover_process call.
var In []byte

var info []byte

// Request decodes the request of size bytes that drover_process was
// called with; ok is false when it is not a whole one.
func Request(size uint32) (req *abi.ProcessRequest, ok bool) {
	req = &abi.ProcessRequest{}
	if _, err := req.UnmarshalMsg(In[:size]); err != nil || req.Eval == nil || req.Sync == nil {
		return nil, false
	}
	return req, true
}

// CreateEval and TakeResult are the ABI's imports of the same names.
//
//go:wasmimport drover create_eval
func CreateEval(ptr, size uint32) int32

//go:wasmimport drover take_result
func TakeResult(ptr uint32)

// Addr is the address of b's first byte in the guest's memory.
func Addr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// Pack is b as an export returns it: address << 32 | length. b must stay
// alive (reachable) until the host has read it.
func Pack(b []byte) uint64 { return uint64(Addr(b))<<32 | uint64(len(b)) }

//go:wasmexport drover_abi_version
func abiVersion() uint32 { return uint32(abi.Current) }

//go:wasmexport drover_info
func droverInfo() uint64 {
	info, _ = (&abi.Info{Name: Name, ABI: uint32(abi.Current)}).MarshalMsg(info[:0])
	return Pack(info)
}

//go:wasmexport drover_buffer
func buffer(size uint32) uint32 {
	if uint32(cap(In)) < size {
		In = make([]byte, size)
	}
	In = In[:size]
	return Addr(In)
}
