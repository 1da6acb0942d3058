package stack_test

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/mirror"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/drover-sched/drover/sdk/stack"
)

func TestStack_Assign(t *testing.T) {
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 4000, 4096))
	web := sdktest.Job("web", 1)
	web.TaskGroups[0].Networks = []*sdk.NetworkResource{{Mode: "host",
		ReservedPorts: []sdk.Port{{Label: "http", Value: 8080}}, DynamicPorts: []sdk.Port{{Label: "admin"}}}}
	h.UpsertJob(web)
	state := mirror.New()
	if err := state.Apply(h.FullSync(false)); err != nil {
		t.Fatal(err)
	}
	job := state.Job("default", "web")
	tg := job.TaskGroups[0]
	eval := &sdk.Evaluation{ID: "e1", Namespace: "default", JobID: "web", Priority: 50}
	ctx := sdk.NewContext(state, nil, nil, time.Unix(0, 0), nil, eval.ID)
	plan := stack.NewPlan(state, eval, job)
	st := stack.New(ctx, plan, job, stack.ConfigFor(job.Type, state.SchedulerConfig()))
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
