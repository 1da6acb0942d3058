package generic_test

import (
	"fmt"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/schedulers/schedtest"
)

// gpuNode returns a node with count healthy GPUs of the model, with the
// memory (GiB) as a device attribute.
func gpuNode(id, model string, memGiB, count int) *sdk.Node {
	n := schedtest.Node(id)
	d := &sdk.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: model,
		Attributes: sdk.DeviceAttributes{"memory": fmt.Sprintf("%d GiB", memGiB)}}
	for i := 0; i < count; i++ {
		d.Instances = append(d.Instances, &sdk.NodeDevice{ID: fmt.Sprintf("%s-gpu-%d", id, i), Healthy: true})
	}
	n.NodeResources.Devices = []*sdk.NodeDeviceResource{d}
	return n
}

// gpuJob is a service job whose task asks for one GPU.
func gpuJob(id string, count int, req *sdk.RequestedDevice) *sdk.Job {
	job := schedtest.ServiceJob(id, count)
	job.TaskGroups[0].Tasks[0].Resources.Devices = []*sdk.RequestedDevice{req}
	return job
}

// Nodes that differ only in their devices are of different computed
// classes (as Nomad hashes device groups into the class): otherwise the
// first node without a GPU would mark the class ineligible and the one
// node with GPUs would never be checked.
func TestService_DevicesAreOfTheComputedClass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plain int
	}{
		{"one plain node", 1},
		{"many plain nodes", 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := schedtest.New(t)
			h.UpsertNodes(schedtest.Nodes("n", tc.plain)...)
			h.UpsertNodes(gpuNode("gpu", "1080ti", 11, 2))
			h.Process(service, h.RegisterJob(gpuJob("web", 1, &sdk.RequestedDevice{Name: "nvidia/gpu", Count: 1})))
			e := h.LastEval()
			if len(e.FailedTGAllocs) != 0 {
				t.Fatalf("failed: %+v", e.FailedTGAllocs["web"])
			}
			placed := schedtest.Placed(h.LastPlan())
			if len(placed) != 1 || placed[0].NodeID != "gpu" {
				t.Fatalf("placed %+v, want one allocation on the GPU node", placed)
			}
		})
	}
}
