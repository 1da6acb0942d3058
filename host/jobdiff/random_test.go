package jobdiff_test

import (
	"math/rand"
	"reflect"
	"testing"

	"github.com/drover-sched/drover/host/jobdiff"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/reconcile"
)

// gen fills values of any sdk type at random: every field, nil pointers
// and nil elements of lists included, free-form blocks with nested maps,
// lists and nulls. Names and strings come from a few, so that two jobs
// share groups, tasks and blocks.
type gen struct{ r *rand.Rand }

var words = []string{"", "a", "b", "web", "x y"}

func (g gen) fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(words[g.r.Intn(len(words))])
	case reflect.Bool:
		v.SetBool(g.r.Intn(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(g.r.Intn(5)) - 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(g.r.Intn(4)))
	case reflect.Pointer:
		if g.r.Intn(4) == 0 {
			v.SetZero()
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		g.fill(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				g.fill(v.Field(i))
			}
		}
	case reflect.Slice:
		if g.r.Intn(4) == 0 {
			v.SetZero()
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), g.r.Intn(4), 3))
		for i := 0; i < v.Len(); i++ {
			g.fill(v.Index(i))
		}
	case reflect.Map:
		if g.r.Intn(4) == 0 {
			v.SetZero()
			return
		}
		v.Set(reflect.MakeMap(v.Type()))
		for n := g.r.Intn(4); n > 0; n-- {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			g.fill(k)
			g.fill(e)
			v.SetMapIndex(k, e)
		}
	case reflect.Interface:
		if x := g.opaque(3); x != nil {
			v.Set(reflect.ValueOf(x))
		} else {
			v.SetZero()
		}
	}
}

// opaque is a value of a free-form block, as a jobspec's conversion makes
// them: strings, whole numbers, other numbers, bools, nulls, lists and maps.
func (g gen) opaque(depth int) any {
	n := 5
	if depth > 0 {
		n = 7
	}
	switch g.r.Intn(n) {
	case 0:
		return words[g.r.Intn(len(words))]
	case 1:
		return int64(g.r.Intn(5))
	case 2:
		return float64(g.r.Intn(5)) + 0.5
	case 3:
		return g.r.Intn(2) == 0
	case 4:
		return nil
	case 5:
		l := make([]any, g.r.Intn(4))
		for i := range l {
			l[i] = g.opaque(depth - 1)
		}
		return l
	}
	m := map[string]any{}
	for n := g.r.Intn(4); n > 0; n-- {
		m[words[g.r.Intn(len(words))]] = g.opaque(depth - 1)
	}
	return m
}

// mutate changes v in a few places at random, each a value filled anew.
func (g gen) mutate(v reflect.Value) {
	if g.r.Intn(8) == 0 {
		g.fill(v)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			g.mutate(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() && g.r.Intn(4) == 0 {
				g.mutate(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			g.mutate(v.Index(i))
		}
	}
}

func randomJob(g gen) *sdk.Job {
	j := &sdk.Job{}
	g.fill(reflect.ValueOf(j).Elem())
	return j
}

// checkDiffs checks, for two jobs, what holds of any: diffing never panics
// (a panic fails the test), a job diffed with itself or a copy of itself
// has no change, and an old and a new version differ both ways or neither.
func checkDiffs(t *testing.T, a, b *sdk.Job) {
	t.Helper()
	for _, contextual := range []bool{false, true} {
		jobdiff.Diff(nil, a, contextual)
		jobdiff.Diff(a, nil, contextual)
		for _, same := range []*sdk.Job{a, a.Copy()} {
			if d := jobdiff.Diff(a, same, contextual); !unchanged(d) {
				t.Fatalf("contextual=%v: a job diffed with itself: %s", contextual, dumpJob(d))
			}
		}
		ab, ba := jobdiff.Diff(a, b, contextual), jobdiff.Diff(b, a, contextual)
		if ab.Type != ba.Type {
			t.Fatalf("contextual=%v: a to b is %s, b to a %s", contextual, ab.Type, ba.Type)
		}
	}
}

// unchanged reports whether a diff shows no change at all.
func unchanged(d *jobdiff.JobDiff) bool {
	if d.Type != jobdiff.TypeNone || len(d.Fields)+len(d.Objects) > 0 {
		return false
	}
	for _, tg := range d.TaskGroups {
		if tg.Type != jobdiff.TypeNone || len(tg.Fields)+len(tg.Objects) > 0 {
			return false
		}
		for _, td := range tg.Tasks {
			if td.Type != jobdiff.TypeNone || len(td.Fields)+len(td.Objects)+len(td.Annotations) > 0 {
				return false
			}
		}
	}
	return true
}

func dumpJob(d *jobdiff.JobDiff) string {
	var objects []*jobdiff.ObjectDiff
	objects = append(objects, &jobdiff.ObjectDiff{Type: d.Type, Name: "job", Fields: d.Fields, Objects: d.Objects})
	for _, tg := range d.TaskGroups {
		objects = append(objects, &jobdiff.ObjectDiff{Type: tg.Type, Name: "group " + tg.Name, Fields: tg.Fields, Objects: tg.Objects})
		for _, td := range tg.Tasks {
			objects = append(objects, &jobdiff.ObjectDiff{Type: td.Type, Name: "task " + td.Name, Fields: td.Fields, Objects: td.Objects})
		}
	}
	return dump(objects)
}

// FuzzDiff diffs random jobs, and random changes of them: see checkDiffs.
// Its seeds run with the package's tests; `go test -fuzz FuzzDiff
// ./host/jobdiff` looks further.
func FuzzDiff(f *testing.F) {
	for seed := int64(0); seed < 200; seed++ {
		f.Add(seed, seed%2 == 0)
	}
	f.Fuzz(func(t *testing.T, seed int64, related bool) {
		g := gen{rand.New(rand.NewSource(seed))}
		a := randomJob(g)
		var b *sdk.Job
		if related {
			b = a.Copy()
			g.mutate(reflect.ValueOf(b).Elem())
		} else {
			b = randomJob(g)
		}
		checkDiffs(t, a, b)
	})
}

// An edited task's annotation agrees with the scheduler: a change to one
// task alone, of a random job, is annotated destructive exactly when
// reconcile.TasksUpdated finds the group needs new allocations. The jobs
// are compared as the server compares them, as stored (the plan round-trips
// the submitted job through the store's encoding).
func TestDiff_RandomTaskChangesAnnotatedAsTheSchedulerDecides(t *testing.T) {
	kinds := map[string]int{}
	for seed := int64(0); seed < 500; seed++ {
		g := gen{rand.New(rand.NewSource(seed))}
		a := randomJob(g)
		// The scheduler's check needs groups and tasks, as jobs from a
		// jobspec have them: no nil ones, each named once.
		a.TaskGroups = []*sdk.TaskGroup{{Name: "g"}}
		g.fill(reflect.ValueOf(a.TaskGroups[0]).Elem())
		a.TaskGroups[0].Name = "g"
		a.TaskGroups[0].Tasks = nil
		for _, name := range []string{"t", "u"} {
			task := &sdk.Task{}
			g.fill(reflect.ValueOf(task).Elem())
			task.Name = name
			a.TaskGroups[0].Tasks = append(a.TaskGroups[0].Tasks, task)
		}
		a = a.Copy()
		b := a.Copy()
		g.mutate(reflect.ValueOf(b.TaskGroups[0].Tasks[0]).Elem())
		b.TaskGroups[0].Tasks[0].Name = "t"
		b = b.Copy()

		d := jobdiff.Diff(a, b, seed%2 == 0).Annotate(a, b)
		destructive, why := reconcile.TasksUpdated(a, b, "g")
		var td *jobdiff.TaskDiff
		for _, tg := range d.TaskGroups {
			for _, x := range tg.Tasks {
				if x.Name == "t" {
					td = x
				}
			}
		}
		if td == nil || td.Type == jobdiff.TypeNone {
			if destructive {
				t.Fatalf("seed %d: the scheduler replaces the group's allocations (%s); the diff shows no change of task t", seed, why)
			}
			kinds["unchanged"]++
			continue
		}
		want := jobdiff.AnnotationInPlace
		if destructive {
			want = jobdiff.AnnotationDestructive
		}
		if !reflect.DeepEqual(td.Annotations, []string{want}) {
			t.Fatalf("seed %d: task t annotated %q, the scheduler's destructive update is %v (%s): %s",
				seed, td.Annotations, destructive, why, dumpJob(d))
		}
		kinds[want]++
	}
	// The random changes cover both annotations.
	if kinds[jobdiff.AnnotationInPlace] < 20 || kinds[jobdiff.AnnotationDestructive] < 20 {
		t.Fatalf("random task changes: %v", kinds)
	}
	t.Logf("random task changes: %v", kinds)
}
