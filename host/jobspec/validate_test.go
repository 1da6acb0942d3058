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
		{"priority", func(j *sdk.Job) { j.Priority = 101 }, "priority", "between 1 and 100"},
		{"no groups", func(j *sdk.Job) { j.TaskGroups = nil }, "job", "at least one group"},
		{"bad type", func(j *sdk.Job) { j.Type = "cron" }, "type", "is not a job type"},
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
