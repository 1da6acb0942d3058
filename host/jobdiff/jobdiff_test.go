package jobdiff_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/jobdiff"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/reconcile"
)

func job() *sdk.Job {
	return &sdk.Job{ID: "web", Type: "service", Priority: 50, Datacenters: []string{"dc1"},
		Meta:        map[string]string{"team": "a"},
		Constraints: []*sdk.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 2, Tasks: []*sdk.Task{{Name: "t", Driver: "docker",
			Config:    sdk.Opaque{"image": "nginx:1", "args": []any{"-x"}},
			Resources: &sdk.Resources{CPU: 100, MemoryMB: 64}}}}},
		Version: 3, JobModifyIndex: 9}
}

func field(fs []*jobdiff.FieldDiff, name string) *jobdiff.FieldDiff {
	for _, f := range fs {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func object(os []*jobdiff.ObjectDiff, name string) *jobdiff.ObjectDiff {
	for _, o := range os {
		if o.Name == name {
			return o
		}
	}
	return nil
}

func TestDiff_NoChangeIsNone(t *testing.T) {
	b := job()
	b.Version, b.JobModifyIndex, b.Status = 4, 12, "running" // server-set fields do not count
	d := jobdiff.Diff(job(), b, false)
	if d.Type != jobdiff.TypeNone || len(d.Fields)+len(d.Objects)+len(d.TaskGroups) != 0 {
		t.Fatalf("diff of equal jobs = %+v", d)
	}
}

func TestDiff_AddedAndDeletedJobs(t *testing.T) {
	if d := jobdiff.Diff(nil, job(), false); d.Type != jobdiff.TypeAdded || d.ID != "web" || d.TaskGroups[0].Type != jobdiff.TypeAdded {
		t.Fatalf("added: %+v", d)
	}
	if d := jobdiff.Diff(job(), nil, false); d.Type != jobdiff.TypeDeleted || d.TaskGroups[0].Type != jobdiff.TypeDeleted {
		t.Fatalf("deleted: %+v", d)
	}
}

// TestDiff_AddedAndDeletedJobsHoldOnlyTheirBlocks: a job added or
// deleted shows the blocks it has, each added or deleted; a free-form
// block it does not set (no vault, consul or multiregion block) is not
// an edited block with nothing in it.
func TestDiff_AddedAndDeletedJobsHoldOnlyTheirBlocks(t *testing.T) {
	var walk func(where string, objects []*jobdiff.ObjectDiff, want string)
	walk = func(where string, objects []*jobdiff.ObjectDiff, want string) {
		t.Helper()
		for _, o := range objects {
			if o.Type != want {
				t.Errorf("%s: object %s is %s, want %s", where, o.Name, o.Type, want)
			}
			walk(where+"."+o.Name, o.Objects, want)
		}
	}
	for _, c := range []struct {
		want     string
		old, new *sdk.Job
	}{{jobdiff.TypeAdded, nil, job()}, {jobdiff.TypeDeleted, job(), nil}} {
		d := jobdiff.Diff(c.old, c.new, false)
		walk("job", d.Objects, c.want)
		for _, tg := range d.TaskGroups {
			walk("group", tg.Objects, c.want)
			for _, task := range tg.Tasks {
				walk("task", task.Objects, c.want)
			}
		}
		if got := object(d.TaskGroups[0].Tasks[0].Objects, "Config"); got == nil || got.Type != c.want {
			t.Errorf("%s job: task config %+v", c.want, got)
		}
	}
}

func TestDiff_Edits(t *testing.T) {
	b := job()
	b.Priority = 70
	b.Datacenters = []string{"dc1", "dc2"}
	b.Meta = map[string]string{"team": "b"}
	b.Constraints = []*sdk.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "darwin", Operand: "="}}
	b.TaskGroups[0].Count = 3
	b.TaskGroups[0].Tasks[0].Config = sdk.Opaque{"image": "nginx:2", "args": []any{"-x"}}
	b.TaskGroups = append(b.TaskGroups, &sdk.TaskGroup{Name: "new", Tasks: []*sdk.Task{{Name: "n", Driver: "exec"}}})
	d := jobdiff.Diff(job(), b, false).Annotate(job(), b)
	if d.Type != jobdiff.TypeEdited {
		t.Fatalf("type = %s", d.Type)
	}
	if f := field(d.Fields, "Priority"); f == nil || f.Type != jobdiff.TypeEdited || f.Old != "50" || f.New != "70" {
		t.Errorf("priority: %+v", f)
	}
	if f := field(d.Fields, "Meta[team]"); f == nil || f.Old != "a" || f.New != "b" {
		t.Errorf("meta: %+v", f)
	}
	if o := object(d.Objects, "Datacenters"); o == nil || len(o.Fields) != 1 || o.Fields[0].Type != jobdiff.TypeAdded || o.Fields[0].New != "dc2" {
		t.Errorf("datacenters: %+v", o)
	}
	var added, deleted int
	for _, o := range d.Objects {
		if o.Name == "Constraint" {
			switch o.Type {
			case jobdiff.TypeAdded:
				added++
			case jobdiff.TypeDeleted:
				deleted++
			}
		}
	}
	if added != 1 || deleted != 1 {
		t.Errorf("constraints: %d added, %d deleted", added, deleted)
	}
	if len(d.TaskGroups) != 2 {
		t.Fatalf("groups: %+v", d.TaskGroups)
	}
	g := d.TaskGroups[0]
	if g.Type != jobdiff.TypeEdited || field(g.Fields, "Count").New != "3" {
		t.Errorf("group g: %+v", g)
	}
	task := g.Tasks[0]
	cfg := object(task.Objects, "Config")
	if task.Type != jobdiff.TypeEdited || task.Annotations[0] != jobdiff.AnnotationDestructive || cfg == nil ||
		len(cfg.Fields) != 1 || cfg.Fields[0].Name != "image" || cfg.Fields[0].New != "nginx:2" {
		t.Errorf("task: %+v, config %+v", task, cfg)
	}
	if d.TaskGroups[1].Type != jobdiff.TypeAdded {
		t.Errorf("new group: %+v", d.TaskGroups[1])
	}
	d.Updates(map[string]*sdk.DesiredUpdates{"g": {Place: 1, InPlaceUpdate: 2}})
	if u := d.TaskGroups[0].Updates; u["create"] != 1 || u["in-place update"] != 2 {
		t.Errorf("updates: %v", u)
	}
}

// Stop is part of the spec a diff shows, as in Nomad's Job.Diff (which does
// not filter it): the diff from a version to its stop is an edit of Stop,
// and so is a plan that stops the job. It used to be left out, so that a
// stop showed as no change.
func TestDiff_Stop(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new bool
		want     string // the diff's type
		field    *jobdiff.FieldDiff
	}{
		{"stopped", false, true, jobdiff.TypeEdited, &jobdiff.FieldDiff{Type: jobdiff.TypeEdited, Name: "Stop", Old: "false", New: "true"}},
		{"started again", true, false, jobdiff.TypeEdited, &jobdiff.FieldDiff{Type: jobdiff.TypeEdited, Name: "Stop", Old: "true", New: "false"}},
		{"still stopped", true, true, jobdiff.TypeNone, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := job(), job()
			a.Stop, b.Stop = tc.old, tc.new
			for _, contextual := range []bool{false, true} {
				d := jobdiff.Diff(a, b, contextual)
				f := field(d.Fields, "Stop")
				if d.Type != tc.want || (f == nil) != (tc.field == nil) || (f != nil && (f.Type != tc.field.Type || f.Old != tc.field.Old || f.New != tc.field.New)) {
					t.Errorf("contextual %v: diff %s with Stop field %+v, want %s with %+v", contextual, d.Type, f, tc.want, tc.field)
				}
			}
		})
	}
}

// A contextual diff (job plan's) shows unchanged groups and the unchanged
// fields of a changed nested object, but, as Nomad's, not the job's own
// unchanged fields: Nomad's CLI prints every field of the diff, and would
// list the whole job for a one-field change.
func TestDiff_ContextualShowsUnchangedFields(t *testing.T) {
	b := job()
	b.Priority = 70
	d := jobdiff.Diff(job(), b, true)
	if f := field(d.Fields, "Priority"); f == nil || f.Type != jobdiff.TypeEdited {
		t.Fatalf("contextual diff lacks the change: %+v", d.Fields)
	}
	if f := field(d.Fields, "Type"); f != nil {
		t.Fatalf("contextual diff lists the job's unchanged type: %+v", f)
	}
	if len(d.TaskGroups) != 1 || d.TaskGroups[0].Type != jobdiff.TypeNone || len(d.TaskGroups[0].Fields) != 0 {
		t.Fatalf("contextual diff: want the unchanged group, without its fields: %+v", d.TaskGroups)
	}

	c := job()
	c.TaskGroups[0].RestartPolicy = &sdk.RestartPolicy{Attempts: 2, Mode: "fail"}
	e := job()
	e.TaskGroups[0].RestartPolicy = &sdk.RestartPolicy{Attempts: 3, Mode: "fail"}
	d = jobdiff.Diff(c, e, true)
	var rp *jobdiff.ObjectDiff
	for _, o := range d.TaskGroups[0].Objects {
		if o.Name == "RestartPolicy" {
			rp = o
		}
	}
	if rp == nil || field(rp.Fields, "Attempts") == nil || field(rp.Fields, "Mode") == nil || field(rp.Fields, "Mode").Type != jobdiff.TypeNone {
		t.Fatalf("contextual diff of a changed restart policy: %+v", rp)
	}
}

// block is a free-form block (a service, a template, ...) with nested
// values, and every key the diff pairs blocks by.
func block(name string, interval int64, tags ...any) sdk.Opaque {
	return sdk.Opaque{"Name": name, "DestPath": "local/" + name, "Destination": "/srv/" + name, "PortLabel": "http",
		"Tags": tags, "Checks": []any{map[string]any{"Type": "http", "Interval": interval,
			"Header": map[string]any{"X-A": []any{"1", "2"}}}}}
}

// opaqueFields are the fields of a job, group or task that hold free-form
// blocks: an Opaque, a list of them or a map of them.
func opaqueFields(t reflect.Type) []string {
	opaque := reflect.TypeOf(sdk.Opaque(nil))
	var out []string
	for i := 0; i < t.NumField(); i++ {
		switch f := t.Field(i); f.Type {
		case opaque, reflect.SliceOf(opaque), reflect.MapOf(reflect.TypeOf(""), opaque):
			out = append(out, f.Name)
		}
	}
	return out
}

// setOpaque sets field name of the struct s points to: an Opaque to b, a
// list to [b], a map to {"data": b}; a nil b clears it.
func setOpaque(s any, name string, b sdk.Opaque) {
	f := reflect.ValueOf(s).Elem().FieldByName(name)
	f.SetZero()
	if b == nil {
		return
	}
	switch f.Kind() {
	case reflect.Map:
		if f.Type().Elem().Kind() == reflect.Interface {
			f.Set(reflect.ValueOf(b))
		} else {
			f.Set(reflect.ValueOf(map[string]sdk.Opaque{"data": b}))
		}
	case reflect.Slice:
		f.Set(reflect.ValueOf([]sdk.Opaque{b}))
	}
}

// Every free-form block of a job, a group and a task (services, templates,
// artifacts, volume mounts, identities, ...) added, removed and edited,
// with nested maps and lists, diffs as Nomad's plan shows it: an object
// named for the block, its keys flattened into fields. This panicked
// (reflect: NumField of non-struct type sdk.Opaque) for every list of
// blocks.
func TestDiff_OpaqueBlocks(t *testing.T) {
	// Lists whose blocks have no identity are compared as sets, as Nomad
	// compares artifacts: an edited block is one deleted and one added.
	sets := map[string]bool{"Artifacts": true}
	levels := []struct {
		name   string
		target func(*sdk.Job) any
		diff   func(*jobdiff.JobDiff) (string, []*jobdiff.ObjectDiff)
		skip   map[string]bool
	}{
		{"job", func(j *sdk.Job) any { return j },
			func(d *jobdiff.JobDiff) (string, []*jobdiff.ObjectDiff) { return d.Type, d.Objects },
			map[string]bool{"VersionTag": true}}, // set by the server, not diffed
		{"group", func(j *sdk.Job) any { return j.TaskGroups[0] },
			func(d *jobdiff.JobDiff) (string, []*jobdiff.ObjectDiff) {
				return d.TaskGroups[0].Type, d.TaskGroups[0].Objects
			}, nil},
		{"task", func(j *sdk.Job) any { return j.TaskGroups[0].Tasks[0] },
			func(d *jobdiff.JobDiff) (string, []*jobdiff.ObjectDiff) {
				task := d.TaskGroups[0].Tasks[0]
				return task.Type, task.Objects
			}, map[string]bool{"Config": true}}, // TestDiff_Edits
	}
	for _, l := range levels {
		for _, f := range opaqueFields(reflect.TypeOf(l.target(job())).Elem()) {
			if l.skip[f] {
				continue
			}
			name := f // an Opaque's object is named for its field
			switch ft := reflect.ValueOf(l.target(job())).Elem().FieldByName(f).Type(); {
			case ft.Kind() == reflect.Slice:
				name = singular(f)
			case ft.Elem().Kind() == reflect.Map:
				name = singular(f) + "[data]"
			}
			with := func(b sdk.Opaque) *sdk.Job {
				j := job()
				setOpaque(l.target(j), f, b)
				return j
			}
			for _, contextual := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/contextual=%v", l.name, f, contextual), func(t *testing.T) {
					check := func(what string, old, new *sdk.Job, want map[string]int) []*jobdiff.ObjectDiff {
						t.Helper()
						d := jobdiff.Diff(old, new, contextual)
						typ, objects := l.diff(d)
						if d.Type != jobdiff.TypeEdited || typ != jobdiff.TypeEdited {
							t.Fatalf("%s: job %s, %s %s, want edited", what, d.Type, l.name, typ)
						}
						got := map[string]int{}
						var out []*jobdiff.ObjectDiff
						for _, o := range objects {
							if o.Name == name {
								got[o.Type]++
								out = append(out, o)
							}
						}
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("%s: %q objects by type %v, want %v; objects %s", what, name, got, want, dump(objects))
						}
						return out
					}

					added := check("added", with(nil), with(block("web", 10, "a", "b")), map[string]int{jobdiff.TypeAdded: 1})
					for _, w := range []struct{ field, new string }{{"Name", "web"}, {"Tags[1]", "b"},
						{"Checks[0][Interval]", "10"}, {"Checks[0][Header][X-A][1]", "2"}} {
						if fd := field(added[0].Fields, w.field); fd == nil || fd.Type != jobdiff.TypeAdded || fd.New != w.new || fd.Old != "" {
							t.Errorf("added: field %s = %+v, want added %q", w.field, fd, w.new)
						}
					}
					if len(added[0].Fields) != 10 {
						t.Errorf("added: %d fields, want 10: %s", len(added[0].Fields), dump(added))
					}

					removed := check("removed", with(block("web", 10, "a", "b")), with(nil), map[string]int{jobdiff.TypeDeleted: 1})
					if fd := field(removed[0].Fields, "Checks[0][Header][X-A][0]"); fd == nil || fd.Type != jobdiff.TypeDeleted || fd.Old != "1" {
						t.Errorf("removed: %s", dump(removed))
					}

					old, new := with(block("web", 10, "a", "b")), with(block("web", 20, "a", "c", "d"))
					if sets[f] {
						check("edited", old, new, map[string]int{jobdiff.TypeDeleted: 1, jobdiff.TypeAdded: 1})
						return
					}
					edited := check("edited", old, new, map[string]int{jobdiff.TypeEdited: 1})
					want := map[string][3]string{
						"Checks[0][Interval]": {jobdiff.TypeEdited, "10", "20"},
						"Tags[1]":             {jobdiff.TypeEdited, "b", "c"},
						"Tags[2]":             {jobdiff.TypeAdded, "", "d"},
					}
					for _, fd := range edited[0].Fields {
						if fd.Type == jobdiff.TypeNone {
							if !contextual || fd.Old != fd.New {
								t.Errorf("edited: unchanged field %+v", fd)
							}
							continue
						}
						if w, ok := want[fd.Name]; !ok || w != [3]string{fd.Type, fd.Old, fd.New} {
							t.Errorf("edited: field %+v, want %v", fd, w)
						}
						delete(want, fd.Name)
					}
					if len(want) > 0 {
						t.Errorf("edited: missing %v in %s", want, dump(edited))
					}
					if contextual && field(edited[0].Fields, "Name") == nil {
						t.Errorf("edited, contextual: the unchanged Name is not shown: %s", dump(edited))
					}
				})
			}
		}
	}
}

func dump(objects []*jobdiff.ObjectDiff) string {
	b, _ := json.Marshal(objects)
	return string(b)
}

// singular is the diff's name for one element of a list field.
func singular(name string) string {
	switch {
	case strings.HasSuffix(name, "ies"):
		return strings.TrimSuffix(name, "ies") + "y"
	case strings.HasSuffix(name, "s"):
		return strings.TrimSuffix(name, "s")
	}
	return name
}

// Blocks of a list are paired by their identity (a service's name): a
// changed one is edited, an unchanged one, moved or not, not shown, and
// those left over deleted and added, unless one is left on each side.
func TestDiff_OpaqueListsPairByIdentity(t *testing.T) {
	a, b := job(), job()
	a.TaskGroups[0].Tasks[0].Services = []sdk.Opaque{block("web", 10), block("api", 10), block("admin", 10), block("x", 10)}
	b.TaskGroups[0].Tasks[0].Services = []sdk.Opaque{block("admin", 10), block("db", 10), block("web", 20), block("y", 10)}
	d := jobdiff.Diff(a, b, false)
	got := map[string]string{}
	for _, o := range d.TaskGroups[0].Tasks[0].Objects {
		if f := field(o.Fields, "Name"); f != nil {
			got[o.Type] += f.Old + f.New + ";"
		} else {
			got[o.Type] += fmt.Sprint(len(o.Fields)) + ";"
		}
	}
	// web's changed interval is its one field.
	want := map[string]string{jobdiff.TypeEdited: "1;", jobdiff.TypeDeleted: "api;x;", jobdiff.TypeAdded: "db;y;"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("services: %v, want %v: %s", got, want, dump(d.TaskGroups[0].Tasks[0].Objects))
	}

	// One changed block replaced by one other is edited, whatever its name.
	b.TaskGroups[0].Tasks[0].Services = []sdk.Opaque{block("web", 10), block("api2", 10), block("admin", 10), block("x", 10)}
	d = jobdiff.Diff(a, b, false)
	if os := d.TaskGroups[0].Tasks[0].Objects; len(os) != 1 || os[0].Type != jobdiff.TypeEdited || field(os[0].Fields, "Name").New != "api2" {
		t.Fatalf("renamed service: %s", dump(os))
	}
}

// An edited task is annotated with what its change makes the scheduler
// do, by the schedulers' own rule (reconcile.TasksUpdated): a destructive
// change (driver, config, env, resources, templates, artifacts, ...)
// forces a create/destroy update, any other (services, constraints, log
// config, kill timeout) an in-place one. Every edited task was annotated
// destructive.
func TestDiff_EditedTaskAnnotations(t *testing.T) {
	task := func(j *sdk.Job) *sdk.Task { return j.TaskGroups[0].Tasks[0] }
	cases := []struct {
		name string
		edit func(*sdk.Job)
		want string
	}{
		{"kill timeout", func(j *sdk.Job) { task(j).KillTimeout = 5 * time.Second }, jobdiff.AnnotationInPlace},
		{"service added", func(j *sdk.Job) { task(j).Services = []sdk.Opaque{block("web", 10)} }, jobdiff.AnnotationInPlace},
		{"constraint", func(j *sdk.Job) {
			task(j).Constraints = []*sdk.Constraint{{LTarget: "${node.class}", RTarget: "a", Operand: "="}}
		}, jobdiff.AnnotationInPlace},
		{"log config", func(j *sdk.Job) { task(j).LogConfig = sdk.Opaque{"MaxFiles": int64(3)} }, jobdiff.AnnotationInPlace},
		{"kill signal and shutdown delay", func(j *sdk.Job) {
			task(j).KillSignal, task(j).ShutdownDelay = "SIGINT", time.Second
		}, jobdiff.AnnotationInPlace},
		{"template", func(j *sdk.Job) { task(j).Templates = []sdk.Opaque{block("web", 10)} }, jobdiff.AnnotationDestructive},
		{"artifact", func(j *sdk.Job) { task(j).Artifacts = []sdk.Opaque{{"GetterSource": "https://example.com/a.tgz"}} }, jobdiff.AnnotationDestructive},
		{"volume mount", func(j *sdk.Job) { task(j).VolumeMounts = []sdk.Opaque{{"Volume": "data", "Destination": "/data"}} }, jobdiff.AnnotationDestructive},
		{"config", func(j *sdk.Job) { task(j).Config["image"] = "nginx:2" }, jobdiff.AnnotationDestructive},
		{"env", func(j *sdk.Job) { task(j).Env = map[string]string{"A": "1"} }, jobdiff.AnnotationDestructive},
		{"resources", func(j *sdk.Job) { task(j).Resources.CPU = 200 }, jobdiff.AnnotationDestructive},
		{"meta", func(j *sdk.Job) { task(j).Meta = map[string]string{"a": "1"} }, jobdiff.AnnotationDestructive},
		{"driver", func(j *sdk.Job) { task(j).Driver = "exec" }, jobdiff.AnnotationDestructive},
		{"affinity", func(j *sdk.Job) {
			task(j).Affinities = []*sdk.Affinity{{LTarget: "${node.class}", RTarget: "a", Operand: "=", Weight: 50}}
		}, jobdiff.AnnotationDestructive},
		{"kill timeout and env", func(j *sdk.Job) {
			task(j).KillTimeout, task(j).Env = 5*time.Second, map[string]string{"A": "1"}
		}, jobdiff.AnnotationDestructive},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := job()
			c.edit(b)
			if a := jobdiff.Diff(job(), b, true).TaskGroups[0].Tasks[0].Annotations; a != nil {
				t.Fatalf("Diff annotated %q: only Annotate does, for a plan", a)
			}
			d := jobdiff.Diff(job(), b, true).Annotate(job(), b)
			td := d.TaskGroups[0].Tasks[0]
			if td.Type != jobdiff.TypeEdited || !reflect.DeepEqual(td.Annotations, []string{c.want}) {
				t.Fatalf("task %s, annotations %q, want edited, %q", td.Type, td.Annotations, c.want)
			}
			// The scheduler does what the annotation says.
			if destructive, why := reconcile.TasksUpdated(job(), b, "g"); destructive != (c.want == jobdiff.AnnotationDestructive) {
				t.Fatalf("the scheduler's destructive update is %v (%s), the annotation %q", destructive, why, c.want)
			}
		})
	}

	// A task is annotated for its own change: the group's destructive
	// change (its network) does not make a task's kill timeout destructive.
	a, b := job(), job()
	a.TaskGroups[0].Tasks = append(a.TaskGroups[0].Tasks, &sdk.Task{Name: "u", Driver: "exec"})
	b.TaskGroups[0].Tasks = append(b.TaskGroups[0].Tasks, &sdk.Task{Name: "u", Driver: "raw_exec"})
	b.TaskGroups[0].Networks = []*sdk.NetworkResource{{Mode: "bridge"}}
	task(b).KillTimeout = time.Second
	d := jobdiff.Diff(a, b, false).Annotate(a, b)
	got := map[string][]string{}
	for _, td := range d.TaskGroups[0].Tasks {
		got[td.Name] = td.Annotations
	}
	if want := map[string][]string{"t": {jobdiff.AnnotationInPlace}, "u": {jobdiff.AnnotationDestructive}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("annotations %q, want %q", got, want)
	}
}

// Added and deleted tasks are annotated as Nomad's are: those of an added
// or deleted group are created or destroyed; one added to or deleted from a
// group replaces the group's allocations. An unchanged task has none.
func TestDiff_AddedAndDeletedTaskAnnotations(t *testing.T) {
	a, b := job(), job()
	a.TaskGroups = append(a.TaskGroups, &sdk.TaskGroup{Name: "gone", Tasks: []*sdk.Task{{Name: "x", Driver: "exec"}}})
	b.TaskGroups = append(b.TaskGroups, &sdk.TaskGroup{Name: "new", Tasks: []*sdk.Task{{Name: "y", Driver: "exec"}}})
	a.TaskGroups[0].Tasks = append(a.TaskGroups[0].Tasks, &sdk.Task{Name: "old", Driver: "exec"})
	b.TaskGroups[0].Tasks = append(b.TaskGroups[0].Tasks, &sdk.Task{Name: "added", Driver: "exec"})
	d := jobdiff.Diff(a, b, true).Annotate(a, b)
	got := map[string]string{}
	for _, tg := range d.TaskGroups {
		for _, td := range tg.Tasks {
			got[tg.Name+"/"+td.Name] = td.Type + " " + strings.Join(td.Annotations, ",")
		}
	}
	want := map[string]string{
		"g/t":     "None ",
		"g/old":   "Deleted " + jobdiff.AnnotationDestructive,
		"g/added": "Added " + jobdiff.AnnotationDestructive,
		"gone/x":  "Deleted " + jobdiff.AnnotationDestroy,
		"new/y":   "Added " + jobdiff.AnnotationCreate,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tasks %q, want %q", got, want)
	}
}

// A scaling policy's ID, target and indexes are the server's: a job read
// back has them, a resubmitted one does not, and neither shows as a
// change (a policy's own settings still do).
func TestDiff_ScalingPolicyIdentityIsNoChange(t *testing.T) {
	stored, sent := job(), job()
	stored.TaskGroups[0].Scaling = &sdk.ScalingPolicy{ID: "9f1c", Type: "horizontal", Min: 1, Max: 3, Enabled: true, CreateIndex: 5, ModifyIndex: 7,
		Target: map[string]string{"Namespace": "default", "Job": "web", "Group": "g"}}
	sent.TaskGroups[0].Scaling = &sdk.ScalingPolicy{Type: "horizontal", Min: 1, Max: 3, Enabled: true}
	if d := jobdiff.Diff(stored, sent, false); d.Type != jobdiff.TypeNone || len(d.TaskGroups) != 0 {
		t.Fatalf("diff of a policy's identity alone = %+v", d)
	}
	sent.TaskGroups[0].Scaling.Max = 5
	d := jobdiff.Diff(stored, sent, false)
	s := object(d.TaskGroups[0].Objects, "Scaling")
	if s == nil || s.Type != jobdiff.TypeEdited || len(s.Fields) != 1 || s.Fields[0].Name != "Max" {
		t.Fatalf("a changed max = %+v", s)
	}
	d = jobdiff.Diff(stored, sent, true)
	s = object(d.TaskGroups[0].Objects, "Scaling")
	if s == nil || s.Type != jobdiff.TypeEdited || field(s.Fields, "Min") == nil {
		t.Fatalf("contextual diff's Scaling = %+v", s)
	}
	for _, f := range s.Fields {
		if f.Name == "ID" || f.Name == "CreateIndex" || f.Name == "ModifyIndex" || strings.HasPrefix(f.Name, "Target") {
			t.Errorf("contextual diff shows the server's %s: %+v", f.Name, f)
		}
	}
}
