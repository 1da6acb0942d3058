package abi_test

import (
	"reflect"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
)

func TestVersion_KeepsPlans(t *testing.T) {
	tests := []struct {
		name string
		v    abi.Version
		want bool
	}{
		{"1.0", abi.MakeVersion(1, 0), false},
		{"1.1", abi.MakeVersion(1, 1), false},
		{"1.2", abi.MakeVersion(1, 2), true},
		{"1.3", abi.MakeVersion(1, 3), true},
		{"2.2", abi.MakeVersion(2, 2), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.KeepsPlans(); got != tt.want {
				t.Fatalf("KeepsPlans = %v, want %v", got, tt.want)
			}
		})
	}
	if !abi.Current.KeepsPlans() {
		t.Fatal("this SDK's plugins do not keep their plans")
	}
}

// A 1.1 reader (no Whole, no Kept fields) skips what 1.2 adds.
func TestPlanResponse_OldReadersSkipWhole(t *testing.T) {
	b, err := (&abi.PlanResponse{Result: &sdk.PlanResult{AllocIndex: 4}, Whole: true}).MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	var st abi.Status // Code and Message, the fields every version shares
	if err := abi.Decode(b, &st); err != nil {
		t.Fatalf("a reader without Whole: %v", err)
	}
	var got abi.PlanResponse
	if err := abi.Decode(b, &got); err != nil || !got.Whole || got.Result.AllocIndex != 4 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	b, err = (&abi.StateSync{FromIndex: 1, Index: 2, Kept: &abi.Kept{Index: 2, Time: 3}}).MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	var sync abi.StateSync
	if err := abi.Decode(b, &sync); err != nil || sync.Kept == nil || *sync.Kept != (abi.Kept{Index: 2, Time: 3}) {
		t.Fatalf("sync round trip: %+v, %v", sync, err)
	}
}

func TestKeptAlloc_StampsACopy(t *testing.T) {
	job := &sdk.Job{ID: "j", Version: 4, JobModifyIndex: 9}
	a := &sdk.Allocation{ID: "a", Job: job, Metrics: &sdk.AllocMetric{}, NodeID: "n"}
	got := abi.KeptAlloc(a, job, &abi.Kept{Index: 12, Time: 34})
	want := sdk.Allocation{ID: "a", NodeID: "n", CreateIndex: 12, ModifyIndex: 12, AllocModifyIndex: 12,
		CreateTime: 34, ModifyTime: 34, JobVersion: 4, JobModifyIndex: 9}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("got %+v", got)
	}
	if a.CreateIndex != 0 || a.Job == nil || a.Metrics == nil {
		t.Fatal("KeptAlloc changed its argument")
	}
}
