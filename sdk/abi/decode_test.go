package abi

import (
	"runtime"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/tinylib/msgp/msgp"
)

// A message a few bytes long that claims billions of elements is refused
// without allocating them.
func TestDecode_LyingCountsAllocateNothing(t *testing.T) {
	b := msgp.AppendMapHeader(nil, 1)
	b = msgp.AppendString(b, "Plan")
	b = msgp.AppendMapHeader(b, 1)
	b = msgp.AppendString(b, "NodeUpdate")
	b = msgp.AppendMapHeader(b, 1)
	b = msgp.AppendString(b, "n1")
	b = msgp.AppendArrayHeader(b, 1<<31)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var req PlanRequest
	err := Decode(b, &req)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a message claiming 2^31 stops was decoded")
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 {
		t.Fatalf("decoding a %d-byte message allocated %d bytes", len(b), grown)
	}
}

func TestDecode_RoundTripAndStrayBytes(t *testing.T) {
	in := &EvalRequest{Eval: &sdk.Evaluation{ID: "e1", Status: sdk.EvalStatusComplete}}
	b, err := in.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	var out EvalRequest
	if err := Decode(b, &out); err != nil || out.Eval.ID != "e1" {
		t.Fatalf("round trip: %v %+v", err, out.Eval)
	}
	if err := Decode(append(b, 0xc0), &out); err == nil {
		t.Fatal("stray bytes after the message were accepted")
	}
}
