package jobspec_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
)

// TestParse_CSIPlugin: a task's csi_plugin block reaches the task's
// CSIPluginConfig with every attribute, as Nomad's API JSON names them,
// and with Nomad's defaults (mount_dir /csi, stage_publish_base_dir
// /local/csi, health_timeout 30s) for those left out. The simulated nodes
// read ID and Type from it.
func TestParse_CSIPlugin(t *testing.T) {
	cases := []struct {
		name  string
		block string
		want  sdk.Opaque
	}{
		{"every attribute", `
      csi_plugin {
        id                     = "hostpath"
        type                   = "monolith"
        mount_dir              = "/csi-sock"
        stage_publish_base_dir = "/local/stage"
        health_timeout         = "1m30s"
      }`, sdk.Opaque{"ID": "hostpath", "Type": "monolith", "MountDir": "/csi-sock", "StagePublishBaseDir": "/local/stage",
			"HealthTimeout": int64(90 * time.Second)}},
		{"Nomad's defaults", `
      csi_plugin {
        id   = "ebs"
        type = "node"
      }`, sdk.Opaque{"ID": "ebs", "Type": "node", "MountDir": "/csi", "StagePublishBaseDir": "/local/csi",
			"HealthTimeout": int64(30 * time.Second)}},
		{"a controller", `
      csi_plugin {
        id   = "ebs"
        type = "controller"
      }`, sdk.Opaque{"ID": "ebs", "Type": "controller", "MountDir": "/csi", "StagePublishBaseDir": "/local/csi",
			"HealthTimeout": int64(30 * time.Second)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := parse(t, `job "plugin" {
  type = "system"
  group "p" {
    task "plugin" {
      driver = "docker"
      config {
        image = "registry.k8s.io/sig-storage/hostpathplugin:v1.11.0"
      }`+tc.block+`
    }
  }
}`)
			if got := job.TaskGroups[0].Tasks[0].CSIPluginConfig; !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("CSIPluginConfig %#v, want %#v", got, tc.want)
			}
		})
	}
	job := parse(t, `job "web" {
  group "g" {
    task "t" {
      driver = "docker"
    }
  }
}`)
	if got := job.TaskGroups[0].Tasks[0].CSIPluginConfig; got != nil {
		t.Fatalf("a task without csi_plugin has CSIPluginConfig %#v", got)
	}
}
