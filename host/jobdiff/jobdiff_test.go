package jobdiff_test

import (
	"testing"

	"github.com/drover-sched/drover/host/jobdiff"
	"github.com/drover-sched/drover/sdk"
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

func TestDiff_Edits(t *testing.T) {
	b := job()
	b.Priority = 70
	b.Datacenters = []string{"dc1", "dc2"}
	b.Meta = map[string]string{"team": "b"}
	b.Constraints = []*sdk.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "darwin", Operand: "="}}
	b.TaskGroups[0].Count = 3
	b.TaskGroups[0].Tasks[0].Config = sdk.Opaque{"image": "nginx:2", "args": []any{"-x"}}
	b.TaskGroups = append(b.TaskGroups, &sdk.TaskGroup{Name: "new", Tasks: []*sdk.Task{{Name: "n", Driver: "exec"}}})
	d := jobdiff.Diff(job(), b, false)
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
