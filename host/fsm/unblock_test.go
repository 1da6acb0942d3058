package fsm

import (
	"slices"
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

type commits []*Commit

func (c *commits) Committed(x *Commit) { *c = append(*c, x) }

// An allocation's node reporting it finished frees its room, and so
// unblocks its node's class: also when the servers had already stopped it,
// since a stopped allocation holds its resources until then (as schedulers
// count it).
func TestAllocClientUpdate_FinishedUnblocksItsNodesClass(t *testing.T) {
	for _, desired := range []string{sdk.AllocDesiredStatusRun, sdk.AllocDesiredStatusStop} {
		t.Run(desired, func(t *testing.T) {
			store, _ := state.NewStore()
			var seen commits
			f := New(store, &seen, zerolog.Nop())
			job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
				TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1, Tasks: []*sdk.Task{{Name: "t", Driver: "exec"}}}}}
			alloc := func(client string) *sdk.Allocation {
				return &sdk.Allocation{ID: "a1", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1",
					DesiredStatus: desired, ClientStatus: client}
			}
			steps := []interface {
				MarshalMsg([]byte) ([]byte, error)
				UnmarshalMsg([]byte) ([]byte, error)
			}{
				&NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"}},
				&JobRegisterRequest{Job: job},
				&ApplyPlanResultsRequest{Job: job, EvalID: "e1", AllocsUpdated: []*sdk.Allocation{alloc("")}},
				&AllocClientUpdateRequest{Allocs: []*sdk.Allocation{alloc(sdk.AllocClientStatusRunning)}},
			}
			for i, msg := range steps {
				if err := f.ApplyDecoded(uint64(i+1), msg); err != nil {
					t.Fatal(err)
				}
			}
			seen = nil
			if err := f.ApplyDecoded(uint64(len(steps)+1),
				&AllocClientUpdateRequest{Allocs: []*sdk.Allocation{alloc(sdk.AllocClientStatusComplete)}}); err != nil {
				t.Fatal(err)
			}
			class := store.Snapshot().Node("n1").ComputedClass
			if len(seen) != 1 || !slices.Equal(seen[0].Classes, []string{class}) {
				t.Fatalf("commits %+v, want class %s unblocked", seen, class)
			}
		})
	}
}
