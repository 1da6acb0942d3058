package plugin_test

import (
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/plugin"
)

// placeOne submits a plan of one allocation that points at its job.
type placeOne struct{ alloc *sdk.Allocation }

func (s *placeOne) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	job := &sdk.Job{Namespace: "default", ID: "web"}
	s.alloc = &sdk.Allocation{ID: "a1", NodeID: "n1", Job: job}
	_, err := ctx.Planner.SubmitPlan(&sdk.Plan{EvalID: eval.ID, Job: job,
		NodeAllocation: map[string][]*sdk.Allocation{"n1": {s.alloc}}})
	return err
}

func TestGuest_PlanTravelsWithoutAllocJobsAndKeepsThem(t *testing.T) {
	sched := &placeOne{}
	g := plugin.NewGuest(plugin.Info{Name: "p"}, sched)
	var sent *sdk.Plan
	host := func(op abi.Op, msg []byte) ([]byte, error) {
		var req abi.PlanRequest
		if err := abi.Decode(msg, &req); err != nil {
			t.Fatal(err)
		}
		sent = req.Plan
		return (&abi.PlanResponse{Result: &sdk.PlanResult{}}).MarshalMsg(nil)
	}
	req, err := (&abi.ProcessRequest{Eval: &sdk.Evaluation{ID: "e1"}, Sync: &abi.StateSync{Full: true, Index: 1}}).MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	var resp abi.ProcessResponse
	if err := abi.Decode(g.Process(req, host), &resp); err != nil || resp.Code != abi.CodeOK {
		t.Fatalf("process: %v %+v", err, resp)
	}
	if sent == nil || sent.Job == nil || sent.NodeAllocation["n1"][0].Job != nil {
		t.Fatalf("plan sent with its allocations' jobs: %+v", sent)
	}
	if sched.alloc.Job == nil {
		t.Fatal("submitting the plan took the allocation's job away")
	}
}
