//go:build wasip1

package plugin

import (
	"runtime"
	"runtime/debug"
	"unsafe"

	"github.com/drover-sched/drover/sdk/abi"
)

// The wasm ABI (docs/abi.md). Exports: drover_abi_version, drover_info,
// drover_buffer, drover_process, drover_idle, drover_check_config.
// Imports, module "drover":
// one function per abi.Op plus take_result.

var (
	inBuf  []byte // the request buffer the host writes into
	outBuf []byte // the last answer; kept alive until the next call
)

func pack(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))<<32 | uint64(len(b))
}

//go:wasmexport drover_abi_version
func droverABIVersion() uint32 { return uint32(abi.Current) }

//go:wasmexport drover_info
func droverInfo() uint64 {
	if registered == nil {
		return 0
	}
	info := registered.Info()
	outBuf, _ = info.MarshalMsg(outBuf[:0])
	return pack(outBuf)
}

// drover_buffer returns the address of a buffer of at least size bytes for
// the host to write the next request into.
//
//go:wasmexport drover_buffer
func droverBuffer(size uint32) uint32 {
	if uint32(cap(inBuf)) < size {
		inBuf = make([]byte, size)
	}
	inBuf = inBuf[:size]
	if size == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(inBuf))))
}

// drover_process processes the request of size bytes in the buffer and
// returns the answer's address (high 32 bits) and length (low 32 bits).
//
//go:wasmexport drover_process
func droverProcess(size uint32) uint64 {
	if registered == nil {
		outBuf, _ = (&abi.ProcessResponse{Code: abi.CodeInternal, Message: "plugin: no scheduler registered (call plugin.Register in init)"}).MarshalMsg(outBuf[:0])
		return pack(outBuf)
	}
	outBuf = registered.Process(inBuf[:size], hostCall)
	if !registered.HostABI().CallsIdle() {
		// An older host never calls drover_idle: the housekeeping is done
		// here, on the eval's time.
		droverIdle()
	}
	return pack(outBuf)
}

// drover_check_config (ABI 1.7) checks the configuration in the encoded
// abi.ConfigRequest of size bytes in the buffer and returns the encoded
// abi.Status's address (high 32 bits) and length (low 32 bits). The host
// calls it, as it loads the plugin, on an instance that processes no eval.
//
//go:wasmexport drover_check_config
func droverCheckConfig(size uint32) uint64 {
	if registered == nil {
		outBuf, _ = (&abi.Status{Code: abi.CodeInternal, Message: "plugin: no scheduler registered (call plugin.Register in init)"}).MarshalMsg(outBuf[:0])
		return pack(outBuf)
	}
	outBuf = registered.CheckConfig(inBuf[:size])
	return pack(outBuf)
}

// drover_idle does the guest's work between calls (Guest.Idle) and lets
// its garbage collector finish: in a long-lived reactor it otherwise
// stalls and the heap grows without bound. A host that declares ABI 1.5
// calls it once an eval's answer is in, off the eval's path: a collection
// of a 1,000-node mirror takes about as long as a whole 100-placement eval
// (docs/benchmarks.md).
//
//go:wasmexport drover_idle
func droverIdle() {
	runtime.Gosched()
	housekeep(registered)
}

// The collector's own pacing runs at GOGC=200 inside an eval: collection
// is dear in wasm (one thread, no background marking), and collectIfDue
// still brings the heap down between evals. Measured: the service
// scheduler about 30% faster per eval than at the default 100
// (docs/benchmarks.md). A plugin may set its own (schedulers.TuneGC).
func init() { debug.SetGCPercent(200) }

//go:wasmimport drover submit_plan
func hostSubmitPlan(ptr, size uint32) int32

//go:wasmimport drover update_eval
func hostUpdateEval(ptr, size uint32) int32

//go:wasmimport drover create_eval
func hostCreateEval(ptr, size uint32) int32

//go:wasmimport drover reblock_eval
func hostReblockEval(ptr, size uint32) int32

//go:wasmimport drover log
func hostLog(ptr, size uint32) int32

//go:wasmimport drover garbage_collect
func hostGarbageCollect(ptr, size uint32) int32

//go:wasmimport drover take_result
func hostTakeResult(ptr uint32)

func hostCall(op abi.Op, msg []byte) ([]byte, error) {
	ptr := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(msg))))
	size := uint32(len(msg))
	var n int32
	switch op {
	case abi.OpSubmitPlan:
		n = hostSubmitPlan(ptr, size)
	case abi.OpUpdateEval:
		n = hostUpdateEval(ptr, size)
	case abi.OpCreateEval:
		n = hostCreateEval(ptr, size)
	case abi.OpReblockEval:
		n = hostReblockEval(ptr, size)
	case abi.OpLog:
		n = hostLog(ptr, size)
	case abi.OpGarbageCollect:
		n = hostGarbageCollect(ptr, size)
	default:
		return nil, abi.Err(abi.CodeUnknownOp, "plugin: unknown op "+op.String())
	}
	runtime.KeepAlive(msg)
	if n < 0 {
		return nil, abi.Err(abi.Code(-n), "host: "+op.String()+" failed")
	}
	if n == 0 {
		return nil, nil
	}
	res := make([]byte, n)
	hostTakeResult(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(res)))))
	return res, nil
}

// Serve does nothing in a wasm reactor: the host drives the exports.
func Serve() {}
