package blocked

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// fakeBroker records what the tracker enqueues, with tokens.
type fakeBroker struct{ got map[string]string }

func (f *fakeBroker) EnqueueAll(evals map[*sdk.Evaluation]string) {
	for e, tok := range evals {
		f.got[e.ID] = tok
	}
}

func (f *fakeBroker) take() []string {
	ids := make([]string, 0, len(f.got))
	for id := range f.got {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	f.got = map[string]string{}
	return ids
}

func newTracker() (*Tracker, *fakeBroker) {
	fb := &fakeBroker{got: map[string]string{}}
	t := New(fb)
	t.SetEnabled(true)
	return t, fb
}

func blockedEval(id, job string, snapshot uint64, elig map[string]bool) *sdk.Evaluation {
	return &sdk.Evaluation{ID: id, Namespace: "default", JobID: job, Type: "service", Status: sdk.EvalStatusBlocked,
		TriggeredBy: sdk.EvalTriggerQueuedAllocs, ClassEligibility: elig, SnapshotIndex: snapshot, CreateIndex: snapshot}
}

func TestTracker_Unblock_ByClass(t *testing.T) {
	cases := []struct {
		name    string
		elig    map[string]bool
		escaped bool
		class   string
		want    bool
	}{
		{"eligible class", map[string]bool{"a": true, "b": false}, false, "a", true},
		{"ineligible class", map[string]bool{"a": true, "b": false}, false, "b", false},
		{"class never seen", map[string]bool{"a": true}, false, "c", true},
		{"escaped, any class", map[string]bool{"a": false}, true, "a", true},
		{"no eligibility recorded", nil, false, "z", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, fb := newTracker()
			e := blockedEval("b1", "web", 10, tc.elig)
			e.EscapedComputedClass = tc.escaped
			tr.Block(e)
			if got := fb.take(); len(got) != 0 {
				t.Fatalf("enqueued on block: %v", got)
			}
			tr.Unblock(tc.class, 20)
			got := len(fb.take()) == 1
			if got != tc.want {
				t.Fatalf("unblocked = %v, want %v", got, tc.want)
			}
			if tracked := tr.Blocked("default", "web") != nil; tracked == tc.want {
				t.Fatalf("still tracked = %v after unblocked = %v", tracked, tc.want)
			}
		})
	}
}

func TestTracker_Block_MissedUnblock(t *testing.T) {
	cases := []struct {
		name     string
		elig     map[string]bool
		escaped  bool
		snapshot uint64
		want     bool
	}{
		{"eligible class changed after snapshot", map[string]bool{"a": true}, false, 10, true},
		{"eligible class changed before snapshot", map[string]bool{"a": true}, false, 30, false},
		{"only ineligible class changed after", map[string]bool{"a": false, "b": true}, false, 10, false},
		{"unseen class changed after snapshot", map[string]bool{"b": true}, false, 10, true},
		{"escaped and anything changed after", map[string]bool{"b": false}, true, 10, true},
		{"escaped and nothing after", nil, true, 30, false},
		// Nomad's missedUnblock: SnapshotIndex < index holds for 0, so an
		// eval of unknown view is retried rather than left waiting.
		{"no snapshot index", map[string]bool{"a": true}, false, 0, true},
		{"no snapshot index, only ineligible class changed", map[string]bool{"a": false}, false, 0, false},
		{"no eligibility recorded, anything changed after", nil, false, 10, true},
		{"no eligibility recorded, nothing after", nil, false, 30, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, fb := newTracker()
			tr.Unblock("a", 20) // nothing blocked yet; the index is remembered
			e := blockedEval("b1", "web", tc.snapshot, tc.elig)
			e.EscapedComputedClass = tc.escaped
			tr.Reblock(e, "tok")
			got := fb.take()
			if (len(got) == 1) != tc.want {
				t.Fatalf("enqueued %v, want missed unblock = %v", got, tc.want)
			}
			if tc.want && tr.Blocked("default", "web") != nil {
				t.Fatal("an eval enqueued at once is also tracked")
			}
		})
	}
}

// TestTracker_NoClassEligibility_IsCaptured mirrors Nomad's processBlock:
// only EscapedComputedClass makes an eval escaped; one that saw no class at
// all (no node was there) is captured, counted as such in the stats, and
// unblocked by a change on any class because it never saw that class.
func TestTracker_NoClassEligibility_IsCaptured(t *testing.T) {
	tr, fb := newTracker()
	tr.Block(blockedEval("b1", "web", 10, nil))
	esc := blockedEval("b2", "api", 10, nil)
	esc.EscapedComputedClass = true
	tr.Block(esc)
	if s := tr.Stats(); s.TotalBlocked != 2 || s.TotalEscaped != 1 || s.TotalCaptured != 1 {
		t.Fatalf("stats = %+v, want 2 blocked, 1 escaped, 1 captured", s)
	}
	tr.Unblock("any", 20)
	if got := fb.take(); !slices.Equal(got, []string{"b1", "b2"}) {
		t.Fatalf("unblocked %v, want both", got)
	}
}

// TestTracker_SystemEval_UnblockedByItsNodesClass: a system job's blocked
// eval (no NodeID in Drover, one per job) is let out by a change on the
// class of the nodes it failed on, which it saw eligible; Nomad's
// UnblockNode covers the same change by node.
func TestTracker_SystemEval_UnblockedByItsNodesClass(t *testing.T) {
	tr, fb := newTracker()
	e := blockedEval("b1", "agent", 10, map[string]bool{"full": true, "filtered": false})
	e.Type = sdk.JobTypeSystem
	tr.Block(e)
	tr.Unblock("filtered", 20)
	if got := fb.take(); len(got) != 0 {
		t.Fatalf("unblocked by an ineligible class: %v", got)
	}
	tr.Unblock("full", 30)
	if got := fb.take(); !slices.Equal(got, []string{"b1"}) {
		t.Fatalf("unblocked %v, want b1", got)
	}
}

func TestTracker_Reblock_PassesToken(t *testing.T) {
	tr, fb := newTracker()
	tr.Reblock(blockedEval("b1", "web", 10, map[string]bool{"a": true}), "tok-1")
	tr.Unblock("a", 20)
	if fb.got["b1"] != "tok-1" {
		t.Fatalf("token = %q, want tok-1", fb.got["b1"])
	}
}

func TestTracker_SetUnblockIndex_RestoresMissedUnblocks(t *testing.T) {
	tr, fb := newTracker()
	tr.SetUnblockIndex("a", 50)
	if got := fb.take(); len(got) != 0 {
		t.Fatalf("SetUnblockIndex enqueued %v", got)
	}
	tr.Block(blockedEval("old", "web", 40, map[string]bool{"a": true}))
	tr.Block(blockedEval("new", "api", 60, map[string]bool{"a": true}))
	if got := fb.take(); !slices.Equal(got, []string{"old"}) {
		t.Fatalf("enqueued %v, want [old]", got)
	}
	if tr.Blocked("default", "api") == nil {
		t.Fatal("an eval newer than every unblock is not tracked")
	}
}

func TestTracker_OneBlockedEvalPerJob_NewestViewWins(t *testing.T) {
	tr, fb := newTracker()
	older := blockedEval("older", "web", 10, map[string]bool{"a": true})
	newer := blockedEval("newer", "web", 20, map[string]bool{"a": true})
	tr.Block(newer)
	tr.Block(older)
	dups, _, _ := tr.Duplicates()
	if len(dups) != 1 || dups[0].ID != "older" {
		t.Fatalf("duplicates = %v, want [older]", dups)
	}
	if tr.Blocked("default", "web").ID != "newer" {
		t.Fatal("the newest eval is not the tracked one")
	}
	// A reblocked eval with an old create index but a newer snapshot wins.
	re := blockedEval("older", "web", 30, map[string]bool{"a": true})
	re.CreateIndex = 10
	tr.Block(re)
	dups, _, _ = tr.Duplicates()
	if len(dups) != 1 || dups[0].ID != "newer" {
		t.Fatalf("duplicates = %v, want [newer]", dups)
	}
	if s := tr.Stats(); s.TotalBlocked != 1 || s.TotalDuplicates != 0 {
		t.Fatalf("stats = %+v", s)
	}
	tr.Unblock("a", 40)
	if got := fb.take(); !slices.Equal(got, []string{"older"}) {
		t.Fatalf("unblocked %v", got)
	}
}

func TestTracker_Block_SameEvalAgainReplacesIt(t *testing.T) {
	tr, _ := newTracker()
	tr.Block(blockedEval("b1", "web", 10, map[string]bool{"a": false}))
	tr.Block(blockedEval("b1", "web", 20, map[string]bool{"a": true}))
	if dups, _, _ := tr.Duplicates(); len(dups) != 0 {
		t.Fatalf("an eval is its own duplicate: %v", dups)
	}
	if e := tr.Blocked("default", "web"); e.SnapshotIndex != 20 {
		t.Fatalf("tracked %+v, want the new version", e)
	}
}

func TestTracker_UnblockFailed_OnlyMaxPlanAttempts(t *testing.T) {
	tr, fb := newTracker()
	mp := blockedEval("mp", "web", 10, map[string]bool{"a": false})
	mp.TriggeredBy = sdk.EvalTriggerMaxPlans
	mpEsc := blockedEval("mp-esc", "api", 10, nil)
	mpEsc.TriggeredBy = sdk.EvalTriggerMaxPlans
	mpEsc.EscapedComputedClass = true
	tr.Block(mp)
	tr.Block(mpEsc)
	tr.Block(blockedEval("queued", "db", 10, map[string]bool{"a": false}))
	tr.UnblockFailed()
	if got := fb.take(); !slices.Equal(got, []string{"mp", "mp-esc"}) {
		t.Fatalf("unblocked %v, want the max-plan-attempts evals", got)
	}
	if tr.Blocked("default", "db") == nil {
		t.Fatal("a queued-allocs eval was unblocked by UnblockFailed")
	}
}

func TestTracker_Untrack_HandsEvalToReaper(t *testing.T) {
	tr, fb := newTracker()
	tr.Block(blockedEval("b1", "web", 10, nil))
	tr.Untrack("default", "web")
	dups, retired, wake := tr.Duplicates()
	if len(dups) != 0 || len(retired) != 1 || retired[0].ID != "b1" {
		t.Fatalf("duplicates = %v, retired = %v; want b1 retired", dups, retired)
	}
	select {
	case <-wake:
	default:
		t.Fatal("the reaper was not woken")
	}
	tr.Unblock("a", 20)
	if got := fb.take(); len(got) != 0 {
		t.Fatalf("an untracked eval was unblocked: %v", got)
	}
	tr.Untrack("default", "nothing") // no-op
}

func TestTracker_Disabled_DoesNothingAndFlushes(t *testing.T) {
	tr, fb := newTracker()
	tr.Block(blockedEval("b1", "web", 10, nil))
	tr.SetEnabled(false)
	tr.Block(blockedEval("b2", "api", 10, nil))
	tr.Unblock("a", 20)
	tr.SetEnabled(true)
	if s := tr.Stats(); s.TotalBlocked != 0 {
		t.Fatalf("stats after flush %+v", s)
	}
	tr.Unblock("a", 30)
	if got := fb.take(); len(got) != 0 {
		t.Fatalf("enqueued %v", got)
	}
}

// TestTracker_Property_NoEvalLost drives random blocks, unblocks and
// untracks, and checks that every blocked eval ends up in exactly one of:
// tracked, enqueued, duplicate; and that the tracker holds at most one eval
// per job.
func TestTracker_Property_NoEvalLost(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			tr, fb := newTracker()
			fate := map[string]string{}
			classes := []string{"a", "b", "c"}
			index := uint64(0)
			for step := 0; step < 300; step++ {
				index++
				switch r.IntN(4) {
				case 0, 1:
					id := fmt.Sprintf("e%d", step)
					elig := map[string]bool{}
					for _, c := range classes {
						if r.IntN(2) == 0 {
							elig[c] = r.IntN(2) == 0
						}
					}
					e := blockedEval(id, fmt.Sprintf("j%d", r.IntN(5)), index-uint64(r.IntN(3)), elig)
					e.EscapedComputedClass = r.IntN(5) == 0
					tr.Block(e)
					fate[id] = "blocked"
				case 2:
					tr.Unblock(classes[r.IntN(len(classes))], index)
				case 3:
					tr.Untrack("default", fmt.Sprintf("j%d", r.IntN(5)))
				}
				for _, id := range fb.take() {
					fate[id] = "enqueued"
				}
				dups, retired, _ := tr.Duplicates()
				for _, d := range append(dups, retired...) {
					fate[d.ID] = "duplicate"
				}
				tracked := map[string]bool{}
				for j := 0; j < 5; j++ {
					if e := tr.Blocked("default", fmt.Sprintf("j%d", j)); e != nil {
						tracked[e.ID] = true
					}
				}
				if s := tr.Stats(); s.TotalBlocked != len(tracked) {
					t.Fatalf("step %d: %d tracked, %d jobs with a blocked eval", step, s.TotalBlocked, len(tracked))
				}
				for id, f := range fate {
					if (f == "blocked") != tracked[id] {
						t.Fatalf("step %d: eval %s is %s but tracked=%v", step, id, f, tracked[id])
					}
				}
			}
		})
	}
}

// TestTracker_Stats_BlockedResources mirrors Nomad's generateResourceStats:
// an eval's exhausted resources count for its job and for every pair of a
// datacenter with available nodes and an exhausted class ("" if none).
func TestTracker_Stats_BlockedResources(t *testing.T) {
	tr, _ := newTracker()
	web := blockedEval("b1", "web", 10, map[string]bool{"c1": true})
	web.FailedTGAllocs = map[string]*sdk.AllocMetric{"g": {
		NodesAvailable:     map[string]int{"dc1": 1, "dc2": 2},
		ClassExhausted:     map[string]int{"c1": 1},
		ResourcesExhausted: map[string]*sdk.Resources{"t1": {CPU: 100, MemoryMB: 200}, "t2": {CPU: 10, MemoryMB: 20}},
	}}
	api := blockedEval("b2", "api", 10, nil)
	api.EscapedComputedClass = true
	api.FailedTGAllocs = map[string]*sdk.AllocMetric{"g": {
		NodesAvailable:     map[string]int{"dc1": 1},
		ResourcesExhausted: map[string]*sdk.Resources{"t": {CPU: 50, MemoryMB: 60}},
	}}
	tr.Block(web)
	tr.Block(api)
	st := tr.Stats()
	wantJob := map[sdk.NamespacedID]Resources{
		{Namespace: "default", ID: "web"}: {CPU: 110, MemoryMB: 220},
		{Namespace: "default", ID: "api"}: {CPU: 50, MemoryMB: 60},
	}
	wantClass := map[ClassInDC]Resources{
		{Datacenter: "dc1", Class: "c1"}: {CPU: 110, MemoryMB: 220},
		{Datacenter: "dc2", Class: "c1"}: {CPU: 110, MemoryMB: 220},
		{Datacenter: "dc1", Class: ""}:   {CPU: 50, MemoryMB: 60},
	}
	if !maps.Equal(st.ByJob, wantJob) || !maps.Equal(st.ByClassInDC, wantClass) {
		t.Fatalf("by job %v, by class in dc %v", st.ByJob, st.ByClassInDC)
	}
	tr.Unblock("c1", 20)
	if st := tr.Stats(); len(st.ByJob) != 0 || len(st.ByClassInDC) != 0 {
		t.Fatalf("unblocked evals still counted: %+v", st)
	}
}
