package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
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
	// Followed, as Nomad's deployment status -monitor does, until it is over.
	c.contains(c.run(0, "deployment", "status", "-monitor", canaryDep.ID[:8]), "Monitoring deployment",
		`Deployment "`+canaryDep.ID[:8]+`" successful`)
	c.run(1, "deployment", "status", "-monitor", "-json", canaryDep.ID[:8])

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

const revertJob = `
variable "start_error" {
  default = ""
}

job "flaky" {
  datacenters = ["*"]

  # No progress deadline: the first unhealthy allocation fails the
  # deployment, as in Nomad (with one, an allocation with reschedules left
  # is replaced, and the deployment fails only at the deadline).
  update {
    max_parallel      = 1
    min_healthy_time  = "1s"
    healthy_deadline  = "1m"
    progress_deadline = "0"
    auto_revert       = true
  }

  group "g" {
    count = 2

    reschedule {
      delay          = "5s"
      delay_function = "constant"
      unlimited      = true
    }

    task "t" {
      driver = "mock_driver"
      config {
        start_error = var.start_error
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

const crashingBatchJob = `
job "crashing" {
  datacenters = ["*"]
  type        = "batch"

  group "g" {
    reschedule {
      attempts       = 1
      interval       = "1h"
      delay          = "5s"
      delay_function = "constant"
    }

    # Restarted once on its node before the allocation fails.
    restart {
      attempts = 1
      delay    = "1s"
      interval = "1m"
      mode     = "fail"
    }

    task "t" {
      driver = "mock_driver"
      config {
        run_for   = "1s"
        exit_code = 3
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

// A version whose allocations fail to start fails its deployment, which
// auto-reverts to the last stable version: the job ends on a new version
// with the old spec, its deployment successful, every eval complete. A
// failing batch allocation is restarted on its node as its restart block
// says, then rescheduled after its delay, once.
func TestE2E_FailedDeploymentRevertsAndFailedAllocationsReschedule(t *testing.T) {
	bin := droverBin(t)
	c := &cliRun{t: t, bin: bin, addr: startDevAgent(t, bin, 3)}
	dir := t.TempDir()
	flaky := writeFile(t, dir, "flaky.hcl", revertJob)
	c.contains(c.run(0, "job", "run", flaky), "successful")
	c.contains(c.run(1, "job", "run", "-var", "start_error=no image", flaky), "rolling back to job version 0")
	c.run(0, "job", "run", "-detach", writeFile(t, dir, "crashing.hcl", crashingBatchJob))

	deadline := time.Now().Add(60 * time.Second)
	for {
		var st JobStatus
		if err := json.Unmarshal([]byte(c.run(0, "job", "status", "-json", "flaky")), &st); err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, a := range st.Allocations {
			if a.DesiredStatus == sdk.AllocDesiredStatusRun && a.ClientStatus == sdk.AllocClientStatusRunning && a.JobVersion == 2 {
				running++
			}
		}
		d := st.LatestDeployment
		if running == 2 && d != nil && d.JobVersion == 2 && d.Status == sdk.DeploymentStatusSuccessful {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no successful rollback to version 2:\n%s", c.run(0, "job", "status", "-evals", "-all-allocs", "flaky"))
		}
		time.Sleep(250 * time.Millisecond)
	}
	if !strings.Contains(c.run(0, "job", "history", "flaky"), "Version     = 2") {
		t.Fatal("the rollback registered no version 2")
	}

	for {
		var allocs []*sdk.AllocationListStub
		if err := json.Unmarshal([]byte(c.run(0, "job", "allocs", "-all", "-json", "crashing")), &allocs); err != nil {
			t.Fatal(err)
		}
		failed := 0
		for _, a := range allocs {
			if a.ClientStatus == sdk.AllocClientStatusFailed {
				failed++
			}
		}
		if failed == 2 && len(allocs) == 2 {
			break
		}
		if failed > 2 || len(allocs) > 2 || time.Now().After(deadline) {
			t.Fatalf("want the failed allocation rescheduled once, then given up:\n%s", c.run(0, "job", "allocs", "-all", "crashing"))
		}
		time.Sleep(250 * time.Millisecond)
	}
	// Every eval completed at its first attempt: none was nacked (a plan
	// the host refused, a follow-up it would not take) and retried.
	for _, job := range []string{"flaky", "crashing"} {
		var st JobStatus
		if err := json.Unmarshal([]byte(c.run(0, "job", "status", "-json", job)), &st); err != nil {
			t.Fatal(err)
		}
		for _, e := range st.Evaluations {
			var full httpapi.EvalResponse
			if err := json.Unmarshal([]byte(c.run(0, "eval", "status", "-json", e.ID)), &full); err != nil {
				t.Fatal(err)
			}
			var phases []string
			for _, ph := range full.History {
				phases = append(phases, ph.Phase)
			}
			delayed := slices.Index(phases, "delayed")
			if full.Status != sdk.EvalStatusComplete || (delayed >= 0 && (e.WaitUntil.IsZero() || delayed > 1)) {
				t.Errorf("%s: eval %s (%s) is %s after %v", job, shortID(e.ID), e.TriggeredBy, full.Status, phases)
			}
		}
	}
}
