package sdk

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func lifecycle(hook string, sidecar bool) *TaskLifecycle {
	return &TaskLifecycle{Hook: hook, Sidecar: sidecar}
}

// lifecycleGroup is a group of four tasks: a main task, a prestart task, a
// prestart sidecar and a poststop task, with the resources given.
func lifecycleGroup(main, init, side, post Resources) *TaskGroup {
	task := func(name string, lc *TaskLifecycle, r Resources) *Task {
		return &Task{Name: name, Driver: "docker", Lifecycle: lc, Resources: &r}
	}
	return &TaskGroup{Name: "g", Count: 1, EphemeralDisk: &EphemeralDisk{SizeMB: 300}, Tasks: []*Task{
		task("main", nil, main),
		task("init", lifecycle(TaskLifecycleHookPrestart, false), init),
		task("side", lifecycle(TaskLifecycleHookPrestart, true), side),
		task("post", lifecycle(TaskLifecycleHookPoststop, false), post),
	}}
}

// TestUsage_FoldsTasksByLifecycle checks what an allocation uses when its
// tasks run at different times, as Nomad's AllocatedResources.Comparable
// counts it (TestAllocatedResources_Comparable_Flattened in Nomad v1.6.1),
// except that a poststart task counts with the main tasks.
func TestUsage_FoldsTasksByLifecycle(t *testing.T) {
	task := func(cpu, mem int64, cores ...uint16) *AllocatedTaskResources {
		return &AllocatedTaskResources{Cpu: AllocatedCpuResources{CpuShares: cpu, ReservedCores: cores},
			Memory: AllocatedMemoryResources{MemoryMB: mem}}
	}
	pre, side := lifecycle(TaskLifecycleHookPrestart, false), lifecycle(TaskLifecycleHookPrestart, true)
	poststart, post := lifecycle(TaskLifecycleHookPoststart, false), lifecycle(TaskLifecycleHookPoststop, false)
	for _, tc := range []struct {
		name  string
		tasks map[string]*AllocatedTaskResources
		lcs   map[string]*TaskLifecycle
		want  Usage
	}{
		{"no lifecycles: the sum", map[string]*AllocatedTaskResources{"a": task(100, 200), "b": task(300, 50)}, nil,
			Usage{CPU: 400, MemoryMB: 250, DiskMB: 10}},
		{"a larger init task: its own size", map[string]*AllocatedTaskResources{"main": task(100, 200), "init": task(1000, 50)},
			map[string]*TaskLifecycle{"init": pre}, Usage{CPU: 1000, MemoryMB: 200, DiskMB: 10}},
		{"init tasks run together", map[string]*AllocatedTaskResources{"main": task(100, 200), "i1": task(300, 150), "i2": task(300, 150)},
			map[string]*TaskLifecycle{"i1": pre, "i2": pre}, Usage{CPU: 600, MemoryMB: 300, DiskMB: 10}},
		{"a sidecar runs beside everything", map[string]*AllocatedTaskResources{"main": task(100, 200), "init": task(1000, 50), "side": task(10, 20)},
			map[string]*TaskLifecycle{"init": pre, "side": side}, Usage{CPU: 1010, MemoryMB: 220, DiskMB: 10}},
		{"poststop runs after", map[string]*AllocatedTaskResources{"main": task(100, 200), "post": task(50, 500)},
			map[string]*TaskLifecycle{"post": post}, Usage{CPU: 100, MemoryMB: 500, DiskMB: 10}},
		{"poststart runs beside the main tasks", map[string]*AllocatedTaskResources{"main": task(100, 200), "ps": task(50, 500)},
			map[string]*TaskLifecycle{"ps": poststart}, Usage{CPU: 150, MemoryMB: 700, DiskMB: 10}},
		{"a null lifecycle is a main task", map[string]*AllocatedTaskResources{"main": task(100, 200), "init": task(1000, 50)},
			map[string]*TaskLifecycle{"init": nil, "gone": pre}, Usage{CPU: 1100, MemoryMB: 250, DiskMB: 10}},
		{"reserved cores are summed", map[string]*AllocatedTaskResources{"main": task(2000, 200, 0), "init": task(2000, 50, 1)},
			map[string]*TaskLifecycle{"init": pre}, Usage{CPU: 2000, MemoryMB: 200, DiskMB: 10, Cores: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ar := &AllocatedResources{Tasks: tc.tasks, TaskLifecycles: tc.lcs, Shared: AllocatedSharedResources{DiskMB: 10}}
			if got := ar.Usage(); got != tc.want {
				t.Fatalf("Usage = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestGroupUsage_IsWhatItsRequestUses checks, over random groups, that what
// a group asks for is what the allocation RequestedResources makes of it
// uses, and never more than the plain sum of its tasks.
// Sums of resources saturate at the int64 limits instead of wrapping
// around: a wrapped sum is small or negative and fits any node.
func TestUsage_SumsSaturate(t *testing.T) {
	const big = math.MaxInt64 - 1
	huge := func(cpu int64) *AllocatedTaskResources {
		return &AllocatedTaskResources{Cpu: AllocatedCpuResources{CpuShares: cpu}, Memory: AllocatedMemoryResources{MemoryMB: cpu}}
	}
	for _, tc := range []struct {
		name string
		got  Usage
	}{
		{"add", func() Usage {
			u := Usage{CPU: big, MemoryMB: big, DiskMB: big, Cores: big}
			u.Add(Usage{2, 2, 2, 2})
			return u
		}()},
		{"sub", func() Usage {
			u := Usage{CPU: big, MemoryMB: big, DiskMB: big, Cores: big}
			u.Sub(Usage{math.MinInt64, -2, -2, -2})
			return u
		}()},
		{"tasks", (&AllocatedResources{Tasks: map[string]*AllocatedTaskResources{"a": huge(big), "b": huge(2)},
			Shared: AllocatedSharedResources{DiskMB: big}}).Usage()},
		{"lifecycles", (&AllocatedResources{Tasks: map[string]*AllocatedTaskResources{"side": huge(big), "main": huge(2)},
			TaskLifecycles: map[string]*TaskLifecycle{"side": lifecycle(TaskLifecycleHookPrestart, true)}}).Usage()},
		{"group", GroupUsage(&TaskGroup{Tasks: []*Task{{Name: "a", Resources: &Resources{CPU: big, MemoryMB: big}},
			{Name: "b", Resources: &Resources{CPU: 2, MemoryMB: 2}}}})},
	} {
		if tc.got.CPU != math.MaxInt64 || tc.got.MemoryMB != math.MaxInt64 {
			t.Errorf("%s: %+v, want CPU and memory at the int64 maximum", tc.name, tc.got)
		}
		if ok, _ := tc.got.Fits(Usage{CPU: 1000, MemoryMB: 1000, DiskMB: 1000, Cores: 4}); ok {
			t.Errorf("%s: %+v fits a small node", tc.name, tc.got)
		}
	}
	u := Usage{CPU: math.MinInt64 + 1}
	u.Add(Usage{CPU: -2})
	if u.CPU != math.MinInt64 {
		t.Errorf("negative sum: %d", u.CPU)
	}
	n := &Node{NodeResources: &NodeResources{Cpu: NodeCpuResources{CpuShares: 1000}},
		ReservedResources: &NodeReservedResources{Cpu: NodeReservedCpuResources{CpuShares: math.MinInt64}}}
	if c := n.Capacity(); c.CPU != math.MaxInt64 {
		t.Errorf("capacity less a negative reserve: %d", c.CPU)
	}
}

func TestGroupUsage_IsWhatItsRequestUses(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	hooks := []*TaskLifecycle{nil, lifecycle(TaskLifecycleHookPrestart, false), lifecycle(TaskLifecycleHookPrestart, true),
		lifecycle(TaskLifecycleHookPoststart, false), lifecycle(TaskLifecycleHookPoststart, true), lifecycle(TaskLifecycleHookPoststop, false)}
	for i := range 2000 {
		tg := &TaskGroup{Name: "g", EphemeralDisk: &EphemeralDisk{SizeMB: rng.IntN(1000)}}
		var sum Usage
		for k := range 1 + rng.IntN(5) {
			r := &Resources{CPU: rng.IntN(2000), MemoryMB: rng.IntN(2000)}
			tg.Tasks = append(tg.Tasks, &Task{Name: string(rune('a' + k)), Lifecycle: hooks[rng.IntN(len(hooks))], Resources: r})
			sum.Add(Usage{CPU: int64(r.CPU), MemoryMB: int64(r.MemoryMB)})
		}
		sum.DiskMB = int64(tg.EphemeralDisk.SizeMB)
		ar := RequestedResources(tg)
		if err := ar.CheckCovers(tg); err != nil {
			t.Fatalf("group %d: its own request is refused: %v", i, err)
		}
		need := GroupUsage(tg)
		if got := ar.Usage(); got != need {
			t.Fatalf("group %d: the request uses %+v, the group asks %+v", i, got, need)
		}
		if ok, dim := need.Fits(sum); !ok {
			t.Fatalf("group %d: asks more %s than the sum of its tasks: %+v > %+v", i, dim, need, sum)
		}
	}
}

// TestCheckCovers_TasksAndLifecycles checks that a placement cannot seem
// to use less than its group needs by what it says of its tasks: each task
// must hold what it asks for, and the lifecycles must be the group's or
// none.
func TestCheckCovers_TasksAndLifecycles(t *testing.T) {
	tg := lifecycleGroup(Resources{CPU: 100, MemoryMB: 100}, Resources{CPU: 1000, MemoryMB: 50},
		Resources{CPU: 10, MemoryMB: 10}, Resources{CPU: 20, MemoryMB: 400})
	for _, tc := range []struct {
		name   string
		change func(ar *AllocatedResources)
		want   string // "" when accepted
	}{
		{"the request", func(*AllocatedResources) {}, ""},
		{"no lifecycles: every task a main task", func(ar *AllocatedResources) { ar.TaskLifecycles = nil }, ""},
		{"more than asked", func(ar *AllocatedResources) { ar.Tasks["main"].Memory.MemoryMB = 5000 }, ""},
		{"a main task passed off as an init task", func(ar *AllocatedResources) {
			ar.TaskLifecycles["main"] = lifecycle(TaskLifecycleHookPrestart, false)
		}, `gives task "main" the lifecycle prestart, but it is a main task`},
		{"a sidecar passed off as an init task", func(ar *AllocatedResources) {
			ar.TaskLifecycles["side"] = lifecycle(TaskLifecycleHookPrestart, false)
		}, `gives task "side" the lifecycle prestart, not its own (prestart sidecar)`},
		{"a lifecycle left out", func(ar *AllocatedResources) { delete(ar.TaskLifecycles, "init") },
			`gives task "init" the lifecycle main, not its own (prestart)`},
		{"a null lifecycle", func(ar *AllocatedResources) { ar.TaskLifecycles["init"] = nil },
			`gives task "init" the lifecycle main, not its own (prestart)`},
		{"a main task named with null, as Nomad does", func(ar *AllocatedResources) { ar.TaskLifecycles["main"] = nil }, ""},
		{"a lifecycle for another task", func(ar *AllocatedResources) {
			ar.TaskLifecycles["other"] = lifecycle(TaskLifecycleHookPoststop, false)
		}, `gives a lifecycle to task "other", which its group "g" does not have`},
		{"CPU moved from the init task to the main task", func(ar *AllocatedResources) {
			ar.Tasks["init"].Cpu.CpuShares, ar.Tasks["main"].Cpu.CpuShares = 0, 1100
		}, `task "init" holds 0 cpu, less than it asks for (1000)`},
		{"a task without resources", func(ar *AllocatedResources) { delete(ar.Tasks, "post") },
			`task "post" holds 0 cpu, less than it asks for (20)`},
		{"resources for another task", func(ar *AllocatedResources) { ar.Tasks["other"] = &AllocatedTaskResources{} }, ""},
		{"less disk", func(ar *AllocatedResources) { ar.Shared.DiskMB = 299 },
			`holds 299 disk, less than its group "g" asks for (300)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ar := RequestedResources(tg)
			tc.change(ar)
			err := ar.CheckCovers(tg)
			wantRefusal(t, err, tc.want)
			if err == nil {
				if got, need := ar.Usage(), GroupUsage(tg); got.CPU < need.CPU || got.MemoryMB < need.MemoryMB {
					t.Fatalf("accepted, and uses %+v, less than the group's %+v", got, need)
				}
			}
		})
	}
}

// TestCheckCovers_IgnoreCollisionOnlyWhereAsked: a port that ignores
// collisions is not counted against its node's, so the host accepts the
// flag only on a port its network asks for so, at the same value, and a
// port mapped once (the reviewer's probes: a plain port flagged by the
// plan, and a second mapping of a flagged port's label).
func TestCheckCovers_IgnoreCollisionOnlyWhereAsked(t *testing.T) {
	const ip = "10.0.0.5"
	group := func(ignore bool) *TaskGroup {
		return &TaskGroup{Name: "g", Networks: []*NetworkResource{{Mode: "host", ReservedPorts: []Port{
			{Label: "metrics", Value: 9100, IgnoreCollision: ignore}, {Label: "http", Value: 8080}}}},
			Tasks: []*Task{{Name: "t", Resources: &Resources{CPU: 100, MemoryMB: 64,
				Networks: []*NetworkResource{{ReservedPorts: []Port{{Label: "debug", Value: 6060}}}}}}}}
	}
	holding := func(tg *TaskGroup) *AllocatedResources {
		ar := RequestedResources(tg)
		offer := *tg.Networks[0]
		offer.IP = ip
		offer.ReservedPorts = slices.Clone(offer.ReservedPorts)
		ar.Shared.Networks = []*NetworkResource{&offer}
		for _, p := range offer.ReservedPorts {
			ar.Shared.Ports = append(ar.Shared.Ports, PortMapping{Label: p.Label, Value: p.Value, HostIP: ip})
		}
		ar.Tasks["t"].Networks = []*NetworkResource{{IP: ip, ReservedPorts: []Port{{Label: "debug", Value: 6060}}}}
		return ar
	}
	for _, tc := range []struct {
		name   string
		ignore bool // the group's metrics port ignores collisions
		change func(ar *AllocatedResources)
		want   string
	}{
		{"as asked", true, func(*AllocatedResources) {}, ""},
		{"a plain port as asked", false, func(*AllocatedResources) {}, ""},
		{"a plain port flagged", false, func(ar *AllocatedResources) { ar.Shared.Networks[0].ReservedPorts[0].IgnoreCollision = true },
			`port metrics = 9100 ignores collisions, which its group "g" does not ask for`},
		{"another port flagged", true, func(ar *AllocatedResources) { ar.Shared.Networks[0].ReservedPorts[1].IgnoreCollision = true },
			`port http = 8080 ignores collisions`},
		{"a flagged port moved", true, func(ar *AllocatedResources) { ar.Shared.Networks[0].ReservedPorts[0].Value = 443 },
			`port metrics = 443 ignores collisions`},
		{"a task's port flagged", false, func(ar *AllocatedResources) { ar.Tasks["t"].Networks[0].ReservedPorts[0].IgnoreCollision = true },
			`port debug = 6060 ignores collisions, which its task "t" does not ask for`},
		{"a flagged port mapped twice", true, func(ar *AllocatedResources) {
			ar.Shared.Ports = append([]PortMapping{{Label: "metrics", Value: 443, HostIP: ip}}, ar.Shared.Ports...)
		}, `maps port "metrics" twice`},
		// Values that are not ports: the fit check never fits them, but
		// they make the plan invalid, not the node full.
		{"an extra mapping to a negative port", false, func(ar *AllocatedResources) {
			ar.Shared.Ports = append(ar.Shared.Ports, PortMapping{Label: "extra", Value: -5, HostIP: ip})
		}, `maps port "extra" to -5, not a port`},
		{"a flagged port negative", true, func(ar *AllocatedResources) {
			ar.Shared.Networks[0].ReservedPorts = append(ar.Shared.Networks[0].ReservedPorts, Port{Label: "x", Value: -1, IgnoreCollision: true})
		}, `port x = -1 ignores collisions`},
		{"a task's extra port over 65535", false, func(ar *AllocatedResources) {
			ar.Tasks["t"].Networks[0].DynamicPorts = []Port{{Label: "big", Value: 70000}}
		}, `holds port "big" as 70000, not a port`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := group(tc.ignore)
			ar := holding(tg)
			tc.change(ar)
			err := ar.CheckCovers(tg)
			wantRefusal(t, err, tc.want)
		})
	}
}

// wantRefusal fails t unless err is nil for want "", or else an error
// that contains want.
func wantRefusal(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("refused: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("got %v, want %q", err, want)
	}
}
