package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
)

const canaryJob = `
variable "image" {
  type    = string
  default = "web:1"
}

variable "replicas" {
  type    = number
  default = 2
}

job "canary" {
  datacenters = ["*"]

  update {
    max_parallel     = 1
    canary           = 1
    min_healthy_time = "1s"
    healthy_deadline = "1m"
  }

  group "app" {
    count = var.replicas

    task "app" {
      driver = "docker"
      config {
        image = var.image
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

// `job run` follows the first version's deployment to its end and the
// second's (a new image and one more allocation) until its canary waits
// for a promotion; `drover job promote` gives it, and the rest of the job
// rolls out to the new version, one allocation per index.
func TestE2E_DeploymentPromote(t *testing.T) {
	bin := droverBin(t)
	c := &cliRun{t: t, bin: bin, addr: startDevAgent(t, bin, 3)}
	path := writeFile(t, t.TempDir(), "canary.hcl", canaryJob)
	c.contains(c.run(0, "job", "run", path), "Monitoring deployment", `Group "app": 2 of 2 placed, 2 healthy`,
		"successful")
	c.contains(c.run(0, "job", "run", "-var", "image=web:2", "-var", "replicas=3", path), "Monitoring deployment", "1 canaries",
		"wait for a manual promotion")

	var ds []*sdk.Deployment
	var canaryDep *sdk.Deployment
	deadline := time.Now().Add(60 * time.Second)
	for canaryDep == nil {
		if err := json.Unmarshal([]byte(c.run(0, "deployment", "list", "-json")), &ds); err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.JobID == "canary" && d.JobVersion == 1 && d.TaskGroups["app"] != nil &&
				d.TaskGroups["app"].HealthyAllocs >= 1 && strings.Contains(d.StatusDescription, "promotion") {
				canaryDep = d
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no canary deployment waiting for promotion: %s", c.run(0, "deployment", "list"))
		}
		time.Sleep(250 * time.Millisecond)
	}
	c.contains(c.run(0, "deployment", "status", canaryDep.ID[:8]), "Canaries", "app")
	c.contains(c.run(0, "job", "promote", "canary"), "promoted", `finished with status "complete"`)

	for {
		var d sdk.Deployment
		if err := json.Unmarshal([]byte(c.run(0, "deployment", "status", "-json", canaryDep.ID)), &d); err != nil {
			t.Fatal(err)
		}
		if d.Status == sdk.DeploymentStatusSuccessful {
			break
		}
		if d.Status == sdk.DeploymentStatusFailed || time.Now().After(deadline) {
			t.Fatalf("deployment ended %s: %s", d.Status, d.StatusDescription)
		}
		time.Sleep(250 * time.Millisecond)
	}
	var st JobStatus
	if err := json.Unmarshal([]byte(c.run(0, "job", "status", "-json", "canary")), &st); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, a := range st.Allocations {
		if a.DesiredStatus == sdk.AllocDesiredStatusRun {
			if names[a.Name] {
				t.Errorf("two allocations named %s", a.Name)
			}
			names[a.Name] = true
			if a.JobVersion != 1 {
				t.Errorf("allocation %s still runs version %d", a.Name, a.JobVersion)
			}
		}
	}
	if len(names) != 3 {
		t.Errorf("%d allocations run, want 3", len(names))
	}
	if st.LatestDeployment == nil || st.LatestDeployment.ID != canaryDep.ID {
		t.Errorf("job status -json latest deployment %+v, want %s", st.LatestDeployment, canaryDep.ID)
	}
	c.contains(c.run(0, "job", "status", "canary"), "Latest Deployment", "Status      = successful", "Deployed")
	c.contains(c.run(0, "job", "deployments", "-latest", "canary"), canaryDep.ID[:8], "successful")
	c.contains(c.run(0, "job", "allocs", "-all", "canary"), "canary.app[2]", "stop")
	c.run(1, "deployment", "promote", canaryDep.ID)
	c.contains(c.run(1, "job", "promote", "canary"), "is successful")
	c.run(0, "system", "gc")
}
