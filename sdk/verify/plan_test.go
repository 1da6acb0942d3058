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
	if err := checkResources(&sdk.Allocation{ID: "a", AllocatedResources: full}, nil, tg); err != nil {
		t.Fatalf("what the group asks for is refused: %v", err)
	}
	for dim, cut := range map[string]func(*sdk.AllocatedResources){
		"cpu":    func(r *sdk.AllocatedResources) { r.Tasks["t"].Cpu.CpuShares = 499 },
		"memory": func(r *sdk.AllocatedResources) { r.Tasks["t"].Memory.MemoryMB = 1 },
		"disk":   func(r *sdk.AllocatedResources) { r.Shared.DiskMB = 0 },
	} {
		r := sdk.RequestedResources(tg)
		cut(r)
		err := checkResources(&sdk.Allocation{ID: "a", AllocatedResources: r}, nil, tg)
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
			err := checkResources(&sdk.Allocation{ID: "a", AllocatedResources: tc.res}, nil, tg)
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

// TestCheckResources_UpdateKeepingItsPortsPasses: an update of an
// allocation that exists and keeps the networks it holds is not refused for
// ports its group asks for, even if it holds none (placed before the host
// checked ports): otherwise no plan could scale its job or annotate it. An
// update that drops or changes ports it held, one to a version whose group
// asks for ports the version it runs did not, and a new placement without
// them, are still refused; so is one that under-reports CPU.
func TestCheckResources_UpdateKeepingItsPortsPasses(t *testing.T) {
	tg := &sdk.TaskGroup{Name: "g",
		Networks: []*sdk.NetworkResource{{Mode: "host", ReservedPorts: []sdk.Port{{Label: "http", Value: 8080}}}},
		Tasks:    []*sdk.Task{{Name: "t", Resources: &sdk.Resources{CPU: 500, MemoryMB: 256}}}}
	portless := func() *sdk.AllocatedResources { return sdk.RequestedResources(tg) }
	holding := func(v int) *sdk.AllocatedResources {
		r := sdk.RequestedResources(tg)
		r.Shared.Networks = []*sdk.NetworkResource{{Mode: "host", IP: "10.0.0.1",
			ReservedPorts: []sdk.Port{{Label: "http", Value: v}}}}
		r.Shared.Ports = []sdk.PortMapping{{Label: "http", Value: v, HostIP: "10.0.0.1"}}
		return r
	}
	job := &sdk.Job{ID: "j", TaskGroups: []*sdk.TaskGroup{tg}}
	stored := func(r *sdk.AllocatedResources) *sdk.Allocation {
		return &sdk.Allocation{ID: "a", TaskGroup: "g", Job: job, AllocatedResources: r}
	}
	// A version of the group without the port: its allocations hold none.
	portlessTG := *tg
	portlessTG.Networks = nil
	earlier := &sdk.Allocation{ID: "a", TaskGroup: "g", Job: &sdk.Job{ID: "j", TaskGroups: []*sdk.TaskGroup{&portlessTG}},
		AllocatedResources: portless()}
	cases := []struct {
		name     string
		old      *sdk.Allocation
		res      *sdk.AllocatedResources
		accepted bool
	}{
		{"update keeping no ports", stored(portless()), portless(), true},
		{"update keeping its ports", stored(holding(8080)), holding(8080), true},
		{"update dropping its ports", stored(holding(8080)), portless(), false},
		{"update moving a static port", stored(holding(9090)), holding(9091), false},
		{"new placement without ports", nil, portless(), false},
		{"update to a version that asks for a port it lacks", earlier, portless(), false},
		{"update under-reporting cpu", stored(portless()), func() *sdk.AllocatedResources {
			r := portless()
			r.Tasks["t"].Cpu.CpuShares = 1
			return r
		}(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkResources(&sdk.Allocation{ID: "a", TaskGroup: "g", AllocatedResources: tc.res}, tc.old, tg)
			if tc.accepted != (err == nil) {
				t.Fatalf("err = %v, want accepted %v", err, tc.accepted)
			}
			if err != nil && !errors.Is(err, sdk.ErrPlanInvalid) {
				t.Fatalf("err = %v, not ErrPlanInvalid", err)
			}
		})
	}
}
