package verify

import (
	"errors"
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

func TestCheckResources_UnderReportedClaimsAreRefused(t *testing.T) {
	tg := &sdk.TaskGroup{Name: "g", EphemeralDisk: &sdk.EphemeralDisk{SizeMB: 300},
		Tasks: []*sdk.Task{{Name: "t", Resources: &sdk.Resources{CPU: 500, MemoryMB: 256}}}}
	full := sdk.RequestedResources(tg)
	if err := checkResources(&sdk.Allocation{ID: "a", AllocatedResources: full}, tg); err != nil {
		t.Fatalf("what the group asks for is refused: %v", err)
	}
	for dim, cut := range map[string]func(*sdk.AllocatedResources){
		"cpu":    func(r *sdk.AllocatedResources) { r.Tasks["t"].Cpu.CpuShares = 499 },
		"memory": func(r *sdk.AllocatedResources) { r.Tasks["t"].Memory.MemoryMB = 1 },
		"disk":   func(r *sdk.AllocatedResources) { r.Shared.DiskMB = 0 },
	} {
		r := sdk.RequestedResources(tg)
		cut(r)
		err := checkResources(&sdk.Allocation{ID: "a", AllocatedResources: r}, tg)
		if !errors.Is(err, sdk.ErrPlanInvalid) || !strings.Contains(err.Error(), dim) {
			t.Errorf("%s under-reported: err = %v", dim, err)
		}
	}
}

// TestCheckResources_PortsAskedForMustBeHeld: a placement that leaves out
// the ports its group or tasks ask for (so that two allocations could claim
// one static port of a node), or holds a static port at another value, is
// refused; one that holds them, as the stack assigns them, passes.
func TestCheckResources_PortsAskedForMustBeHeld(t *testing.T) {
	tg := &sdk.TaskGroup{Name: "g",
		Networks: []*sdk.NetworkResource{{Mode: "host", ReservedPorts: []sdk.Port{{Label: "http", Value: 8080}},
			DynamicPorts: []sdk.Port{{Label: "admin"}}}},
		Tasks: []*sdk.Task{{Name: "t", Resources: &sdk.Resources{CPU: 500, MemoryMB: 256,
			Networks: []*sdk.NetworkResource{{DynamicPorts: []sdk.Port{{Label: "metrics"}}}}}}}}
	held := func(http, admin, metrics int) *sdk.AllocatedResources {
		r := sdk.RequestedResources(tg)
		r.Shared.Networks = []*sdk.NetworkResource{{Mode: "host", IP: "10.0.0.1"}}
		if http > 0 {
			r.Shared.Ports = append(r.Shared.Ports, sdk.PortMapping{Label: "http", Value: http, HostIP: "10.0.0.1"})
		}
		if admin > 0 {
			r.Shared.Ports = append(r.Shared.Ports, sdk.PortMapping{Label: "admin", Value: admin, HostIP: "10.0.0.1"})
		}
		if metrics > 0 {
			r.Tasks["t"].Networks = []*sdk.NetworkResource{{IP: "10.0.0.1", DynamicPorts: []sdk.Port{{Label: "metrics", Value: metrics}}}}
		}
		return r
	}
	cases := []struct {
		name string
		res  *sdk.AllocatedResources
		want string // "" for accepted
	}{
		{"all held", held(8080, 21000, 21001), ""},
		{"none held", sdk.RequestedResources(tg), "static port http = 8080"},
		{"static port elsewhere", held(9090, 21000, 21001), "static port http = 8080"},
		{"dynamic port missing", held(8080, 0, 21001), "no port admin"},
		{"task port missing", held(8080, 21000, 0), `no port metrics, which its task "t"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkResources(&sdk.Allocation{ID: "a", AllocatedResources: tc.res}, tg)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, sdk.ErrPlanInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrPlanInvalid naming %q", err, tc.want)
			}
		})
	}
}
