package stack_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/mirror"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/drover-sched/drover/sdk/stack"
)

// portStack returns a stack over nodes (4,000 MHz, 4,096 MB each) for
// job web, whose group of count asks for static port 8080 and a dynamic
// port, with its plan, group and state.
func portStack(t *testing.T, nodes, count int) (*stack.Stack, *stack.Plan, *sdk.TaskGroup, *mirror.Mirror) {
	t.Helper()
	h := sdktest.New()
	for i := range nodes {
		h.UpsertNode(sdktest.Node(fmt.Sprintf("n%d", i+1), 4000, 4096))
	}
	web := sdktest.Job("web", count)
	web.TaskGroups[0].Networks = []*sdk.NetworkResource{{Mode: "host",
		ReservedPorts: []sdk.Port{{Label: "http", Value: 8080}}, DynamicPorts: []sdk.Port{{Label: "admin"}}}}
	h.UpsertJob(web)
	st, plan, state := webStack(t, h, "e1")
	return st, plan, state.Job("default", "web").TaskGroups[0], state
}

// webStack returns a stack placing job web for eval evalID over a mirror
// of h's cluster, with its plan and the mirror.
func webStack(tb testing.TB, h *sdktest.Harness, evalID string) (*stack.Stack, *stack.Plan, *mirror.Mirror) {
	tb.Helper()
	state := mirror.New()
	if err := state.Apply(h.FullSync(false)); err != nil {
		tb.Fatal(err)
	}
	job := state.Job("default", "web")
	eval := &sdk.Evaluation{ID: evalID, Namespace: "default", JobID: "web", Priority: 50}
	ctx := sdk.NewContext(state, nil, nil, time.Unix(0, 0), nil, eval.ID)
	plan := stack.NewPlan(state, eval, job)
	return stack.New(ctx, plan, job, stack.ConfigFor(job.Type, state.SchedulerConfig())), plan, state
}

func TestStack_Assign(t *testing.T) {
	st, plan, tg, state := portStack(t, 1, 1)
	n := state.Node("n1")

	r, dim := st.Assign(tg, n)
	if r == nil {
		t.Fatalf("Assign on an empty node: nil (%s)", dim)
	}
	if err := r.CheckCovers(tg); err != nil {
		t.Fatalf("assigned resources do not cover the group: %v", err)
	}
	// Once the plan places an allocation holding 8080 there, a second one
	// cannot have it.
	a := plan.NewAllocation()
	*a = sdk.Allocation{ID: "a0", Namespace: "default", JobID: "web", TaskGroup: tg.Name, Name: "web.web[0]",
		NodeID: "n1", AllocatedResources: r, DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending}
	plan.Place(a)
	if r, dim := st.Assign(tg, n); r != nil || !strings.Contains(dim, "8080") {
		t.Fatalf("second Assign = %+v, %q; want nil and a collision on 8080", r, dim)
	}
}

// What Select hands out for one placement is its own: ranking the next
// placement reuses the buffers the nodes were ranked with (assignBuf), and
// must change nothing of an option already chosen.
func TestStack_SelectedResourcesAreNotReused(t *testing.T) {
	st, plan, tg, state := portStack(t, 8, 3)
	nodes, _, byDC := stack.ReadyNodes(state, state.Job("default", "web"))
	st.SetNodes(nodes, byDC)

	var chosen []*sdk.AllocatedResources
	var snapshots []string
	for i := range 3 {
		o, m := st.Select(tg, stack.Options{})
		if o == nil {
			t.Fatalf("placement %d: no node (%+v)", i, m)
		}
		if m.NodesEvaluated < 2 {
			t.Fatalf("placement %d ranked %d node(s); the test needs several", i, m.NodesEvaluated)
		}
		a := plan.NewAllocation()
		*a = sdk.Allocation{ID: fmt.Sprintf("a%d", i), Namespace: "default", JobID: "web", TaskGroup: tg.Name,
			Name: sdk.AllocName("web", tg.Name, i), NodeID: o.Node.ID, AllocatedResources: o.Resources,
			DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending}
		plan.Place(a)
		b, _ := json.Marshal(o.Resources)
		chosen, snapshots = append(chosen, o.Resources), append(snapshots, string(b))
	}
	for i, r := range chosen {
		if b, _ := json.Marshal(r); string(b) != snapshots[i] {
			t.Fatalf("placement %d's resources changed after it was chosen:\n%s\nnow\n%s", i, snapshots[i], b)
		}
		for j := range i {
			if r.Shared.Networks[0] == chosen[j].Shared.Networks[0] || &r.Shared.Ports[0] == &chosen[j].Shared.Ports[0] ||
				r.Tasks["app"] == chosen[j].Tasks["app"] {
				t.Fatalf("placements %d and %d share their resources", j, i)
			}
		}
	}
}
