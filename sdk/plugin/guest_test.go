package plugin_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/plugin"
)

// placeTwo submits a plan of two allocations that point at their job and
// share their metrics' NodesAvailable map, as a pass's placements do.
type placeTwo struct{ allocs []*sdk.Allocation }

func (s *placeTwo) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	job := &sdk.Job{Namespace: "default", ID: "web"}
	byDC := map[string]int{"dc1": 2}
	s.allocs = nil
	for _, id := range []string{"a1", "a2"} {
		s.allocs = append(s.allocs, &sdk.Allocation{ID: id, NodeID: "n1", Job: job,
			Metrics: &sdk.AllocMetric{NodesEvaluated: 1, NodesAvailable: byDC}})
	}
	_, err := ctx.Planner.SubmitPlan(&sdk.Plan{EvalID: eval.ID, Job: job,
		NodeAllocation: map[string][]*sdk.Allocation{"n1": s.allocs}})
	return err
}

func TestGuest_PlanTravelsWithoutAllocJobsAndKeepsThem(t *testing.T) {
	for _, tt := range []struct {
		name       string
		hostABI    abi.Version
		wantPlaced int  // allocations sent apart from NodeAllocation (ABI 1.8)
		wantByDC   bool // their NodesAvailable sent once (ABI 1.10)
	}{
		{"1.10 host", abi.MakeVersion(1, 10), 2, true},
		{"1.9 host", abi.MakeVersion(1, 9), 2, false},
		{"1.7 host", abi.MakeVersion(1, 7), 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sched := &placeTwo{}
			g := plugin.NewGuest(plugin.Info{Name: "p"}, sched)
			var sent abi.PlanRequest
			host := func(op abi.Op, msg []byte) ([]byte, error) {
				if err := abi.Decode(msg, &sent); err != nil {
					t.Fatal(err)
				}
				return (&abi.PlanResponse{Result: &sdk.PlanResult{}}).MarshalMsg(nil)
			}
			req, err := (&abi.ProcessRequest{Eval: &sdk.Evaluation{ID: "e1"}, Sync: &abi.StateSync{Full: true, Index: 1},
				HostABI: uint32(tt.hostABI)}).MarshalMsg(nil)
			if err != nil {
				t.Fatal(err)
			}
			var resp abi.ProcessResponse
			if err := abi.Decode(g.Process(req, host), &resp); err != nil || resp.Code != abi.CodeOK {
				t.Fatalf("process: %v %+v", err, resp)
			}
			if len(sent.Placed) != tt.wantPlaced {
				t.Fatalf("%d allocations sent placed, want %d", len(sent.Placed), tt.wantPlaced)
			}
			if got := sent.NodesAvailable != nil; got != tt.wantByDC {
				t.Fatalf("NodesAvailable sent once: %v, want %v", got, tt.wantByDC)
			}
			if err := sent.Expand(); err != nil {
				t.Fatal(err)
			}
			if sent.Plan == nil || sent.Plan.Job == nil || len(sent.Plan.NodeAllocation["n1"]) != 2 {
				t.Fatalf("plan sent: %+v", sent.Plan)
			}
			for i, a := range sent.Plan.NodeAllocation["n1"] {
				if a.Job != nil || a.ID != sched.allocs[i].ID || a.NodeID != "n1" || a.Metrics.NodesAvailable["dc1"] != 2 {
					t.Fatalf("allocation sent: %+v, metrics %+v", a, a.Metrics)
				}
			}
			for _, a := range sched.allocs {
				if a.Job == nil {
					t.Fatal("submitting the plan took the allocation's job away")
				}
				if a.Metrics.NodesAvailable["dc1"] != 2 {
					t.Fatal("submitting the plan took the allocation's NodesAvailable away")
				}
			}
		})
	}
}

// updater updates its eval, then makes the calls in then, then returns err.
type updater struct {
	then []abi.Op
	err  error
}

func (s *updater) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	e := eval.Copy()
	e.Status = sdk.EvalStatusComplete
	if err := ctx.Planner.UpdateEval(e); err != nil {
		return err
	}
	e.Status = "changed after the update" // the deferred update is a copy
	for _, op := range s.then {
		switch op {
		case abi.OpCreateEval:
			if err := ctx.Planner.CreateEval(&sdk.Evaluation{ID: "next"}); err != nil {
				return err
			}
		case abi.OpUpdateEval:
			if err := ctx.Planner.UpdateEval(&sdk.Evaluation{ID: eval.ID, Status: sdk.EvalStatusFailed}); err != nil {
				return err
			}
		}
	}
	return s.err
}

func TestGuest_DefersTheLastEvalUpdateToHostsThatTakeIt(t *testing.T) {
	tests := []struct {
		name       string
		hostABI    abi.Version
		sched      *updater
		wantCalls  []abi.Op
		wantStatus string // of the deferred update; "" for none
		wantCode   abi.Code
	}{
		{"1.4 host", abi.MakeVersion(1, 4), &updater{}, nil, sdk.EvalStatusComplete, abi.CodeOK},
		{"older host", 0, &updater{}, []abi.Op{abi.OpUpdateEval}, "", abi.CodeOK},
		{"a call after the update sends it first", abi.MakeVersion(1, 4), &updater{then: []abi.Op{abi.OpCreateEval}},
			[]abi.Op{abi.OpUpdateEval, abi.OpCreateEval}, "", abi.CodeOK},
		{"a second update sends the first", abi.MakeVersion(1, 4), &updater{then: []abi.Op{abi.OpUpdateEval}},
			[]abi.Op{abi.OpUpdateEval}, sdk.EvalStatusFailed, abi.CodeOK},
		{"the update goes with an error", abi.MakeVersion(1, 4), &updater{err: sdk.ErrInvalidEval},
			nil, sdk.EvalStatusComplete, abi.CodeInvalidEval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := plugin.NewGuest(plugin.Info{Name: "p"}, tt.sched)
			var calls []abi.Op
			host := func(op abi.Op, msg []byte) ([]byte, error) {
				if op != abi.OpLog {
					calls = append(calls, op)
				}
				return (&abi.Status{}).MarshalMsg(nil)
			}
			req, err := (&abi.ProcessRequest{Eval: &sdk.Evaluation{ID: "e1"}, Sync: &abi.StateSync{Full: true, Index: 1},
				HostABI: uint32(tt.hostABI)}).MarshalMsg(nil)
			if err != nil {
				t.Fatal(err)
			}
			var resp abi.ProcessResponse
			if err := abi.Decode(g.Process(req, host), &resp); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(calls, tt.wantCalls) {
				t.Errorf("host calls %v, want %v", calls, tt.wantCalls)
			}
			got := ""
			if resp.UpdateEval != nil {
				got = resp.UpdateEval.Status
			}
			if got != tt.wantStatus || resp.Code != tt.wantCode {
				t.Errorf("deferred update %q, code %d; want %q, %d", got, resp.Code, tt.wantStatus, tt.wantCode)
			}
		})
	}
}

// checking is a scheduler whose configuration check does what check says.
type checking struct {
	sdk.Scheduler
	check func(map[string]string) error
}

func (s checking) CheckConfig(c map[string]string) error { return s.check(c) }

// TestGuest_CheckConfig: a scheduler's check answers the host's
// ConfigRequest (ABI 1.7): accepted, refused with its text, a panic
// contained; a scheduler without a check accepts anything.
func TestGuest_CheckConfig(t *testing.T) {
	var none sdk.SchedulerFunc = func(*sdk.Context, *sdk.Evaluation) error { return nil }
	var seen map[string]string
	tests := []struct {
		name  string
		sched sdk.Scheduler
		req   []byte // nil: a ConfigRequest of {"k": "v"}
		code  abi.Code
		msg   string
	}{
		{"no check", none, nil, abi.CodeOK, ""},
		{"accepted", checking{none, func(c map[string]string) error { seen = c; return nil }}, nil, abi.CodeOK, ""},
		{"refused", checking{none, func(c map[string]string) error { return sdk.CheckConfigKeys(c, "zone") }}, nil,
			abi.CodeConfigRefused, `unknown configuration key "k" (it takes "zone")`},
		{"refused without a reason", checking{none, func(map[string]string) error { return errors.New("") }}, nil,
			abi.CodeConfigRefused, "plugin p: configuration refused"},
		{"panic", checking{none, func(c map[string]string) error { var m map[string]int; m[c["k"]]++; return nil }}, nil,
			abi.CodeScheduler, "plugin p: panic in CheckConfig: assignment to entry in nil map"},
		{"undecodable", checking{none, func(map[string]string) error { t.Fatal("checked garbage"); return nil }},
			[]byte{0xc1}, abi.CodeDecode, "plugin: decode config request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			if req == nil {
				var err error
				if req, err = (&abi.ConfigRequest{Config: map[string]string{"k": "v"}}).MarshalMsg(nil); err != nil {
					t.Fatal(err)
				}
			}
			var st abi.Status
			if err := abi.Decode(plugin.NewGuest(plugin.Info{Name: "p"}, tt.sched).CheckConfig(req), &st); err != nil {
				t.Fatal(err)
			}
			if st.Code != tt.code || !strings.Contains(st.Message, tt.msg) {
				t.Fatalf("status %+v, want code %d saying %q", st, tt.code, tt.msg)
			}
		})
	}
	if seen["k"] != "v" {
		t.Fatalf("the check saw %v, want the request's configuration", seen)
	}
}
