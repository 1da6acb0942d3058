package wasm

import (
	"context"
	"fmt"

	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// callState is one process call's link to the host: where planner calls go
// and the answer waiting for take_result.
type callState struct {
	host    plugin.HostFunc
	pending []byte
}

type callKey struct{}

func withCall(ctx context.Context, cs *callState) context.Context {
	return context.WithValue(ctx, callKey{}, cs)
}

// instantiateHost defines the "drover" host module: one function per
// planner operation, (ptr, len) -> answer length or -code, take_result,
// and checkpoint, which only the interrupt checks the host adds call.
func instantiateHost(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(HostModule)
	i32 := api.ValueTypeI32
	for _, op := range abi.Ops() {
		b = b.NewFunctionBuilder().
			WithGoModuleFunction(opFunc(op), []api.ValueType{i32, i32}, []api.ValueType{i32}).
			Export(op.String())
	}
	b = b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(takeResult), []api.ValueType{i32}, nil).
		Export(HostTakeResult)
	b = b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(checkpoint), nil, nil).
		Export(HostCheckpoint)
	_, err := b.Instantiate(ctx)
	return err
}

func opFunc(op abi.Op) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		cs, _ := ctx.Value(callKey{}).(*callState)
		if cs == nil {
			stack[0] = api.EncodeI32(-int32(abi.CodeInternal))
			return
		}
		cs.pending = nil // an answer not taken is dropped by the next call
		ptr, size := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
		raw, ok := mod.Memory().Read(ptr, size)
		if !ok {
			stack[0] = api.EncodeI32(-int32(abi.CodeDecode))
			return
		}
		out, err := cs.host(op, append([]byte(nil), raw...))
		if err != nil {
			stack[0] = api.EncodeI32(-int32(abi.CodeOf(err)))
			return
		}
		cs.pending = out
		stack[0] = api.EncodeI32(int32(len(out)))
	}
}

// takeResult copies the waiting answer into the guest. A copy that does
// not fit in the guest's memory traps it, as an out-of-bounds store of its
// own would: otherwise it would go on decoding whatever its buffer held.
func takeResult(ctx context.Context, mod api.Module, stack []uint64) {
	cs, _ := ctx.Value(callKey{}).(*callState)
	if cs == nil || len(cs.pending) == 0 {
		return
	}
	ptr := api.DecodeU32(stack[0])
	if !mod.Memory().Write(ptr, cs.pending) {
		panic(fmt.Errorf("wasm: %s: the answer's %d bytes at %d are outside memory", HostTakeResult, len(cs.pending), ptr))
	}
	cs.pending = nil
}
