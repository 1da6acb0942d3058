package plugin_test

import (
	"fmt"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/plugin"
)

// A Guest is what every transport drives: one encoded ProcessRequest in,
// planner calls out through the host function, one encoded
// ProcessResponse back. This is the whole ABI in a few lines.
func ExampleGuest_Process() {
	sched := sdk.SchedulerFunc(func(ctx *sdk.Context, eval *sdk.Evaluation) error {
		ctx.Logger.Info("scheduling", "nodes", len(ctx.State.Nodes()))
		done := eval.Copy()
		done.Status = sdk.EvalStatusComplete
		return ctx.Planner.UpdateEval(done)
	})
	g := plugin.NewGuest(plugin.Info{Name: "demo"}, sched)

	host := func(op abi.Op, msg []byte) ([]byte, error) {
		switch op {
		case abi.OpLog:
			var rec abi.LogRecord
			_, _ = rec.UnmarshalMsg(msg)
			fmt.Println("log:", rec.Message, rec.Attrs)
			return nil, nil
		case abi.OpUpdateEval:
			var req abi.EvalRequest
			_, _ = req.UnmarshalMsg(msg)
			fmt.Println("update_eval:", req.Eval.ID, req.Eval.Status)
			return (&abi.Status{}).MarshalMsg(nil)
		}
		return nil, abi.Err(abi.CodeUnknownOp, "not in this example")
	}

	req := &abi.ProcessRequest{
		Eval: &sdk.Evaluation{ID: "e1", JobID: "web", Status: sdk.EvalStatusPending},
		Sync: &abi.StateSync{Full: true, Index: 7, Nodes: []*sdk.Node{{ID: "n1"}, {ID: "n2"}}},
	}
	in, _ := req.MarshalMsg(nil)
	var resp abi.ProcessResponse
	_, _ = resp.UnmarshalMsg(g.Process(in, host))
	fmt.Println("code:", resp.Code, "mirror index:", resp.Index)
	// Output:
	// log: scheduling [eval_id e1 nodes 2]
	// update_eval: e1 complete
	// code: 0 mirror index: 7
}
