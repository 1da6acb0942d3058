package abi

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// placement is a new allocation as the Go SDK's schedulers make them.
func placement(id, node string, res *sdk.AllocatedResources) *sdk.Allocation {
	return &sdk.Allocation{ID: id, Namespace: "default", EvalID: "e1", Name: "web.g[" + id + "]", NodeID: node,
		NodeName: "name-" + node, JobID: "web", JobVersion: 3, TaskGroup: "g", AllocatedResources: res,
		Metrics: &sdk.AllocMetric{NodesEvaluated: 2, NodesInPool: 10, NodePool: "default", NodesAvailable: map[string]int{"dc1": 10},
			ScoreMetaData: []*sdk.NodeScoreMeta{{NodeID: node, NormScore: 0.5}}},
		DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending, DeploymentID: "d1"}
}

// roundTrip sends na as a plugin whose host declares 1.10 does, and checks
// that the host decodes and expands the same lists as it decodes when na
// is sent whole, and that na is as it was once Reset has put back what
// Split took. It returns the split that was sent.
func roundTrip(t *testing.T, na map[string][]*sdk.Allocation) *Placements {
	t.Helper()
	want := decodePlan(t, &PlanRequest{Plan: &sdk.Plan{EvalID: "e1", NodeAllocation: na}})
	var p Placements
	p.ShareNodesAvailable(true)
	p.Split(na)
	sent := &Placements{Whole: maps.Clone(p.Whole), Shared: append([]*sdk.Allocation(nil), p.Shared...), Placed: append([]Placed(nil), p.Placed...),
		nodesAvailable: p.NodesAvailable()}
	got := decodePlan(t, &PlanRequest{Plan: &sdk.Plan{EvalID: "e1", NodeAllocation: p.Whole}, Shared: p.Shared, Placed: p.Placed,
		NodesAvailable: p.NodesAvailable()})
	p.Reset()
	samePlans(t, "expanded", got, want)
	samePlans(t, "after Reset", decodePlan(t, &PlanRequest{Plan: &sdk.Plan{EvalID: "e1", NodeAllocation: na}}), want)
	return sent
}

// samePlans fails t unless got and want hold equal node lists.
func samePlans(t *testing.T, what string, got, want map[string][]*sdk.Allocation) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d nodes, want %d", what, len(got), len(want))
	}
	for node, as := range want {
		bs := got[node]
		if len(bs) != len(as) {
			t.Fatalf("%s: node %s: %d allocations, want %d", what, node, len(bs), len(as))
		}
		for i := range as {
			if !reflect.DeepEqual(bs[i], as[i]) {
				t.Fatalf("%s: node %s, allocation %d:\n got %+v\nwant %+v", what, node, i, bs[i], as[i])
			}
		}
	}
}

// decodePlan encodes req and returns the new allocations the host decodes
// and expands from it.
func decodePlan(t *testing.T, req *PlanRequest) map[string][]*sdk.Allocation {
	t.Helper()
	b, err := req.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got PlanRequest
	if err := Decode(b, &got); err != nil {
		t.Fatal(err)
	}
	if err := got.Expand(); err != nil {
		t.Fatal(err)
	}
	if got.Shared != nil || got.Placed != nil {
		t.Fatal("Expand left its input in the request")
	}
	return got.Plan.NodeAllocation
}

func TestPlacements_SplitAndExpand(t *testing.T) {
	shared := &sdk.AllocatedResources{Shared: sdk.AllocatedSharedResources{DiskMB: 150}}
	other := &sdk.AllocatedResources{Shared: sdk.AllocatedSharedResources{DiskMB: 300}}
	yes := true
	tests := []struct {
		name       string
		plan       func() map[string][]*sdk.Allocation
		wantPlaced int
		wantWhole  int // node lists sent whole
		wantShared int
	}{
		{"one template for a group's placements", func() map[string][]*sdk.Allocation {
			return map[string][]*sdk.Allocation{"n1": {placement("a1", "n1", shared), placement("a2", "n1", shared)},
				"n2": {placement("a3", "n2", shared)}}
		}, 3, 0, 1},
		{"own fields differ", func() map[string][]*sdk.Allocation {
			a, b := placement("a1", "n1", shared), placement("a2", "n2", shared)
			a.PreviousAllocation, a.RescheduleTracker = "old", &sdk.RescheduleTracker{}
			b.DeploymentStatus = &sdk.AllocDeploymentStatus{Canary: true}
			b.Metrics = &sdk.AllocMetric{NodesEvaluated: 9, NodesInPool: 10, NodePool: "default", NodesAvailable: map[string]int{"dc1": 10}}
			return map[string][]*sdk.Allocation{"n1": {a}, "n2": {b}}
		}, 2, 0, 1},
		{"equal resources behind two pointers make two templates", func() map[string][]*sdk.Allocation {
			copied := *shared
			return map[string][]*sdk.Allocation{"n1": {placement("a1", "n1", shared)}, "n2": {placement("a2", "n2", &copied)}}
		}, 2, 0, 2},
		{"a shared field differs", func() map[string][]*sdk.Allocation {
			a := placement("a2", "n2", other)
			a.TaskGroup, a.DeploymentID = "h", ""
			return map[string][]*sdk.Allocation{"n1": {placement("a1", "n1", shared)}, "n2": {a}}
		}, 2, 0, 2},
		{"a list with an allocation that cannot be placed goes whole", func() map[string][]*sdk.Allocation {
			a := placement("a3", "n2", shared)
			a.PreemptedAllocations = []string{"x"}
			b := placement("a5", "n3", shared)
			b.DesiredTransition.Migrate = &yes
			c := placement("a6", "n4", shared)
			c.TaskStates = map[string]sdk.Opaque{"t": nil}
			return map[string][]*sdk.Allocation{"n1": {placement("a1", "n1", shared)},
				"n2": {placement("a2", "n2", shared), a, placement("a4", "n2", shared)}, "n3": {b}, "n4": {c}}
		}, 1, 3, 1},
		{"templates run out", func() map[string][]*sdk.Allocation {
			na := map[string][]*sdk.Allocation{}
			for i := range maxShared + 2 {
				node := fmt.Sprintf("n%d", i)
				na[node] = []*sdk.Allocation{placement(fmt.Sprint(i), node, &sdk.AllocatedResources{})}
			}
			return na
		}, maxShared, 2, maxShared},
		{"an allocation on another node than its list's", func() map[string][]*sdk.Allocation {
			return map[string][]*sdk.Allocation{"n1": {placement("a1", "n2", shared)}}
		}, 0, 1, 0},
		{"empty lists keep their keys", func() map[string][]*sdk.Allocation {
			return map[string][]*sdk.Allocation{"n1": {placement("a1", "n1", shared)}, "n2": {}, "n3": nil}
		}, 1, 2, 1},
		{"a list that goes whole takes back the templates made for it", func() map[string][]*sdk.Allocation {
			a := placement("a2", "n1", other)
			a.PreemptedAllocations = []string{"x"}
			return map[string][]*sdk.Allocation{"n1": {placement("a1", "n1", other), a}}
		}, 0, 1, 0},
		{"no new allocations", func() map[string][]*sdk.Allocation { return nil }, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sent := roundTrip(t, tt.plan())
			if len(sent.Placed) != tt.wantPlaced || len(sent.Whole) != tt.wantWhole || len(sent.Shared) != tt.wantShared {
				t.Fatalf("sent %d placed, %d lists whole, %d templates; want %d, %d, %d", len(sent.Placed), len(sent.Whole),
					len(sent.Shared), tt.wantPlaced, tt.wantWhole, tt.wantShared)
			}
			for _, tmpl := range sent.Shared {
				if tmpl.ID != "" || tmpl.NodeID != "" || tmpl.Metrics != nil {
					t.Fatalf("a template carries an allocation's own fields: %+v", tmpl)
				}
			}
		})
	}
}

// TestPlacements_EveryFieldSurvives makes two placements that differ in one
// field of sdk.Allocation, for each field in turn, and checks that both
// arrive as sent: a field added to Allocation but not to shares, Placed
// or the conditions of template is caught here.
func TestPlacements_EveryFieldSurvives(t *testing.T) {
	typ := reflect.TypeFor[sdk.Allocation]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name == "Job" { // never on the wire: the plan carries it
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			res := &sdk.AllocatedResources{}
			a, b := placement("a1", "n1", res), placement("a2", "n2", res)
			v := reflect.ValueOf(b).Elem().Field(i)
			setNonZero(t, v, reflect.ValueOf(a).Elem().Field(i))
			plan := map[string][]*sdk.Allocation{"n1": {a}, "n2": {b}}
			roundTrip(t, plan)
		})
	}
}

// TestPlacements_EveryMetricFieldSurvives does the same for the fields of
// the placements' metrics.
func TestPlacements_EveryMetricFieldSurvives(t *testing.T) {
	typ := reflect.TypeFor[sdk.AllocMetric]()
	for i := range typ.NumField() {
		t.Run(typ.Field(i).Name, func(t *testing.T) {
			res := &sdk.AllocatedResources{}
			a, b := placement("a1", "n1", res), placement("a2", "n2", res)
			setNonZero(t, reflect.ValueOf(b.Metrics).Elem().Field(i), reflect.ValueOf(a.Metrics).Elem().Field(i))
			roundTrip(t, map[string][]*sdk.Allocation{"n1": {a}, "n2": {b}})
		})
	}
}

// TestPlacements_SplitLeavesThePlanAsItWas: the plugin keeps its plan
// (ABI 1.2), so splitting it for the wire must not change it.
func TestPlacements_SplitLeavesThePlanAsItWas(t *testing.T) {
	res := &sdk.AllocatedResources{}
	na := map[string][]*sdk.Allocation{"n1": {placement("a1", "n1", res)}, "n2": {placement("a2", "n2", res)}}
	before, err := (&sdk.Plan{NodeAllocation: na}).MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	var p Placements
	p.Split(na)
	if len(p.Placed) != 2 {
		t.Fatalf("%d placed, want 2", len(p.Placed))
	}
	p.Reset()
	after, err := (&sdk.Plan{NodeAllocation: na}).MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	var was, is sdk.Plan
	if _, err := was.UnmarshalMsg(before); err != nil {
		t.Fatal(err)
	}
	if _, err := is.UnmarshalMsg(after); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(was, is) {
		t.Fatal("Split changed the plan")
	}
}

// setNonZero sets v to a value other than other's.
func setNonZero(t *testing.T, v, other reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(other.String() + "-changed")
	case reflect.Uint64, reflect.Uint32:
		v.SetUint(other.Uint() + 7)
	case reflect.Float64:
		v.SetFloat(other.Float() + 7)
	case reflect.Int64, reflect.Int:
		v.SetInt(other.Int() + 7)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem())
		v.Set(m)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.Struct:
		setNonZero(t, v.Field(0), other.Field(0))
	default:
		t.Fatalf("no test value for a %s field", v.Kind())
	}
}

// TestPlacements_SharesNodesAvailable: the NodesAvailable map that a
// plan's placements share travels once (ABI 1.10), and only then.
func TestPlacements_SharesNodesAvailable(t *testing.T) {
	res := &sdk.AllocatedResources{}
	// pass is n placements whose metrics hold one map, as a pass's do.
	pass := func(n int) map[string][]*sdk.Allocation {
		byDC := map[string]int{"dc1": 7, "dc2": 3}
		na := map[string][]*sdk.Allocation{}
		for i := range n {
			node := fmt.Sprintf("n%d", i%3)
			a := placement(fmt.Sprint(i), node, res)
			a.Metrics.NodesAvailable = byDC
			na[node] = append(na[node], a)
		}
		return na
	}
	first := func(na map[string][]*sdk.Allocation) *sdk.Allocation { return na["n0"][0] }
	tests := []struct {
		name  string
		plan  func() map[string][]*sdk.Allocation
		share bool
		want  bool // the map travels once
	}{
		{"one map for every placement", func() map[string][]*sdk.Allocation { return pass(5) }, true, true},
		{"a host older than 1.10", func() map[string][]*sdk.Allocation { return pass(5) }, false, false},
		{"a single placement", func() map[string][]*sdk.Allocation { return pass(1) }, true, false},
		{"a placement with a map of its own, equal", func() map[string][]*sdk.Allocation {
			na := pass(5)
			first(na).Metrics.NodesAvailable = maps.Clone(first(na).Metrics.NodesAvailable)
			return na
		}, true, false},
		{"a placement without metrics", func() map[string][]*sdk.Allocation {
			na := pass(5)
			na["n1"][0].Metrics = nil
			return na
		}, true, false},
		{"an empty map", func() map[string][]*sdk.Allocation {
			na, empty := pass(5), map[string]int{}
			for _, as := range na {
				for _, a := range as {
					a.Metrics.NodesAvailable = empty
				}
			}
			return na
		}, true, false},
		{"an allocation sent whole holds a placement's metric", func() map[string][]*sdk.Allocation {
			na := pass(5)
			w := placement("w", "n9", res)
			w.Metrics, w.TaskStates = first(na).Metrics, map[string]sdk.Opaque{"t": nil}
			na["n9"] = []*sdk.Allocation{w}
			return na
		}, true, false},
		{"an allocation sent whole with a metric of its own", func() map[string][]*sdk.Allocation {
			na := pass(5)
			w := placement("w", "n9", res)
			w.TaskStates = map[string]sdk.Opaque{"t": nil}
			na["n9"] = []*sdk.Allocation{w}
			return na
		}, true, true},
		{"an allocation sent whole with a metric of its own that holds the map", func() map[string][]*sdk.Allocation {
			na := pass(5)
			w := placement("w", "n9", res)
			w.Metrics.NodesAvailable, w.PreemptedAllocations = first(na).Metrics.NodesAvailable, []string{"x"}
			na["n9"] = []*sdk.Allocation{w}
			return na
		}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			na := tt.plan()
			byDC := first(na).Metrics.NodesAvailable
			var p Placements
			p.ShareNodesAvailable(tt.share)
			p.Split(na)
			if got := p.NodesAvailable() != nil; got != tt.want {
				t.Fatalf("NodesAvailable sent once: %v, want %v", got, tt.want)
			}
			b, err := (&PlanRequest{Plan: &sdk.Plan{NodeAllocation: p.Whole}, Shared: p.Shared, Placed: p.Placed,
				NodesAvailable: p.NodesAvailable()}).MarshalMsg(nil)
			if err != nil {
				t.Fatal(err)
			}
			p.Reset()
			if !sameMap(first(na).Metrics.NodesAvailable, byDC) {
				t.Fatal("Reset did not give the placements their map back")
			}
			var r PlanRequest
			if err := Decode(b, &r); err != nil {
				t.Fatal(err)
			}
			if tt.want {
				for i, e := range r.Placed {
					if e.Metrics.NodesAvailable != nil {
						t.Fatalf("entry %d carries NodesAvailable %v beside the plan's", i, e.Metrics.NodesAvailable)
					}
				}
			}
			if err := r.Expand(); err != nil {
				t.Fatal(err)
			}
			if r.NodesAvailable != nil {
				t.Fatal("Expand left NodesAvailable in the request")
			}
			var held map[string]int
			for _, as := range r.Plan.NodeAllocation {
				for _, a := range as {
					if a.Metrics == nil || a.ID == "w" { // the pass's placements only
						continue
					}
					if !reflect.DeepEqual(a.Metrics.NodesAvailable, byDC) && len(byDC) > 0 {
						t.Fatalf("allocation %s: NodesAvailable %v, want %v", a.ID, a.Metrics.NodesAvailable, byDC)
					}
					if tt.want {
						// The host holds one map for the plan, as the plugin did.
						if held == nil {
							held = a.Metrics.NodesAvailable
						} else if !sameMap(held, a.Metrics.NodesAvailable) {
							t.Fatalf("allocation %s holds a map of its own", a.ID)
						}
					}
				}
			}
		})
	}
}

// TestPlacements_ReusedForAPlanThatDoesNotShare: the guest reuses one
// Placements; what one plan's Split took must not travel with the next.
func TestPlacements_ReusedForAPlanThatDoesNotShare(t *testing.T) {
	res := &sdk.AllocatedResources{}
	byDC := map[string]int{"dc1": 4}
	sharing := map[string][]*sdk.Allocation{"n1": {placement("a1", "n1", res), placement("a2", "n1", res)}}
	for _, a := range sharing["n1"] {
		a.Metrics.NodesAvailable = byDC
	}
	own := map[string][]*sdk.Allocation{"n2": {placement("b1", "n2", res), placement("b2", "n2", res)}}
	var p Placements
	p.ShareNodesAvailable(true)
	p.Split(sharing)
	if !sameMap(p.NodesAvailable(), byDC) {
		t.Fatal("the first plan's map was not taken")
	}
	p.Reset()
	p.Split(own)
	if p.NodesAvailable() != nil {
		t.Fatalf("the second plan sends NodesAvailable %v", p.NodesAvailable())
	}
	for _, e := range p.Placed {
		if e.Metrics.NodesAvailable["dc1"] != 10 {
			t.Fatalf("entry %s: NodesAvailable %v", e.ID, e.Metrics.NodesAvailable)
		}
	}
	p.Reset()
	for _, a := range sharing["n1"] {
		if !sameMap(a.Metrics.NodesAvailable, byDC) {
			t.Fatalf("allocation %s lost its map", a.ID)
		}
	}
}

// TestPlanRequest_Expand_KeepsAnEntrysOwnNodesAvailable: the plan's map
// fills only the metrics that come without one.
func TestPlanRequest_Expand_KeepsAnEntrysOwnNodesAvailable(t *testing.T) {
	own := map[string]int{"dc9": 1}
	r := &PlanRequest{Plan: &sdk.Plan{}, Shared: []*sdk.Allocation{{}}, NodesAvailable: map[string]int{"dc1": 5},
		Placed: []Placed{
			{ID: "a", NodeID: "n1", Metrics: &sdk.AllocMetric{NodesAvailable: own}},
			{ID: "b", NodeID: "n1", Metrics: &sdk.AllocMetric{}},
			{ID: "c", NodeID: "n1"},
		}}
	if err := r.Expand(); err != nil {
		t.Fatal(err)
	}
	as := r.Plan.NodeAllocation["n1"]
	if !sameMap(as[0].Metrics.NodesAvailable, own) || as[1].Metrics.NodesAvailable["dc1"] != 5 || as[2].Metrics != nil {
		t.Fatalf("metrics: %+v, %+v, %+v", as[0].Metrics, as[1].Metrics, as[2].Metrics)
	}
}

func TestPlanRequest_Expand_RefusesEntriesWithoutATemplate(t *testing.T) {
	for _, r := range []*PlanRequest{
		{Plan: &sdk.Plan{}, Placed: []Placed{{Shared: 0, ID: "a"}}},
		{Plan: &sdk.Plan{}, Shared: []*sdk.Allocation{{}}, Placed: []Placed{{Shared: 1, ID: "a"}}},
		{Plan: &sdk.Plan{}, Shared: []*sdk.Allocation{nil}, Placed: []Placed{{Shared: 0, ID: "a"}}},
		{Shared: []*sdk.Allocation{{}}, Placed: []Placed{{Shared: 0, ID: "a"}}},
	} {
		if err := r.Expand(); !errors.Is(err, ErrPlaced) {
			t.Errorf("Expand = %v, want ErrPlaced", err)
		}
	}
}

// TestPlacements_RandomPlans round-trips random plans mixing placements
// that share templates, more templates than a plan may have, and lists
// that go whole: empty, holding a null or misfiled allocation, or one
// that cannot be placed.
func TestPlacements_RandomPlans(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := []*sdk.AllocatedResources{nil}
	for i := range 11 {
		pool = append(pool, &sdk.AllocatedResources{Shared: sdk.AllocatedSharedResources{DiskMB: int64(i)}})
	}
	for round := range 300 {
		na := map[string][]*sdk.Allocation{}
		byDC := map[string]int{"dc1": round}
		var last *sdk.Allocation
		for i := range rng.IntN(40) {
			node := fmt.Sprintf("n%d", rng.IntN(12))
			a := placement(fmt.Sprintf("%d-%d", round, i), node, pool[rng.IntN(len(pool))])
			if round%2 == 0 {
				// The placements of a pass share one map (ABI 1.10).
				a.Metrics.NodesAvailable = byDC
			}
			switch rng.IntN(14) {
			case 6:
				if round%4 == 0 && last != nil && last.Metrics != nil {
					// Sent whole, with a placed allocation's metric.
					a.Metrics, a.AllocStates = last.Metrics, []*sdk.AllocState{{Field: "ClientStatus"}}
				}
			case 0:
				a.TaskGroup = "h"
			case 1:
				a.PreemptedAllocations = []string{"x"}
			case 2:
				a.PreviousAllocation = "p"
			case 3:
				a.NodeID = "elsewhere"
			case 4:
				a = nil
			case 5:
				na[node] = append(na[node], []*sdk.Allocation{}...)
				continue
			}
			na[node] = append(na[node], a)
			if a != nil {
				last = a
			}
		}
		if rng.IntN(4) == 0 {
			na["empty"] = []*sdk.Allocation{}
		}
		roundTrip(t, na)
	}
}

// FuzzPlanRequest_Expand: whatever a plugin sends, decoding and expanding
// it fails cleanly or yields a plan holding every placed allocation.
func FuzzPlanRequest_Expand(f *testing.F) {
	res := &sdk.AllocatedResources{}
	var p Placements
	p.Split(map[string][]*sdk.Allocation{"n1": {placement("a1", "n1", res)}, "n2": {placement("a2", "n2", res)}})
	seed, err := (&PlanRequest{Plan: &sdk.Plan{EvalID: "e1"}, Shared: p.Shared, Placed: p.Placed}).MarshalMsg(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r PlanRequest
		if err := Decode(b, &r); err != nil || r.Plan == nil {
			return
		}
		placed := append([]Placed(nil), r.Placed...)
		before := 0
		for _, as := range r.Plan.NodeAllocation {
			before += len(as)
		}
		if err := r.Expand(); err != nil {
			return
		}
		after := 0
		for _, as := range r.Plan.NodeAllocation {
			after += len(as)
		}
		if after != before+len(placed) {
			t.Fatalf("%d allocations after expanding %d placed into %d", after, len(placed), before)
		}
		// Each node's entries close its list, in the order sent, with
		// their own fields.
		next := map[string]int{} // each node's first expanded entry, then the next
		for _, p := range placed {
			next[p.NodeID]--
		}
		for node := range next {
			next[node] += len(r.Plan.NodeAllocation[node])
		}
		for i, p := range placed {
			a := r.Plan.NodeAllocation[p.NodeID][next[p.NodeID]]
			next[p.NodeID]++
			if a.ID != p.ID || a.NodeID != p.NodeID || a.Name != p.Name || a.Metrics != p.Metrics {
				t.Fatalf("entry %d (%s on %s) expanded as %s on %s", i, p.ID, p.NodeID, a.ID, a.NodeID)
			}
		}
	})
}
