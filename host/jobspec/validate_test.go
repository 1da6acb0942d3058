package jobspec_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/jobspec"
	"github.com/drover-sched/drover/sdk"
)

// goJob is a job built in Go, as tests and simulators build them.
func goJob() *sdk.Job {
	return &sdk.Job{ID: "x", TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1,
		Tasks: []*sdk.Task{{Name: "t", Driver: "exec"}}}}}
}

func TestCanonicalize_MakesGoJobsValidAndIsIdempotent(t *testing.T) {
	for _, typ := range []string{"", sdk.JobTypeService, sdk.JobTypeBatch, sdk.JobTypeSystem, sdk.JobTypeSysBatch} {
		t.Run(cmpOr(typ, "untyped"), func(t *testing.T) {
			job := goJob()
			job.Type = typ
			job.Update = sdk.UpdateStrategy{MaxParallel: 1}
			if typ == sdk.JobTypeBatch || typ == sdk.JobTypeSysBatch {
				job.Update = sdk.UpdateStrategy{}
			}
			jobspec.Canonicalize(job)
			if err := jobspec.Validate(job); err != nil {
				t.Fatal(err)
			}
			before := *job.TaskGroups[0]
			jobspec.Canonicalize(job)
			after := *job.TaskGroups[0]
			if before.RestartPolicy != after.RestartPolicy || before.EphemeralDisk != after.EphemeralDisk || before.Update != after.Update {
				t.Fatal("a second Canonicalize changed the job")
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestValidate_ProblemsNameTheirPart(t *testing.T) {
	cases := []struct {
		name   string
		modify func(*sdk.Job)
		path   string
		want   string
	}{
		{"negative count", func(j *sdk.Job) { j.TaskGroups[0].Count = -1 }, `group "g": count`, "must not be negative"},
		{"missing driver", func(j *sdk.Job) { j.TaskGroups[0].Tasks[0].Driver = "" }, `group "g": task "t": driver`, "driver is required"},
		{"update on batch", func(j *sdk.Job) {
			j.Type = sdk.JobTypeBatch
			j.TaskGroups[0].Update = &sdk.UpdateStrategy{MaxParallel: 1, Stagger: time.Second, HealthCheck: "checks", HealthyDeadline: time.Minute}
		}, `group "g": update`, "batch jobs do not roll out updates"},
		{"bad cron", func(j *sdk.Job) {
			j.Type = sdk.JobTypeBatch
			j.Periodic = &sdk.PeriodicConfig{Enabled: true, Spec: "not cron"}
		}, "periodic: cron", "is not a cron expression"},
		{"reversed month range", func(j *sdk.Job) {
			j.Type = sdk.JobTypeBatch
			j.Periodic = &sdk.PeriodicConfig{Enabled: true, Specs: []string{"0 0 * * *", "0 0 * DEC-JAN *"}}
		}, "periodic: cron", `"0 0 * DEC-JAN *" is not a cron expression: a field matches no value`},
		// cronexpr takes 10-5 in the seconds field, and its Next then
		// scans every day to 2099 (11 s): refused before it is run.
		{"reversed seconds range", func(j *sdk.Job) {
			j.Type = sdk.JobTypeBatch
			j.Periodic = &sdk.PeriodicConfig{Enabled: true, Spec: "10-5/2 * * * * * *"}
		}, "periodic: cron", "the range 10-5 is written backwards"},
		{"priority", func(j *sdk.Job) { j.Priority = 101 }, "priority", "between 1 and 100"},
		{"no groups", func(j *sdk.Job) { j.TaskGroups = nil }, "job", "at least one group"},
		{"bad type", func(j *sdk.Job) { j.Type = "cron" }, "type", "is not a job type"},
		{"core namespace", func(j *sdk.Job) { j.Namespace = sdk.CoreJobNamespace }, "namespace", `"-" is reserved for the core scheduler's evaluations`},
		{"null in namespace", func(j *sdk.Job) { j.Namespace = "a\x00b" }, "namespace", "contains a null character"},
		{"every namespace", func(j *sdk.Job) { j.Namespace = "*" }, "namespace", `"*" is not a namespace name`},
		{"a glob namespace", func(j *sdk.Job) { j.Namespace = "prod-*" }, "namespace", `"prod-*" is not a namespace name`},
		{"namespace with a dot", func(j *sdk.Job) { j.Namespace = "a.b" }, "namespace", "letters, digits and dashes"},
		{"affinity on system job", func(j *sdk.Job) {
			j.Type = sdk.JobTypeSystem
			j.Affinities = []*sdk.Affinity{{LTarget: "${node.class}", RTarget: "x", Operand: "=", Weight: 10}}
		}, "affinity[0]", "may not have affinities"},
		{"parameterized service", func(j *sdk.Job) { j.ParameterizedJob = &sdk.ParameterizedJobConfig{} }, "parameterized", "only batch and sysbatch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := goJob()
			tc.modify(job)
			jobspec.Canonicalize(job)
			err := jobspec.Validate(job)
			var ve *jobspec.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, jobspec.ErrInvalidJob) {
				t.Fatalf("error %v is not a ValidationError", err)
			}
			for _, p := range ve.Problems {
				if p.Path.String() == tc.path && strings.Contains(p.Err.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("no problem at %q saying %q in:\n%v", tc.path, tc.want, err)
		})
	}
}

// TestValidate_ExecutionBlocksAccepted shows the valid form of each rule
// on the blocks Drover keeps opaque (templates, artifacts, volumes,
// services), as Nomad accepts them; testdata/bad has the invalid forms.
func TestValidate_ExecutionBlocksAccepted(t *testing.T) {
	cases := []struct {
		name, group, task string
	}{
		{"template with a destination", "", `
      template {
        data        = "x"
        destination = "local/x"
      }`},
		{"artifact checksums", "", `
      artifact {
        source = "https://example.com/a.tgz"
        options { checksum = "md5:d41d8cd98f00b204e9800998ecf8427e" }
      }
      artifact {
        source = "https://example.com/b.tgz"
        options { checksum = " sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709 " }
      }
      artifact {
        source = "https://example.com/c.tgz"
        options { checksum = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" }
      }
      artifact {
        source = "https://example.com/d.tgz"
        options { checksum = "sha512:${NOMAD_META_digest}" }
      }`},
		{"volume mounts", `
    volume "data" {
      type   = "host"
      source = "data"
    }`, `
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
      volume_mount {
        destination = "/dropped"
      }`},
		{"CSI volume with modes", `
    volume "data" {
      type            = "csi"
      source          = "data"
      access_mode     = "multi-node-multi-writer"
      attachment_mode = "file-system"
    }`, ""},
		{"per_alloc volume without canaries", `
    update { canary = 0 }
    volume "data" {
      type      = "host"
      source    = "data"
      per_alloc = true
    }`, ""},
		{"service checks", `
    network {
      port "http" {}
    }
    service {
      name = "gw"
      port = "http"
      check {
        type     = "tcp"
        interval = "10s"
        timeout  = "2s"
      }
      check {
        type     = "tcp"
        interval = "10s"
        timeout  = "2s"
      }
    }`, `
      resources {
        network {
          port "admin" {}
        }
      }
      service {
        name = "web"
        port = "http"
        check {
          type     = "http"
          path     = "/health"
          interval = "10s"
          timeout  = "2s"
        }
        check {
          name     = "admin"
          type     = "tcp"
          port     = "admin"
          interval = "1s"
          timeout  = "1s"
        }
        check {
          name         = "direct"
          type         = "tcp"
          port         = "8080"
          address_mode = "driver"
          interval     = "10s"
          timeout      = "2s"
        }
        check {
          name     = "script"
          type     = "script"
          command  = "/bin/true"
          interval = "10s"
          timeout  = "2s"
        }
      }
      service {
        name         = "raw"
        port         = "9090"
        address_mode = "driver"
      }`},
		{"nomad service check of a type written in capitals", "", `
      service {
        name     = "local"
        provider = "nomad"
        check {
          type     = "HTTP"
          path     = "/"
          interval = "10s"
          timeout  = "2s"
        }
      }`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parse(t, `job "j" {
  group "g" {`+tc.group+`
    task "t" {
      driver = "docker"`+tc.task+`
    }
  }
}`)
		})
	}
}

// TestValidate_RescheduleAttemptsFitInTheInterval: a limited reschedule
// policy whose attempts, spaced by its delay function, cannot all happen
// within its interval is refused, as Nomad's server refuses it; the cases
// are Nomad 1.6's verdicts on the same policies.
func TestValidate_RescheduleAttemptsFitInTheInterval(t *testing.T) {
	cases := []struct {
		name    string
		policy  sdk.ReschedulePolicy
		problem string // "" when the policy is valid
	}{
		{"constant fits", sdk.ReschedulePolicy{Attempts: 5, Interval: 150 * time.Second, Delay: 30 * time.Second,
			DelayFunction: "constant"}, ""},
		{"constant too many", sdk.ReschedulePolicy{Attempts: 5, Interval: time.Minute, Delay: 30 * time.Second,
			DelayFunction: "constant"}, "2 of the 5 attempts fit in 1m0s (delay 30s, constant delay function); make the interval at least 2m30s"},
		{"constant delay longer than interval", sdk.ReschedulePolicy{Attempts: 1, Interval: 20 * time.Second, Delay: 30 * time.Second,
			DelayFunction: "constant"}, "0 of the 1 attempts fit in 20s (delay 30s, constant delay function); make the interval at least 30s"},
		{"exponential fits", sdk.ReschedulePolicy{Attempts: 3, Interval: time.Hour, Delay: 30 * time.Second,
			DelayFunction: "exponential", MaxDelay: 5 * time.Minute}, ""},
		{"exponential capped", sdk.ReschedulePolicy{Attempts: 10, Interval: 10 * time.Minute, Delay: 30 * time.Second,
			DelayFunction: "exponential", MaxDelay: 2 * time.Minute},
			"6 of the 10 attempts fit in 10m0s (delay 30s, exponential delay function, max_delay 2m0s); make the interval at least 16m0s"},
		{"exponential huge attempts", sdk.ReschedulePolicy{Attempts: 1 << 40, Interval: 24 * time.Hour, Delay: 5 * time.Second,
			DelayFunction: "exponential", MaxDelay: time.Hour},
			"of the 1099511627776 attempts fit in 24h0m0s"},
		{"fibonacci fits", sdk.ReschedulePolicy{Attempts: 4, Interval: time.Minute, Delay: 10 * time.Second,
			DelayFunction: "fibonacci", MaxDelay: time.Minute}, ""},
		{"fibonacci too many", sdk.ReschedulePolicy{Attempts: 6, Interval: time.Minute, Delay: 10 * time.Second,
			DelayFunction: "fibonacci", MaxDelay: 5 * time.Minute},
			"5 of the 6 attempts fit in 1m0s (delay 10s, fibonacci delay function, max_delay 5m0s); make the interval at least 1m20s"},
		{"fibonacci past its ceiling fits", sdk.ReschedulePolicy{Attempts: 8, Interval: 2 * time.Minute, Delay: 10 * time.Second,
			DelayFunction: "fibonacci", MaxDelay: 30 * time.Second}, ""},
		{"fibonacci past its ceiling", sdk.ReschedulePolicy{Attempts: 8, Interval: 110 * time.Second, Delay: 10 * time.Second,
			DelayFunction: "fibonacci", MaxDelay: 30 * time.Second},
			"7 of the 8 attempts fit in 1m50s (delay 10s, fibonacci delay function, max_delay 30s); make the interval at least 2m0s"},
		{"fibonacci huge attempts", sdk.ReschedulePolicy{Attempts: 1 << 40, Interval: 24 * time.Hour, Delay: 5 * time.Second,
			DelayFunction: "fibonacci", MaxDelay: time.Hour}, "of the 1099511627776 attempts fit in 24h0m0s"},
		{"unlimited is not checked", sdk.ReschedulePolicy{Unlimited: true, Delay: 30 * time.Second,
			DelayFunction: "exponential", MaxDelay: time.Hour}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := goJob()
			policy := tc.policy
			job.TaskGroups[0].ReschedulePolicy = &policy
			jobspec.Canonicalize(job)
			err := jobspec.Validate(job)
			if tc.problem == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ve *jobspec.ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) != 1 {
				t.Fatalf("want one problem, got %v", err)
			}
			p := ve.Problems[0]
			if p.Path.String() != `group "g": reschedule: interval` || !strings.Contains(p.Err.Error(), tc.problem) {
				t.Fatalf("got %q at %q, want %q at the interval", p.Err, p.Path, tc.problem)
			}
		})
	}
}

// TestValidate_EmptyMultiregionIsNone: a job stored without a multiregion
// block may come back from the state with an empty map in its place; it is
// no multiregion job. (testdata/bad/multiregion.hcl has one.)
func TestValidate_EmptyMultiregionIsNone(t *testing.T) {
	job := goJob()
	job.Multiregion = sdk.Opaque{}
	jobspec.Canonicalize(job)
	if err := jobspec.Validate(job); err != nil {
		t.Fatal(err)
	}
}
