package httpapi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"
)

// Nomad's client finds objects by ID prefix (as Nomad's CLI does for
// `nomad status <prefix>`): per context, at most 20 with a truncation
// flag; Nomad's contexts without objects here match nothing.
func TestNomadClient_PrefixSearch(t *testing.T) {
	ts, s := newAPI(t, 2)
	c := nomadClient(t, ts.URL)
	for i := 0; i < 22; i++ {
		if _, _, err := s.RegisterJob(servertest.Job(fmt.Sprintf("batch-%02d", i), sdk.JobTypeBatch, 0, 100, 64)); err != nil {
			t.Fatal(err)
		}
	}
	web := servertest.Job("web", sdk.JobTypeService, 1, 100, 64)
	web.TaskGroups[0].Update = &sdk.UpdateStrategy{MaxParallel: 1, HealthCheck: "checks", Stagger: 30 * time.Second, MinHealthyTime: time.Second, HealthyDeadline: time.Minute,
		ProgressDeadline: 10 * time.Minute}
	eval, _, err := s.RegisterJob(web)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, eval)
	alloc := s.Store().Snapshot().AllocsByJob("default", "web")[0]

	res, _, err := c.Search().PrefixSearch("we", contexts.Jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Matches[contexts.Jobs]; len(got) != 1 || got[0] != "web" || res.Truncations[contexts.Jobs] {
		t.Fatalf("jobs with prefix we: %+v", res)
	}
	res, _, err = c.Search().PrefixSearch("batch-", contexts.Jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches[contexts.Jobs]) != 20 || !res.Truncations[contexts.Jobs] {
		t.Fatalf("22 batch jobs: %d matches, truncated %v; want 20 and true", len(res.Matches[contexts.Jobs]), res.Truncations[contexts.Jobs])
	}
	res, _, err = c.Search().PrefixSearch(alloc.ID[:8], contexts.All, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Matches[contexts.Allocs]; len(got) != 1 || got[0] != alloc.ID {
		t.Fatalf("all contexts for the allocation's prefix: %+v", res.Matches)
	}
	if _, ok := res.Matches[contexts.Nodes]; !ok {
		t.Fatalf("context all lacks nodes: %+v", res.Matches)
	}
	// Nomad's deployment context is singular ("deployment"), which its
	// CLI uses to resolve 'nomad status <deployment prefix>'.
	dep := s.Store().Snapshot().LatestDeployment("default", "web")
	if dep == nil {
		t.Fatal("web has no deployment")
	}
	res, _, err = c.Search().PrefixSearch(dep.ID[:6], contexts.Deployments, nil)
	if err != nil || len(res.Matches[contexts.Deployments]) != 1 || res.Matches[contexts.Deployments][0] != dep.ID {
		t.Fatalf("deployments with the prefix %s: %+v %v", dep.ID[:6], res, err)
	}
	// A group's scaling policy, by its ID's prefix.
	scaled := servertest.Job("scaled", sdk.JobTypeService, 1, 100, 64)
	scaled.TaskGroups[0].Scaling = &sdk.ScalingPolicy{Type: "horizontal", Max: 3, Enabled: true}
	if _, _, err := s.RegisterJob(scaled); err != nil {
		t.Fatal(err)
	}
	policy := s.Store().Snapshot().Job("default", "scaled").TaskGroups[0].Scaling
	res, _, err = c.Search().PrefixSearch(policy.ID[:6], contexts.ScalingPolicies, nil)
	if err != nil || len(res.Matches[contexts.ScalingPolicies]) != 1 || res.Matches[contexts.ScalingPolicies][0] != policy.ID {
		t.Fatalf("scaling policies with the prefix %s: %+v %v", policy.ID[:6], res, err)
	}
	res, _, err = c.Search().PrefixSearch("", contexts.Plugins, &api.QueryOptions{Namespace: "*"})
	if err != nil || len(res.Matches) != 0 {
		t.Fatalf("plugins (none here): %+v %v", res, err)
	}
}
