package abi

import (
	"reflect"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

func TestVersion_KeepsPlans(t *testing.T) {
	tests := []struct {
		name string
		v    Version
		want bool
	}{
		{"1.0", MakeVersion(1, 0), false},
		{"1.1", MakeVersion(1, 1), false},
		{"1.2", MakeVersion(1, 2), true},
		{"1.3", MakeVersion(1, 3), true},
		{"2.2", MakeVersion(2, 2), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.KeepsPlans(); got != tt.want {
				t.Fatalf("KeepsPlans = %v, want %v", got, tt.want)
			}
		})
	}
	if !Current.KeepsPlans() {
		t.Fatal("this SDK's plugins do not keep their plans")
	}
}

// TestVersion_ChecksConfig: a host asks a plugin to check its
// configuration only from 1.7; an older one has no way to answer.
func TestVersion_ChecksConfig(t *testing.T) {
	tests := []struct {
		name string
		v    Version
		want bool
	}{
		{"1.0", MakeVersion(1, 0), false},
		{"1.6", MakeVersion(1, 6), false},
		{"1.7", MakeVersion(1, 7), true},
		{"1.8", MakeVersion(1, 8), true},
		{"2.7", MakeVersion(2, 7), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.ChecksConfig(); got != tt.want {
				t.Fatalf("ChecksConfig = %v, want %v", got, tt.want)
			}
		})
	}
	if !Current.ChecksConfig() {
		t.Fatal("this SDK's plugins cannot be asked to check their configuration")
	}
}

// TestVersion_TakesPlaced: a plugin sends PlanRequest.Placed only to a
// host that declares 1.8 or later; an older one would drop them unread.
func TestVersion_TakesPlaced(t *testing.T) {
	for _, tt := range []struct {
		v    Version
		want bool
	}{{MakeVersion(1, 7), false}, {MakeVersion(1, 8), true}, {MakeVersion(1, 9), true}, {MakeVersion(2, 8), false}, {0, false}} {
		if got := tt.v.TakesPlaced(); got != tt.want {
			t.Errorf("%s: TakesPlaced = %v, want %v", tt.v, got, tt.want)
		}
	}
	if !Current.TakesPlaced() {
		t.Fatal("this SDK's host does not expand placed allocations")
	}
}

// TestVersion_TakesNodesAvailable: a plugin sends PlanRequest.NodesAvailable
// in place of its placements' maps only to a host that declares 1.10 or
// later; an older one would leave their metrics without it.
func TestVersion_TakesNodesAvailable(t *testing.T) {
	for _, tt := range []struct {
		v    Version
		want bool
	}{{MakeVersion(1, 9), false}, {MakeVersion(1, 10), true}, {MakeVersion(1, 11), true}, {MakeVersion(2, 10), false}, {0, false}} {
		if got := tt.v.TakesNodesAvailable(); got != tt.want {
			t.Errorf("%s: TakesNodesAvailable = %v, want %v", tt.v, got, tt.want)
		}
	}
	if !Current.TakesNodesAvailable() {
		t.Fatal("this SDK's host does not fill placements' NodesAvailable")
	}
}

// A 1.1 reader (no Whole, no Kept fields) skips what 1.2 adds.
func TestPlanResponse_OldReadersSkipWhole(t *testing.T) {
	b, err := (&PlanResponse{Result: &sdk.PlanResult{AllocIndex: 4}, Whole: true}).MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	var st Status // Code and Message, the fields every version shares
	if err := Decode(b, &st); err != nil {
		t.Fatalf("a reader without Whole: %v", err)
	}
	var got PlanResponse
	if err := Decode(b, &got); err != nil || !got.Whole || got.Result.AllocIndex != 4 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	b, err = (&StateSync{FromIndex: 1, Index: 2, Kept: &Kept{Index: 2, Time: 3}}).MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	var sync StateSync
	if err := Decode(b, &sync); err != nil || sync.Kept == nil || *sync.Kept != (Kept{Index: 2, Time: 3}) {
		t.Fatalf("sync round trip: %+v, %v", sync, err)
	}
}

func TestKeptAlloc_StampsACopy(t *testing.T) {
	job := &sdk.Job{ID: "j", Version: 4, JobModifyIndex: 9}
	a := &sdk.Allocation{ID: "a", Job: job, Metrics: &sdk.AllocMetric{}, NodeID: "n"}
	got := KeptAlloc(a, job, &Kept{Index: 12, Time: 34})
	want := sdk.Allocation{ID: "a", NodeID: "n", CreateIndex: 12, ModifyIndex: 12, AllocModifyIndex: 12,
		CreateTime: 34, ModifyTime: 34, JobVersion: 4, JobModifyIndex: 9}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("got %+v", got)
	}
	if a.CreateIndex != 0 || a.Job == nil || a.Metrics == nil {
		t.Fatal("KeptAlloc changed its argument")
	}
}
