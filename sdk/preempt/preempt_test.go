package preempt

import (
	"slices"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

func victim(id string, prio int, cpu, mem int64) *sdk.Allocation {
	return &sdk.Allocation{ID: id, JobID: id, Job: &sdk.Job{ID: id, Priority: prio},
		DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning,
		AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{"t": {
			Cpu: sdk.AllocatedCpuResources{CpuShares: cpu}, Memory: sdk.AllocatedMemoryResources{MemoryMB: mem}}}}}
}

// Within a priority, the victim is the allocation closest to what the
// placement asks for, less what earlier victims free (Nomad's preemptor),
// not to what the node lacks: a 1000 MHz / 2048 MB placement on a node
// 400 MHz short takes one 1000 MHz allocation, not two of 200 MHz.
func TestSelect_ClosestToTheAsk(t *testing.T) {
	small0, small1 := victim("small0", 45, 200, 128), victim("small1", 45, 200, 128)
	big := victim("big", 45, 1000, 1024)
	capacity := sdk.Usage{CPU: 4000, MemoryMB: 8192}
	// The node holds 2 x 200 + 3 x 1000 MHz; with the placement, 400 over.
	used := sdk.Usage{CPU: 3400 + 1000, MemoryMB: 3328 + 2048}
	got := Select(capacity, used, sdk.Usage{CPU: 1000, MemoryMB: 2048}, []*sdk.Allocation{small0, small1, big}, nil)
	if !slices.Equal(ids(got), []string{"big"}) {
		t.Fatalf("victims %v, want big alone", ids(got))
	}
	// Asked for less than a small one holds, the small one is the closer.
	got = Select(capacity, sdk.Usage{CPU: 4100, MemoryMB: 3428}, sdk.Usage{CPU: 100, MemoryMB: 100}, []*sdk.Allocation{big, small0}, nil)
	if !slices.Equal(ids(got), []string{"small0"}) {
		t.Fatalf("victims %v, want small0", ids(got))
	}
}

func TestCandidatesAndSelect(t *testing.T) {
	allocs := []*sdk.Allocation{victim("low-big", 10, 2000, 100), victim("low-small", 10, 500, 100),
		victim("mid", 30, 1000, 100), victim("close", 45, 4000, 100), victim("self", 10, 100, 10)}
	cands := Candidates(50, sdk.NamespacedID{ID: "self"}, allocs)
	if len(cands) != 3 {
		t.Fatalf("candidates = %d, want the three at least 10 below priority 50 and of other jobs", len(cands))
	}
	capacity := sdk.Usage{CPU: 4000, MemoryMB: 1000}
	// The node holds 3500 + the 1000 MHz placement: 500 over.
	used := sdk.Usage{CPU: 4500, MemoryMB: 400}
	ask := sdk.Usage{CPU: 1000, MemoryMB: 100}
	got := Select(capacity, used, ask, cands, nil)
	if len(got) != 1 || got[0].ID != "low-small" {
		t.Fatalf("victims %v, want only low-small (lowest priority, closest to the 500 missing)", ids(got))
	}
	if Select(capacity, sdk.Usage{CPU: 9000}, ask, cands, nil) != nil {
		t.Fatal("chose victims that cannot make room")
	}
	if Score(got) <= Score([]*sdk.Allocation{victim("x", 90, 1, 1), victim("y", 90, 1, 1)}) {
		t.Fatal("evicting higher priorities should score lower")
	}
}

// An allocation already told to stop or evict, that its node still runs,
// holds its room and may be preempted again; Select takes it before any
// allocation that would otherwise keep running, whatever their
// priorities. One its node reports finished holds nothing and is no
// candidate.
func TestCandidatesAndSelect_AlreadyStopping(t *testing.T) {
	stopping := victim("stopping", 30, 1000, 100)
	stopping.DesiredStatus = sdk.AllocDesiredStatusEvict
	finished := victim("finished", 10, 1000, 100)
	finished.DesiredStatus, finished.ClientStatus = sdk.AllocDesiredStatusStop, sdk.AllocClientStatusComplete
	running := victim("running", 10, 1000, 100)
	cands := Candidates(50, sdk.NamespacedID{ID: "self"}, []*sdk.Allocation{running, stopping, finished})
	if got := ids(cands); !slices.Equal(got, []string{"running", "stopping"}) {
		t.Fatalf("candidates %v, want running and stopping", got)
	}
	capacity, ask := sdk.Usage{CPU: 4000, MemoryMB: 1000}, sdk.Usage{CPU: 1000, MemoryMB: 100}
	if got := ids(Select(capacity, sdk.Usage{CPU: 4500, MemoryMB: 400}, ask, cands, nil)); !slices.Equal(got, []string{"stopping"}) {
		t.Fatalf("victims %v, want only the one already stopping", got)
	}
	// Short of more than it holds: both, the stopping one first.
	if got := ids(Select(capacity, sdk.Usage{CPU: 5500, MemoryMB: 400}, ask, cands, nil)); !slices.Equal(got, []string{"stopping", "running"}) {
		t.Fatalf("victims %v, want stopping then running", got)
	}
}

// A group's evictions beyond its migrate max_parallel weigh against it
// (Nomad's max_parallel penalty): with max_parallel 1 and one of its
// allocations already preempted by the plan, the other group's
// allocation is taken though it is a worse fit; without the plan's
// preemption, or without a max_parallel, the best fit is.
func TestSelect_MaxParallelPenalty(t *testing.T) {
	inGroup := func(id, job string, cpu int64, maxParallel int) *sdk.Allocation {
		a := victim(id, 10, cpu, 100)
		a.JobID, a.TaskGroup = job, "g"
		a.Job = &sdk.Job{ID: job, Priority: 10, TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
		if maxParallel > 0 {
			a.Job.TaskGroups[0].Migrate = &sdk.MigrateStrategy{MaxParallel: maxParallel}
		}
		return a
	}
	capacity := sdk.Usage{CPU: 4000, MemoryMB: 1000}
	used := sdk.Usage{CPU: 4500, MemoryMB: 400} // 500 MHz short
	ask := sdk.Usage{CPU: 600, MemoryMB: 100}   // a-fit is the closer to it
	onePlanned := func(g Group) int {
		if g.JobID == "a" {
			return 1
		}
		return 0
	}
	for _, tc := range []struct {
		name        string
		maxParallel int
		planned     func(Group) int
		want        string
	}{
		{"no plan preemptions", 1, nil, "a-fit"},
		{"one planned, max_parallel 1", 1, onePlanned, "b-worse"},
		{"one planned, max_parallel 2", 2, onePlanned, "a-fit"},
		{"one planned, no max_parallel", 0, onePlanned, "a-fit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cands := []*sdk.Allocation{inGroup("a-fit", "a", 500, tc.maxParallel), inGroup("b-worse", "b", 1500, 1)}
			if got := ids(Select(capacity, used, ask, cands, tc.planned)); len(got) != 1 || got[0] != tc.want {
				t.Fatalf("victims %v, want %s", got, tc.want)
			}
		})
	}
}

func ids(as []*sdk.Allocation) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

// TestForPorts: the candidates holding an asked-for port on its address
// are evicted, a port held on another address of the node being no
// obstacle; so are those holding it in a task network (on that network's
// IP), and none that its node reports finished.
func TestForPorts(t *testing.T) {
	const def, pub = "10.0.0.5", "203.0.113.5"
	withPorts := func(a *sdk.Allocation, shared int, sharedIP string, task int) *sdk.Allocation {
		if shared != 0 {
			a.AllocatedResources.Shared.Ports = []sdk.PortMapping{{Label: "s", Value: shared, HostIP: sharedIP}}
		}
		if task != 0 {
			a.AllocatedResources.Tasks["t"].Networks = []*sdk.NetworkResource{{IP: def, ReservedPorts: []sdk.Port{{Label: "t", Value: task}}}}
		}
		return a
	}
	done := withPorts(victim("done", 10, 1, 1), 8080, def, 0)
	done.ClientStatus = sdk.AllocClientStatusComplete
	cands := []*sdk.Allocation{withPorts(victim("shared", 10, 1, 1), 8080, def, 0), withPorts(victim("task", 20, 1, 1), 0, "", 9090),
		withPorts(victim("other", 10, 1, 1), 7070, def, 0), victim("none", 10, 1, 1), done,
		withPorts(victim("public", 10, 1, 1), 53, pub, 0)}
	on := func(addr string, ports ...int) []HostPort {
		var out []HostPort
		for _, p := range ports {
			out = append(out, HostPort{Addr: addr, Port: p})
		}
		return out
	}
	for _, tc := range []struct {
		ports []HostPort
		want  []string
	}{
		{on(def, 8080), []string{"shared"}},
		{on(def, 9090, 8080), []string{"shared", "task"}},
		{on(def, 6060), nil},
		{nil, nil},
		{on(pub, 8080), nil},
		{on(pub, 53), []string{"public"}},
		{on(def, 53), nil},
		{append(on(def, 8080), on(pub, 53)...), []string{"shared", "public"}},
	} {
		if got := ids(ForPorts(tc.ports, cands)); !slices.Equal(got, tc.want) {
			t.Errorf("ForPorts(%v) = %v, want %v", tc.ports, got, tc.want)
		}
	}
}

// permute visits every order of the requests once, the given one first,
// leaves them as they were, and stops when asked.
func TestPermute(t *testing.T) {
	reqs := []*sdk.RequestedDevice{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}
	key := func() string {
		k := ""
		for _, r := range reqs {
			k += r.Name
		}
		return k
	}
	seen := map[string]bool{}
	var first string
	if !permute(reqs, 0, func() bool {
		if first == "" {
			first = key()
		}
		seen[key()] = true
		return true
	}) {
		t.Fatal("permute stopped though never asked to")
	}
	if len(seen) != 24 || first != "abcd" || key() != "abcd" {
		t.Fatalf("%d orders, first %s, left as %s", len(seen), first, key())
	}
	n := 0
	if permute(reqs, 0, func() bool { n++; return n < 5 }) || n != 5 || key() != "abcd" {
		t.Fatalf("asked to stop at the 5th order: tried %d, left as %s", n, key())
	}
}
