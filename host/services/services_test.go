package services

import (
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// A service's strings are interpolated as a Nomad client does; what is not
// known stays as written.
func TestServiceEnv_Interpolate(t *testing.T) {
	task := &sdk.Task{Name: "app", Meta: map[string]string{"Owner": "task"}}
	group := &sdk.TaskGroup{Name: "web", Meta: map[string]string{"tier": "group"}, Tasks: []*sdk.Task{task}}
	job := &sdk.Job{ID: "shop", Name: "shop", Meta: map[string]string{"tier": "job", "owner": "job"}, TaskGroups: []*sdk.TaskGroup{group}}
	alloc := &sdk.Allocation{ID: "0123456789abcdef", Name: "shop.web[3]", Namespace: "prod", Job: job}
	node := &sdk.Node{ID: "n1", Name: "host-1", Datacenter: "dc2", NodeClass: "big",
		Attributes: map[string]string{"kernel.name": "linux"}, Meta: map[string]string{"rack": "r4"}}
	inTask := &serviceEnv{alloc: alloc, node: node, group: group, task: task}
	inGroup := &serviceEnv{alloc: alloc, node: node, group: group}
	for _, c := range []struct {
		env      *serviceEnv
		in, want string
	}{
		{inTask, "${JOB}-${TASKGROUP}-${TASK}", "shop-web-app"},
		{inTask, "${BASE}", "shop-web-app"},
		{inGroup, "${BASE}", "shop-web"},
		{inGroup, "${TASK}", "${TASK}"},
		{inTask, "${NOMAD_JOB_NAME}.${NOMAD_GROUP_NAME}.${NOMAD_TASK_NAME}", "shop.web.app"},
		{inTask, "${NOMAD_ALLOC_INDEX}-${NOMAD_SHORT_ALLOC_ID}-${NOMAD_NAMESPACE}-${NOMAD_DC}", "3-01234567-prod-dc2"},
		{inTask, "${NOMAD_META_tier}/${NOMAD_META_OWNER}", "group/task"},
		{inGroup, "${NOMAD_META_owner}", "job"},
		{inTask, "${node.unique.name}-${node.class}-${attr.kernel.name}-${meta.rack}", "host-1-big-linux-r4"},
		{inTask, "${attr.nope}-${NOMAD_META_nope}-${env.X}", "${attr.nope}-${NOMAD_META_nope}-${env.X}"},
		{inTask, "plain", "plain"},
	} {
		if got := c.env.interpolate(c.in); got != c.want {
			t.Errorf("interpolate(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Canary allocations register their services' canary tags.
func TestOfAlloc_CanaryTags(t *testing.T) {
	svc := sdk.Opaque{"Provider": "nomad", "Name": "web", "PortLabel": "80", "Tags": []any{"live"}, "CanaryTags": []any{"canary"}}
	job := &sdk.Job{ID: "j", TaskGroups: []*sdk.TaskGroup{{Name: "g", Services: []sdk.Opaque{svc}}}}
	s, _ := state.NewStore()
	node := &sdk.Node{ID: "n1", Status: sdk.NodeStatusReady, Attributes: map[string]string{"unique.network.ip-address": "10.0.0.9"}}
	if err := s.Write(1, func(tx *state.Txn) error { return tx.UpsertNode(node) }); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		canary bool
		want   string
	}{{false, "live"}, {true, "canary"}} {
		a := &sdk.Allocation{ID: "a1", Namespace: "default", JobID: "j", TaskGroup: "g", NodeID: "n1", Job: job,
			ClientStatus: sdk.AllocClientStatusRunning, DeploymentStatus: &sdk.AllocDeploymentStatus{Canary: c.canary}}
		regs := OfAlloc(s.Snapshot(), a)
		if len(regs) != 1 || len(regs[0].Tags) != 1 || regs[0].Tags[0] != c.want || regs[0].Port != 80 || regs[0].Address != "10.0.0.9" {
			t.Errorf("canary %v: registrations %+v", c.canary, regs)
		}
	}
	// Not running: none.
	a := &sdk.Allocation{ID: "a2", NodeID: "n1", TaskGroup: "g", Job: job, ClientStatus: sdk.AllocClientStatusPending}
	if regs := OfAlloc(s.Snapshot(), a); len(regs) != 0 {
		t.Errorf("a pending allocation registers %+v", regs)
	}
}
