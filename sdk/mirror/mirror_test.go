package mirror_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/mirror"
)

func alloc(id, node string, cpu int64, desired string) *sdk.Allocation {
	return &sdk.Allocation{ID: id, Namespace: "default", JobID: "j", JobVersion: 2, NodeID: node, DesiredStatus: desired,
		AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{
			"t": {Cpu: sdk.AllocatedCpuResources{CpuShares: cpu}, Memory: sdk.AllocatedMemoryResources{MemoryMB: cpu}}}}}
}

func TestMirror_UsageFollowsDeltas(t *testing.T) {
	m := mirror.New()
	job := &sdk.Job{Namespace: "default", ID: "j", Version: 2}
	err := m.Apply(&abi.StateSync{Full: true, Index: 10,
		Nodes: []*sdk.Node{{ID: "n2"}, {ID: "n1"}}, Jobs: []*sdk.Job{job},
		Allocs: []*sdk.Allocation{alloc("a1", "n1", 100, "run"), alloc("a2", "n1", 50, "run")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.NodeUsage("n1").CPU; got != 150 {
		t.Fatalf("usage after full sync = %d, want 150", got)
	}
	if ns := m.Nodes(); len(ns) != 2 || ns[0].ID != "n1" {
		t.Fatalf("nodes not sorted by ID: %v", ns)
	}
	// a1 is stopped (its node still runs it: it holds its resources), a2
	// is deleted, a3 arrives.
	err = m.Apply(&abi.StateSync{FromIndex: 10, Index: 12,
		Allocs:        []*sdk.Allocation{alloc("a1", "n1", 100, "stop"), alloc("a3", "n2", 30, "run")},
		DeletedAllocs: []string{"a2"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.NodeUsage("n1").CPU; got != 100 {
		t.Errorf("n1 usage with a1 stopping = %d, want 100", got)
	}
	// a1's node reports it complete: its resources are free.
	done := alloc("a1", "n1", 100, "stop")
	done.ClientStatus = sdk.AllocClientStatusComplete
	if err := m.Apply(&abi.StateSync{FromIndex: 12, Index: 13, Allocs: []*sdk.Allocation{done}}); err != nil {
		t.Fatal(err)
	}
	if got := m.NodeUsage("n1").CPU; got != 0 {
		t.Errorf("n1 usage = %d, want 0", got)
	}
	if got := m.NodeUsage("n2").CPU; got != 30 {
		t.Errorf("n2 usage = %d, want 30", got)
	}
	if got := len(m.AllocsByJob("default", "j")); got != 2 {
		t.Errorf("allocs by job = %d, want 2", got)
	}
	if a := m.Alloc("a3"); a.Job != job {
		t.Errorf("alloc not linked to its job version")
	}
	if m.Index() != 13 {
		t.Errorf("index = %d, want 13", m.Index())
	}
}

func TestMirror_DeltaFromWrongIndexIsRefused(t *testing.T) {
	m := mirror.New()
	if err := m.Apply(&abi.StateSync{Full: true, Index: 5, Nodes: []*sdk.Node{{ID: "n1"}}}); err != nil {
		t.Fatal(err)
	}
	err := m.Apply(&abi.StateSync{FromIndex: 4, Index: 6, DeletedNodes: []string{"n1"}})
	if !errors.Is(err, mirror.ErrOutOfSync) {
		t.Fatalf("err = %v, want ErrOutOfSync", err)
	}
	if m.Node("n1") == nil || m.Index() != 5 {
		t.Fatal("a refused delta changed the mirror")
	}
}

func TestMirror_KeptPlan(t *testing.T) {
	job := &sdk.Job{Namespace: "default", ID: "j", Version: 2, JobModifyIndex: 7}
	placed := alloc("a9", "n1", 40, "run")
	placed.Job, placed.JobModifyIndex = job, 7
	placed.Metrics = &sdk.AllocMetric{NodesEvaluated: 3}
	plan := &sdk.Plan{Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n1": {placed}}}
	tests := []struct {
		name string
		next *abi.StateSync
		// want: the kept allocation joins the mirror; err: the sync is refused.
		want, err bool
	}{
		{name: "joins with Kept", next: &abi.StateSync{FromIndex: 10, Index: 12, Kept: &abi.Kept{Index: 11, Time: 99}}, want: true},
		{name: "forgotten without Kept", next: &abi.StateSync{FromIndex: 10, Index: 12}},
		{name: "deleted in the same delta", next: &abi.StateSync{FromIndex: 10, Index: 13, Kept: &abi.Kept{Index: 11, Time: 99},
			DeletedAllocs: []string{"a9"}}},
		{name: "dropped by a full sync", next: &abi.StateSync{Full: true, Index: 12, Jobs: []*sdk.Job{job},
			Kept: &abi.Kept{Index: 11, Time: 99}}},
		{name: "Kept without a kept plan", next: &abi.StateSync{FromIndex: 10, Index: 12, Kept: &abi.Kept{Index: 11, Time: 99}}, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mirror.New()
			if err := m.Apply(&abi.StateSync{Full: true, Index: 10, Nodes: []*sdk.Node{{ID: "n1"}}, Jobs: []*sdk.Job{job}}); err != nil {
				t.Fatal(err)
			}
			if !tt.err {
				m.Keep(plan)
			}
			if m.Alloc("a9") != nil {
				t.Fatal("a kept allocation shows before the next sync")
			}
			err := m.Apply(tt.next)
			if tt.err {
				if !errors.Is(err, mirror.ErrOutOfSync) {
					t.Fatalf("err = %v, want ErrOutOfSync", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := m.Alloc("a9")
			if !tt.want {
				if a != nil || m.NodeUsage("n1").CPU != 0 {
					t.Fatal("the kept allocation is in the mirror")
				}
				// Kept plans are consumed by the sync that follows them.
				if err := m.Apply(&abi.StateSync{FromIndex: m.Index(), Index: m.Index() + 1, Kept: &abi.Kept{}}); !errors.Is(err, mirror.ErrOutOfSync) {
					t.Fatalf("second Kept: err = %v, want ErrOutOfSync", err)
				}
				return
			}
			if a == nil || a == placed {
				t.Fatal("the kept allocation did not join as a copy")
			}
			if a.CreateIndex != 11 || a.ModifyIndex != 11 || a.AllocModifyIndex != 11 || a.CreateTime != 99 || a.ModifyTime != 99 ||
				a.Metrics != nil || a.Job != job || a.JobVersion != 2 || a.JobModifyIndex != 7 {
				t.Fatalf("kept allocation not stamped as abi.KeptAlloc says: %+v", a)
			}
			if m.NodeUsage("n1").CPU != 40 || len(m.AllocsByJob("default", "j")) != 1 {
				t.Fatal("the kept allocation is not indexed")
			}
			if placed.CreateIndex != 0 || placed.Metrics == nil {
				t.Fatal("keeping changed the plan's allocation")
			}
		})
	}
}

// A kept plan added early (PreApply) ends as it would have without: the
// next sync stamps it, or takes it out and puts back what it replaced, and
// a refused sync leaves the mirror as it was before the plan was kept.
func TestMirror_PreApply(t *testing.T) {
	job := &sdk.Job{Namespace: "default", ID: "j", Version: 2, JobModifyIndex: 7}
	old := alloc("a1", "n1", 10, "run") // replaced in place by the plan
	old.JobModifyIndex = 7
	placed := alloc("a9", "n2", 40, "run")
	update := alloc("a1", "n1", 25, "run")
	for _, a := range []*sdk.Allocation{placed, update} {
		a.Job, a.JobModifyIndex, a.Metrics = job, 7, &sdk.AllocMetric{NodesEvaluated: 3}
	}
	plan := &sdk.Plan{Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n1": {update}, "n2": {placed}}}
	tests := []struct {
		name string
		next *abi.StateSync
		// joined: the plan's allocations are in the mirror after next;
		// refused: next is refused.
		joined, refused bool
	}{
		// The job's status moves in the delta that confirms the plan.
		{name: "confirmed", next: &abi.StateSync{FromIndex: 10, Index: 12, Kept: &abi.Kept{Index: 11, Time: 99},
			JobStatuses: []*abi.JobStatus{{Namespace: "default", ID: "j", JobModifyIndex: 7, Status: sdk.JobStatusRunning}}}, joined: true},
		{name: "not confirmed", next: &abi.StateSync{FromIndex: 10, Index: 12}},
		{name: "not confirmed, the replaced allocation changed", next: &abi.StateSync{FromIndex: 10, Index: 12,
			Allocs: []*sdk.Allocation{alloc("a1", "n1", 15, "run")}}},
		{name: "refused: wrong index", next: &abi.StateSync{FromIndex: 9, Index: 12, Kept: &abi.Kept{Index: 11, Time: 99}}, refused: true},
		{name: "refused: null node", next: &abi.StateSync{FromIndex: 10, Index: 12, Nodes: []*sdk.Node{nil}}, refused: true},
		{name: "full sync", next: &abi.StateSync{Full: true, Index: 12, Nodes: []*sdk.Node{{ID: "n1"}, {ID: "n2"}}, Jobs: []*sdk.Job{job},
			Allocs: []*sdk.Allocation{old}}},
		{name: "no sync", next: nil},
	}
	// view is what a scheduler reads of the allocations.
	view := func(m *mirror.Mirror) string {
		var b strings.Builder
		for _, a := range m.Allocs() {
			jobStatus := ""
			if a.Job != nil {
				jobStatus = a.Job.Status
			}
			fmt.Fprintf(&b, "%s@%s cpu=%d idx=%d/%d/%d t=%d/%d v=%d/%d job=%q metrics=%v; ", a.ID, a.NodeID,
				a.AllocatedResources.Tasks["t"].Cpu.CpuShares, a.CreateIndex, a.ModifyIndex, a.AllocModifyIndex,
				a.CreateTime, a.ModifyTime, a.JobVersion, a.JobModifyIndex, jobStatus, a.Metrics != nil)
		}
		for _, n := range []string{"n1", "n2"} {
			fmt.Fprintf(&b, "%s: %+v %d; ", n, m.NodeUsage(n), len(m.AllocsByNode(n)))
		}
		fmt.Fprintf(&b, "job: %d; index %d", len(m.AllocsByJob("default", "j")), m.Index())
		return b.String()
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [2]string
			for i, early := range []bool{false, true} {
				m := mirror.New()
				if err := m.Apply(&abi.StateSync{Full: true, Index: 10, Nodes: []*sdk.Node{{ID: "n1"}, {ID: "n2"}},
					Jobs: []*sdk.Job{job}, Allocs: []*sdk.Allocation{old}}); err != nil {
					t.Fatal(err)
				}
				before := view(m)
				m.Keep(plan)
				if early {
					m.PreApply()
					m.PreApply() // once only
					if a := m.Alloc("a9"); a == nil || a.Metrics != nil || m.NodeUsage("n1").CPU != 25 || m.NodeUsage("n2").CPU != 40 {
						t.Fatal("PreApply did not add the kept allocations")
					}
				}
				next := tt.next
				if next != nil {
					c := *next // Apply may keep the sync's objects
					next = &c
				}
				err := m.Apply(next)
				if tt.refused {
					if err == nil {
						t.Fatal("the sync was not refused")
					}
					if v := view(m); v != before {
						t.Fatalf("early %v: a refused sync left\n%s\nwant\n%s", early, v, before)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if a := m.Alloc("a9"); (a != nil) != tt.joined {
					t.Fatalf("early %v: kept allocation in the mirror: %v, want %v", early, a != nil, tt.joined)
				}
				if tt.joined {
					if a := m.Alloc("a9"); a.Job == nil || a.Job.Status != sdk.JobStatusRunning {
						t.Fatalf("early %v: the kept allocation is not linked to the job version the delta patched", early)
					}
				}
				got[i] = view(m)
			}
			if got[0] != got[1] {
				t.Fatalf("applied early, the mirror shows\n%s\nwant\n%s", got[1], got[0])
			}
		})
	}
	t.Run("kept again before the sync", func(t *testing.T) {
		m := mirror.New()
		if err := m.Apply(&abi.StateSync{Full: true, Index: 10, Nodes: []*sdk.Node{{ID: "n1"}, {ID: "n2"}},
			Jobs: []*sdk.Job{job}, Allocs: []*sdk.Allocation{old}}); err != nil {
			t.Fatal(err)
		}
		m.Keep(plan)
		m.PreApply()
		m.Keep(&sdk.Plan{Job: job}) // replaces the plan added early
		if err := m.Apply(&abi.StateSync{FromIndex: 10, Index: 12, Kept: &abi.Kept{Index: 11}}); err != nil {
			t.Fatal(err)
		}
		if m.Alloc("a9") != nil || m.NodeUsage("n1").CPU != 10 {
			t.Fatal("the plan a later Keep replaced is still in the mirror")
		}
	})
}

// The node list is kept sorted by ID through deltas of every size (edited
// in place for a few changes, rebuilt for many), equal to the node set.
func TestMirror_NodeListFollowsDeltas(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := mirror.New()
	want := map[string]*sdk.Node{}
	index := uint64(1)
	if err := m.Apply(&abi.StateSync{Full: true, Index: index}); err != nil {
		t.Fatal(err)
	}
	for step := 0; step < 400; step++ {
		s := &abi.StateSync{FromIndex: index, Index: index + 1}
		index++
		changes := 1 + rng.IntN(4)
		if step%50 == 0 {
			changes = 100 // over the in-place limit
		}
		used := map[string]bool{} // a delta names a node once (deletions apply first)
		for range changes {
			id := fmt.Sprintf("n%03d", rng.IntN(300))
			if used[id] {
				continue
			}
			used[id] = true
			if rng.IntN(3) == 0 {
				s.DeletedNodes = append(s.DeletedNodes, id)
				delete(want, id)
			} else {
				n := &sdk.Node{ID: id, Name: fmt.Sprint(step)}
				s.Nodes = append(s.Nodes, n)
				want[id] = n
			}
		}
		if err := m.Apply(s); err != nil {
			t.Fatal(err)
		}
		if step%3 == 0 { // the list is read between some deltas only
			continue
		}
		got := m.Nodes()
		if len(got) != len(want) {
			t.Fatalf("step %d: %d nodes, want %d", step, len(got), len(want))
		}
		for i, n := range got {
			if i > 0 && got[i-1].ID >= n.ID {
				t.Fatalf("step %d: not sorted at %d: %s, %s", step, i, got[i-1].ID, n.ID)
			}
			// The mirror holds a numbered copy of each node (Mirror.number):
			// Name says which delta it came from.
			if want[n.ID].Name != n.Name {
				t.Fatalf("step %d: node %s is not the latest one", step, n.ID)
			}
		}
	}
}

func TestMirror_JobStatusPatchesTheHeldSpecification(t *testing.T) {
	job := &sdk.Job{Namespace: "default", ID: "j", Version: 2, JobModifyIndex: 7, Status: sdk.JobStatusPending,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 3}}}
	newMirror := func(t *testing.T) *mirror.Mirror {
		m := mirror.New()
		if err := m.Apply(&abi.StateSync{Full: true, Index: 10, Jobs: []*sdk.Job{job}}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	running := *job
	running.Status, running.ModifyIndex = sdk.JobStatusRunning, 11
	tests := []struct {
		name    string
		status  *abi.JobStatus
		refused bool
	}{
		{"status of the held version", abi.StatusOf(&running), false},
		{"status of another version", &abi.JobStatus{Namespace: "default", ID: "j", JobModifyIndex: 9, Status: "running"}, true},
		{"status of an unknown job", &abi.JobStatus{Namespace: "default", ID: "other", JobModifyIndex: 7}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMirror(t)
			err := m.Apply(&abi.StateSync{FromIndex: 10, Index: 11, JobStatuses: []*abi.JobStatus{tt.status}})
			if tt.refused {
				if !errors.Is(err, mirror.ErrOutOfSync) {
					t.Fatalf("err = %v, want ErrOutOfSync", err)
				}
				if m.Index() != 10 || m.Job("default", "j") != job {
					t.Fatal("a refused delta changed the mirror")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := m.Job("default", "j")
			if got.Status != sdk.JobStatusRunning || got.ModifyIndex != 11 || got.TaskGroups[0] != job.TaskGroups[0] {
				t.Fatalf("job after the status: %+v", got)
			}
			if job.Status != sdk.JobStatusPending {
				t.Fatal("the status changed the job the mirror had handed out")
			}
			if m.JobVersion("default", "j", 2) != got {
				t.Fatal("the version is not the patched job")
			}
		})
	}
}

func TestMirror_MalformedSyncIsRefused(t *testing.T) {
	for _, s := range []*abi.StateSync{
		{Full: true, Index: 12, Nodes: []*sdk.Node{{ID: "n9"}, nil}},
		{FromIndex: 10, Index: 12, Jobs: []*sdk.Job{nil}},
		{FromIndex: 10, Index: 12, JobStatuses: []*abi.JobStatus{nil}},
		{FromIndex: 10, Index: 12, JobVersions: []*sdk.Job{nil}},
		{FromIndex: 10, Index: 12, Allocs: []*sdk.Allocation{alloc("a3", "n1", 1, "run"), nil}},
		{FromIndex: 10, Index: 12, Deployments: []*sdk.Deployment{nil}},
		{FromIndex: 10, Index: 12, Evals: []*sdk.Evaluation{nil}},
	} {
		m := mirror.New()
		if err := m.Apply(&abi.StateSync{Full: true, Index: 10, Nodes: []*sdk.Node{{ID: "n1"}},
			Allocs: []*sdk.Allocation{alloc("a1", "n1", 100, "run")}}); err != nil {
			t.Fatal(err)
		}
		if err := m.Apply(s); !errors.Is(err, mirror.ErrMalformed) {
			t.Fatalf("%+v: err = %v, want ErrMalformed", s, err)
		}
		if m.Index() != 10 || len(m.Nodes()) != 1 || m.Alloc("a3") != nil || m.NodeUsage("n1").CPU != 100 {
			t.Fatalf("%+v: a refused sync changed the mirror", s)
		}
	}
}

// The allocation indexes (by job, by node, node usage) equal what the
// allocations held say, through random deltas and kept plans: plans of
// more allocations than a small set holds, allocations that move between
// jobs and nodes, and a job's last allocation replaced in the delta that
// empties its set; kept plans confirmed or forgotten, applied early
// (PreApply) or not.
func TestMirror_AllocIndexesFollowDeltas(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	jobs := []*sdk.Job{{Namespace: "default", ID: "j0"}, {Namespace: "default", ID: "j1"}, {Namespace: "other", ID: "j0"}}
	nodes := []*sdk.Node{{ID: "n0"}, {ID: "n1"}, {ID: "n2"}}
	m := mirror.New()
	index := uint64(1)
	if err := m.Apply(&abi.StateSync{Full: true, Index: index, Nodes: nodes, Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	// The job's only allocation replaced: its set empties and refills.
	only := alloc("a000", "n0", 10, sdk.AllocDesiredStatusRun)
	only.JobID = "j0"
	if err := m.Apply(&abi.StateSync{FromIndex: index, Index: index + 1, Allocs: []*sdk.Allocation{only}}); err != nil {
		t.Fatal(err)
	}
	again := alloc("a000", "n1", 20, sdk.AllocDesiredStatusRun)
	again.JobID = "j0"
	if err := m.Apply(&abi.StateSync{FromIndex: index + 1, Index: index + 2, Allocs: []*sdk.Allocation{again}}); err != nil {
		t.Fatal(err)
	}
	index += 2
	want := map[string]*sdk.Allocation{"a000": again}
	newAlloc := func(id string) *sdk.Allocation {
		j := jobs[rng.IntN(len(jobs))]
		status := sdk.AllocDesiredStatusRun
		if rng.IntN(5) == 0 {
			status = sdk.AllocDesiredStatusStop
		}
		a := alloc(id, nodes[rng.IntN(len(nodes))].ID, int64(1+rng.IntN(100)), status)
		a.Namespace, a.JobID = j.Namespace, j.ID
		if rng.IntN(5) == 0 {
			a.ClientStatus = sdk.AllocClientStatusComplete
		}
		return a
	}
	for step := 0; step < 300; step++ {
		s := &abi.StateSync{FromIndex: index, Index: index + 2}
		index += 2
		used := map[string]bool{} // a delta names an allocation once
		if rng.IntN(3) == 0 {
			// A kept plan of one job, new allocations and replacements.
			j := jobs[rng.IntN(len(jobs))]
			plan := &sdk.Plan{Job: j, NodeAllocation: map[string][]*sdk.Allocation{}}
			for range rng.IntN(40) {
				a := newAlloc(fmt.Sprintf("a%03d", rng.IntN(120)))
				a.Namespace, a.JobID, a.DesiredStatus = j.Namespace, j.ID, sdk.AllocDesiredStatusRun
				if used[a.ID] {
					continue // a plan names an allocation once
				}
				plan.NodeAllocation[a.NodeID] = append(plan.NodeAllocation[a.NodeID], a)
				used[a.ID] = true
			}
			m.Keep(plan)
			if rng.IntN(2) == 0 {
				m.PreApply() // as the plugin does when idle
			}
			// Mostly confirmed; otherwise the plan is forgotten.
			if rng.IntN(4) != 0 {
				s.Kept = &abi.Kept{Index: index - 1}
				for _, as := range plan.NodeAllocation {
					for _, a := range as {
						want[a.ID] = a
					}
				}
			}
		}
		for range rng.IntN(6) {
			id := fmt.Sprintf("a%03d", rng.IntN(120))
			if used[id] {
				continue
			}
			used[id] = true
			if rng.IntN(3) == 0 {
				s.DeletedAllocs = append(s.DeletedAllocs, id)
				delete(want, id)
				continue
			}
			a := newAlloc(id)
			s.Allocs = append(s.Allocs, a)
			want[id] = a
		}
		if err := m.Apply(s); err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			var ids []string
			for _, a := range m.AllocsByJob(j.Namespace, j.ID) {
				ids = append(ids, a.ID)
			}
			var wantIDs []string
			for id, a := range want {
				if a.Namespace == j.Namespace && a.JobID == j.ID {
					wantIDs = append(wantIDs, id)
				}
			}
			slices.Sort(wantIDs)
			if !slices.Equal(ids, wantIDs) {
				t.Fatalf("step %d: job %s/%s holds %v, want %v", step, j.Namespace, j.ID, ids, wantIDs)
			}
		}
		var ids, wantIDs []string
		for _, a := range m.Allocs() {
			ids = append(ids, a.ID)
		}
		for id := range want {
			wantIDs = append(wantIDs, id)
		}
		slices.Sort(wantIDs)
		if !slices.Equal(ids, wantIDs) {
			t.Fatalf("step %d: the mirror lists %v, want %v", step, ids, wantIDs)
		}
		for _, n := range nodes {
			var usage sdk.Usage
			count := 0
			for _, a := range want {
				if a.NodeID != n.ID {
					continue
				}
				count++
				if !a.ClientTerminalStatus() { // stopped but running still holds
					usage.Add(a.Usage())
				}
			}
			if got := len(m.AllocsByNode(n.ID)); got != count {
				t.Fatalf("step %d: node %s holds %d allocations, want %d", step, n.ID, got, count)
			}
			if got := m.NodeUsage(n.ID); got != usage {
				t.Fatalf("step %d: node %s uses %+v, want %+v", step, n.ID, got, usage)
			}
		}
	}
}

// TestMirror_NumbersItsNodes checks the numbers the mirror gives its nodes
// and their classes (sdk.Node.Slots) over random deltas: each held node
// has its own number below NodeSlots, keeps it while it is updated,
// Occupancy by number agrees with NodeUsage and Capacity, nodes of a class
// share its number and one class string and other classes have others,
// numbers of deleted nodes and of classes no node holds any more are
// given again, and the sync's own nodes are left unnumbered.
func TestMirror_NumbersItsNodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := mirror.New()
	if err := m.Apply(&abi.StateSync{Full: true, Index: 1, Jobs: []*sdk.Job{{Namespace: "default", ID: "j", Version: 2}}}); err != nil {
		t.Fatal(err)
	}
	slotOf := map[string]int32{} // node ID -> number, while held
	// maxClasses bounds the classes held at once, within a delta too: its
	// count before the delta, plus one for each node the delta brings.
	maxClasses, held := 0, 0
	allocs := map[string]bool{}
	index := uint64(1)
	var freed []int32
	next := int32(1)
	for step := range 300 {
		s := &abi.StateSync{FromIndex: index, Index: index + 1}
		index++
		used := map[string]bool{}
		for range rng.IntN(6) {
			id := fmt.Sprintf("n%02d", rng.IntN(40))
			if used[id] {
				continue
			}
			used[id] = true
			if _, held := slotOf[id]; held && rng.IntN(3) == 0 {
				s.DeletedNodes = append(s.DeletedNodes, id)
				continue
			}
			cpu := int64(1000 * (1 + rng.IntN(4)))
			s.Nodes = append(s.Nodes, &sdk.Node{ID: id, ComputedClass: fmt.Sprintf("v1:%d", rng.IntN(60)),
				NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: cpu}}})
		}
		for range rng.IntN(4) {
			id := fmt.Sprintf("a%03d", rng.IntN(200))
			if allocs[id] {
				s.DeletedAllocs = append(s.DeletedAllocs, id)
				delete(allocs, id)
				continue
			}
			allocs[id] = true
			s.Allocs = append(s.Allocs, alloc(id, fmt.Sprintf("n%02d", rng.IntN(40)), int64(1+rng.IntN(100)), "run"))
		}
		if err := m.Apply(s); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		for _, id := range s.DeletedNodes {
			freed = append(freed, slotOf[id])
			delete(slotOf, id)
		}
		for _, n := range s.Nodes {
			if a, b := n.Slots(); a != 0 || b != 0 {
				t.Fatalf("step %d: the sync's node %s was numbered", step, n.ID)
			}
			held := m.Node(n.ID)
			slot, class := held.Slots()
			if want, ok := slotOf[n.ID]; ok && slot != want {
				t.Fatalf("step %d: node %s renumbered %d -> %d", step, n.ID, want, slot)
			}
			if _, ok := slotOf[n.ID]; !ok {
				// A new node takes a freed number if there is one.
				if i := slices.Index(freed, slot); i >= 0 {
					freed = slices.Delete(freed, i, i+1)
				} else if len(freed) > 0 || slot != next {
					t.Fatalf("step %d: new node %s numbered %d; freed %v, next %d", step, n.ID, slot, freed, next)
				} else {
					next++
				}
			}
			slotOf[n.ID] = slot
			if class <= 0 {
				t.Fatalf("step %d: node %s has no class number", step, n.ID)
			}
		}
		seen := map[int32]string{}
		classStr := map[int32]*byte{}
		classOf := map[string]int32{}
		for _, n := range m.Nodes() {
			slot, class := n.Slots()
			if slot <= 0 || int(slot) >= m.NodeSlots() || m.Numbered(n) != slot {
				t.Fatalf("step %d: node %s numbered %d (Numbered %d, bound %d)", step, n.ID, slot, m.Numbered(n), m.NodeSlots())
			}
			if other, dup := seen[slot]; dup {
				t.Fatalf("step %d: nodes %s and %s both numbered %d", step, other, n.ID, slot)
			}
			seen[slot] = n.ID
			if p, ok := classStr[class]; ok && p != unsafe.StringData(n.ComputedClass) {
				t.Fatalf("step %d: nodes of class %d hold different strings", step, class)
			}
			classStr[class] = unsafe.StringData(n.ComputedClass)
			if c, ok := classOf[n.ComputedClass]; ok && c != class {
				t.Fatalf("step %d: class %s numbered %d and %d", step, n.ComputedClass, c, class)
			}
			classOf[n.ComputedClass] = class
			used, capacity := m.Occupancy(slot)
			if used != m.NodeUsage(n.ID) || capacity != n.Capacity() {
				t.Fatalf("step %d: node %s occupancy %+v/%+v, want %+v/%+v", step, n.ID, used, capacity, m.NodeUsage(n.ID), n.Capacity())
			}
			if c := *n; m.Numbered(&c) != 0 {
				t.Fatalf("step %d: a copy of node %s is numbered", step, n.ID)
			}
		}
		if len(classStr) != len(classOf) {
			t.Fatalf("step %d: %d classes share %d numbers", step, len(classOf), len(classStr))
		}
		maxClasses, held = max(maxClasses, held+len(s.Nodes)), len(classOf)
		for _, c := range classOf {
			if int(c) > maxClasses {
				t.Fatalf("step %d: class number %d, but at most %d classes were held at once", step, c, maxClasses)
			}
		}
	}
	// 40 node IDs: numbers are given again rather than growing with churn.
	if m.NodeSlots() > 41 {
		t.Fatalf("NodeSlots = %d for at most 40 nodes at once", m.NodeSlots())
	}
}
