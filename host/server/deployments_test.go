package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
)

// rollingJob is a service job of count tasks rolled out max_parallel 1,
// with canaries and auto promote/revert as asked; version makes its task
// config (a destructive change) differ between versions. It does not
// reschedule: an unhealthy allocation fails its deployment at once, as
// in Nomad (with reschedules left, the deployment waits for a
// replacement: TestDeployments_UnhealthyAllocationIsReplacedWithinTheDeployment).
func rollingJob(count, canary int, autoPromote, autoRevert bool, version string) *sdk.Job {
	j := servertest.Job("web", sdk.JobTypeService, count, 100, 64)
	tg := j.TaskGroups[0]
	tg.ReschedulePolicy = &sdk.ReschedulePolicy{}
	tg.Tasks[0].Config = sdk.Opaque{"image": "web:" + version}
	tg.Update = &sdk.UpdateStrategy{MaxParallel: 1, Canary: canary, AutoPromote: autoPromote, AutoRevert: autoRevert,
		HealthCheck: "checks", Stagger: 30 * time.Second,
		MinHealthyTime: time.Second, HealthyDeadline: time.Minute, ProgressDeadline: 10 * time.Minute}
	return j
}

// reportHealth reports every live, not yet healthy allocation of the job
// running and healthy (or unhealthy), as nodes do after min_healthy_time.
func reportHealth(t *testing.T, s *server.Server, healthy bool) int {
	t.Helper()
	var updates []server.AllocUpdate
	for _, a := range s.Store().Snapshot().AllocsByJob("default", "web") {
		if a.TerminalStatus() || a.DeploymentID == "" || a.DeploymentStatus.IsHealthy() || a.DeploymentStatus.IsUnhealthy() {
			continue
		}
		h := healthy
		updates = append(updates, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusRunning,
			DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &h, Timestamp: time.Now()}})
	}
	if len(updates) == 0 {
		return 0
	}
	if _, err := s.UpdateAllocsFromClient(updates); err != nil {
		t.Fatal(err)
	}
	return len(updates)
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// rollOut reports health until the job's latest deployment is no longer
// running, and returns it.
func rollOut(t *testing.T, s *server.Server, healthy bool) *sdk.Deployment {
	t.Helper()
	var d *sdk.Deployment
	waitFor(t, "the deployment to finish", func() bool {
		reportHealth(t, s, healthy)
		d = s.Store().Snapshot().LatestDeployment("default", "web")
		return d != nil && d.Status != sdk.DeploymentStatusRunning
	})
	return d
}

func liveVersions(s *server.Server) map[uint64]int {
	out := map[uint64]int{}
	for _, a := range s.Store().Snapshot().AllocsByJob("default", "web") {
		if !a.TerminalStatus() {
			out[a.JobVersion]++
		}
	}
	return out
}

func TestDeployments_RollingUpdateCanaryAutoPromoteAndRevert(t *testing.T) {
	s := servertest.New(t, nil, nil)
	for i := 0; i < 3; i++ {
		if _, _, err := s.RegisterNode(servertest.Node(i, 4000, 8192)); err != nil {
			t.Fatal(err)
		}
	}

	// v0: the first registration is a deployment too; once its allocations
	// are healthy it succeeds and v0 becomes stable.
	evalID, _, err := s.RegisterJob(rollingJob(3, 0, false, true, "v0"))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	if d := rollOut(t, s, true); d.Status != sdk.DeploymentStatusSuccessful {
		t.Fatalf("v0 deployment = %s (%s)", d.Status, d.StatusDescription)
	}
	waitFor(t, "v0 to be marked stable", func() bool {
		v := s.Store().Snapshot().JobVersion("default", "web", 0)
		return v != nil && v.Stable
	})

	// v1: a destructive update rolls one allocation at a time.
	evalID, _, err = s.RegisterJob(rollingJob(3, 0, false, true, "v1"))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	if got := liveVersions(s); got[1] != 1 || got[0] != 2 {
		t.Fatalf("after the first step: versions %v, want one v1 (max_parallel 1)", got)
	}
	if d := rollOut(t, s, true); d.Status != sdk.DeploymentStatusSuccessful || d.JobVersion != 1 {
		t.Fatalf("v1 deployment = %s (%s)", d.Status, d.StatusDescription)
	}
	if got := liveVersions(s); got[1] != 3 {
		t.Fatalf("after v1 rolled out: versions %v", got)
	}
	waitFor(t, "v1 to be marked stable", func() bool { return s.Store().Snapshot().JobVersion("default", "web", 1).Stable })

	// v2: one canary first, promoted automatically once healthy.
	evalID, _, err = s.RegisterJob(rollingJob(3, 1, true, true, "v2"))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	d := s.Store().Snapshot().LatestDeployment("default", "web")
	if st := d.TaskGroups["g"]; st.DesiredCanaries != 1 || len(st.PlacedCanaries) != 1 || st.Promoted {
		t.Fatalf("v2 canary state %+v", st)
	}
	if got := liveVersions(s); got[2] != 1 || got[1] != 3 {
		t.Fatalf("with the canary: versions %v, want the canary beside the three v1", got)
	}
	if d := rollOut(t, s, true); d.Status != sdk.DeploymentStatusSuccessful || !d.TaskGroups["g"].Promoted {
		t.Fatalf("v2 deployment = %s (%s) %+v", d.Status, d.StatusDescription, d.TaskGroups["g"])
	}
	if got := liveVersions(s); got[2] != 3 || len(got) != 1 {
		t.Fatalf("after v2 rolled out: versions %v", got)
	}
	waitFor(t, "v2 to be marked stable", func() bool { return s.Store().Snapshot().JobVersion("default", "web", 2).Stable })

	// v3: its allocations come up unhealthy: the deployment fails and the
	// job reverts to the latest stable version (v2's spec, as v4).
	evalID, _, err = s.RegisterJob(rollingJob(3, 0, false, true, "v3"))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	v3 := s.Store().Snapshot().LatestDeployment("default", "web")
	if v3 == nil || v3.JobVersion != 3 {
		t.Fatalf("v3 deployment = %+v", v3)
	}
	rollOut(t, s, false)
	// The revert's own deployment may fail as well before rollOut looks:
	// v3's is read by its ID.
	if d = s.Store().Snapshot().Deployment(v3.ID); d.Status != sdk.DeploymentStatusFailed {
		t.Fatalf("v3 deployment = %s", d.Status)
	}
	var j *sdk.Job
	defer func() {
		if t.Failed() && j != nil {
			t.Logf("job: version %d config %v", j.Version, j.TaskGroups[0].Tasks[0].Config)
		}
	}()
	waitFor(t, "the revert to v2's spec", func() bool {
		j = s.Store().Snapshot().Job("default", "web")
		return j.Version == 4 && j.TaskGroups[0].Tasks[0].Config["image"] == "web:v2"
	})
	if d.StatusDescription != sdk.DeploymentDescriptionFailedAllocations+" - rolling back to job version 2" {
		t.Fatalf("failed deployment says %q", d.StatusDescription)
	}

	// v4, v2's spec, fails too: reverting to v2 would change nothing (the
	// store keeps a job registered with the same spec as it is), and the
	// deployment says so rather than that it rolls back, as Nomad's does.
	waitFor(t, "v4's deployment to fail", func() bool {
		reportHealth(t, s, false)
		d = s.Store().Snapshot().LatestDeployment("default", "web")
		return d != nil && d.JobVersion == 4 && d.Status == sdk.DeploymentStatusFailed
	})
	want := sdk.DeploymentDescriptionFailedAllocations + " - not rolling back to stable job version 2 as current job has same specification"
	if d.StatusDescription != want {
		t.Fatalf("failed deployment says %q, want %q", d.StatusDescription, want)
	}
}

func TestDeployments_PromoteByHand(t *testing.T) {
	s := servertest.New(t, nil, nil)
	for i := 0; i < 2; i++ {
		if _, _, err := s.RegisterNode(servertest.Node(i, 4000, 8192)); err != nil {
			t.Fatal(err)
		}
	}
	evalID, _, _ := s.RegisterJob(rollingJob(2, 0, false, false, "v0"))
	servertest.WaitForEval(t, s, evalID)
	rollOut(t, s, true)
	evalID, _, _ = s.RegisterJob(rollingJob(2, 1, false, false, "v1"))
	servertest.WaitForEval(t, s, evalID)
	d := s.Store().Snapshot().LatestDeployment("default", "web")
	if d.StatusDescription != sdk.DeploymentDescriptionRunningNeedsPromotion {
		t.Fatalf("description %q", d.StatusDescription)
	}
	if _, _, err := s.PromoteDeployment(d.ID, nil); err == nil {
		t.Fatal("promoted with an unhealthy canary")
	}
	reportHealth(t, s, true)
	waitFor(t, "the canary to be healthy", func() bool {
		_, _, err := s.PromoteDeployment(d.ID, nil)
		return err == nil
	})
	if d := rollOut(t, s, true); d.Status != sdk.DeploymentStatusSuccessful {
		t.Fatalf("deployment = %s (%s)", d.Status, d.StatusDescription)
	}
}

// While a canary of v1 awaits promotion, the allocation of v0 lost with its
// node is replaced by v0: the plugin names the kept version in its
// placement, the applier validates it against that version and the state
// links the new allocation to it.
func TestDeployment_LostAllocWhileCanaryingKeepsTheDeployedVersion(t *testing.T) {
	s := servertest.New(t, servertest.NativeBuiltins(t, 1), func(c *server.Config) { c.NumWorkers = 1 })
	for i := 0; i < 4; i++ {
		if _, _, err := s.RegisterNode(servertest.Node(i, 4000, 8192)); err != nil {
			t.Fatal(err)
		}
	}
	evalID, _, err := s.RegisterJob(rollingJob(3, 1, false, false, "v0"))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	if d := rollOut(t, s, true); d.Status != sdk.DeploymentStatusSuccessful {
		t.Fatalf("v0 deployment = %s (%s)", d.Status, d.StatusDescription)
	}
	v0 := s.Store().Snapshot().JobVersion("default", "web", 0)
	evalID, _, err = s.RegisterJob(rollingJob(3, 1, false, false, "v1"))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	if got := liveVersions(s); got[0] != 3 || got[1] != 1 {
		t.Fatalf("after the canary: versions %v, want three v0 and a v1 canary", got)
	}

	var victim *sdk.Allocation
	for _, a := range s.Store().Snapshot().AllocsByJob("default", "web") {
		if !a.TerminalStatus() && a.JobVersion == 0 {
			victim = a
			break
		}
	}
	if _, err := s.UpdateNodeStatus(victim.NodeID, sdk.NodeStatusDown, "test"); err != nil {
		t.Fatal(err)
	}
	var repl *sdk.Allocation
	waitFor(t, "the lost allocation to be replaced", func() bool {
		repl = s.Store().Snapshot().Alloc(s.Store().Snapshot().Alloc(victim.ID).NextAllocation)
		return repl != nil
	})
	if repl.JobVersion != 0 || repl.Job == nil || repl.Job.JobModifyIndex != v0.JobModifyIndex ||
		repl.Job.TaskGroups[0].Tasks[0].Config["image"] != "web:v0" {
		t.Fatalf("the replacement runs version %d (%+v), want v0", repl.JobVersion, repl.Job)
	}
	if got := liveVersions(s); got[0] != 3 || got[1] != 1 {
		t.Fatalf("after the replacement: versions %v, want three v0 and a v1 canary", got)
	}
}

// An allocation that fails unhealthy in a deployment with a progress
// deadline and reschedule attempts left does not fail the deployment, as
// in Nomad: the watcher marks it for rescheduling and the scheduler
// replaces it within the deployment. The replacement failing with no
// attempt left fails the deployment.
func TestDeployments_UnhealthyAllocationIsReplacedWithinTheDeployment(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if _, _, err := s.RegisterNode(servertest.Node(0, 4000, 8192)); err != nil {
		t.Fatal(err)
	}
	job := rollingJob(1, 0, false, false, "v0")
	job.TaskGroups[0].ReschedulePolicy = &sdk.ReschedulePolicy{Attempts: 1, Interval: time.Hour, Delay: 5 * time.Second,
		DelayFunction: sdk.DelayFunctionConstant}
	evalID, _, err := s.RegisterJob(job)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	fail := func(a *sdk.Allocation) {
		t.Helper()
		f := false
		if _, err := s.UpdateAllocsFromClient([]server.AllocUpdate{{ID: a.ID, ClientStatus: sdk.AllocClientStatusFailed,
			DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &f, Timestamp: time.Now()}}}); err != nil {
			t.Fatal(err)
		}
	}
	first := s.Store().Snapshot().AllocsByJob("default", "web")[0]
	fail(first)
	var next *sdk.Allocation
	waitFor(t, "the failed allocation's replacement", func() bool {
		for _, a := range s.Store().Snapshot().AllocsByJob("default", "web") {
			if a.PreviousAllocation == first.ID {
				next = a
			}
		}
		return next != nil
	})
	snap := s.Store().Snapshot()
	d := snap.Deployment(first.DeploymentID)
	if d.Status != sdk.DeploymentStatusRunning || next.DeploymentID != d.ID || !snap.Alloc(first.ID).DesiredTransition.ShouldReschedule() {
		t.Fatalf("deployment %s, replacement in %q, marked %+v", d.Status, next.DeploymentID, snap.Alloc(first.ID).DesiredTransition)
	}
	fail(next)
	waitFor(t, "the deployment to fail", func() bool {
		return s.Store().Snapshot().Deployment(d.ID).Status == sdk.DeploymentStatusFailed
	})
	if got := s.Store().Snapshot().Deployment(d.ID).StatusDescription; got != sdk.DeploymentDescriptionFailedAllocations {
		t.Fatalf("failed deployment says %q", got)
	}
}

// TestDeployments_FailingReplacementsDoNotPostponeTheProgressDeadline: as
// in Nomad, a group's progress deadline starts with its first placement and
// only healthy allocations push it out. A rollout whose allocations keep
// failing, each replaced within the deployment (reschedules without end),
// fails at its deadline and auto-reverts; it used to run on, each
// replacement's placement pushing the deadline out again.
func TestDeployments_FailingReplacementsDoNotPostponeTheProgressDeadline(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if _, _, err := s.RegisterNode(servertest.Node(0, 4000, 8192)); err != nil {
		t.Fatal(err)
	}
	// A replacement every 5 s (the shortest reschedule delay there is):
	// one or two within the deadline.
	const deadline = 8 * time.Second
	job := func(version string) *sdk.Job {
		j := rollingJob(1, 0, false, true, version)
		tg := j.TaskGroups[0]
		tg.Update.ProgressDeadline, tg.Update.HealthyDeadline = deadline, 2*time.Second
		tg.Tasks[0].KillTimeout = time.Second
		tg.ReschedulePolicy = &sdk.ReschedulePolicy{Unlimited: true, Delay: 5 * time.Second,
			DelayFunction: sdk.DelayFunctionConstant}
		return j
	}
	evalID, _, err := s.RegisterJob(job("v0"))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	if d := rollOut(t, s, true); d.Status != sdk.DeploymentStatusSuccessful {
		t.Fatalf("v0's deployment %s", d.Status)
	}
	evalID, _, err = s.RegisterJob(job("v1"))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	v1 := s.Store().Snapshot().LatestDeployment("default", "web").ID
	// Every allocation of v1 fails as it starts: unhealthy, so the
	// watcher has it replaced within the deployment.
	var d *sdk.Deployment
	waitFor(t, "v1's deployment to fail", func() bool {
		snap := s.Store().Snapshot()
		var updates []server.AllocUpdate
		for _, a := range snap.AllocsByDeployment(v1) {
			if !a.TerminalStatus() && !a.DeploymentStatus.HasHealth() {
				no := false
				updates = append(updates, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusFailed,
					DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &no, Timestamp: time.Now()}})
			}
		}
		if len(updates) > 0 {
			if _, err := s.UpdateAllocsFromClient(updates); err != nil {
				t.Fatal(err)
			}
		}
		d = snap.Deployment(v1)
		return d.Status == sdk.DeploymentStatusFailed
	})
	if !strings.HasPrefix(d.StatusDescription, sdk.DeploymentDescriptionProgressDeadline) {
		t.Fatalf("v1's deployment failed with %q", d.StatusDescription)
	}
	s1 := d.TaskGroups["g"]
	if s1.PlacedAllocs < 2 {
		t.Fatalf("v1's deployment placed %d allocations: no replacement was placed within it", s1.PlacedAllocs)
	}
	var first int64
	for _, a := range s.Store().Snapshot().AllocsByDeployment(d.ID) {
		if first == 0 || a.CreateTime < first {
			first = a.CreateTime
		}
	}
	if want := time.Unix(0, first).Add(deadline); !s1.RequireProgressBy.Equal(want) {
		t.Fatalf("progress deadline %v, want the first placement's plus %s (%v)", s1.RequireProgressBy, deadline, want)
	}
	waitFor(t, "the revert to v0", func() bool {
		j := s.Store().Snapshot().Job("default", "web")
		return j.Version == 2 && j.TaskGroups[0].Tasks[0].Config["image"] == "web:v0"
	})
}
