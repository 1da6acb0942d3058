// Package jobdiff compares two versions of a job the way Nomad's job plan
// and job history show it: a tree of changed fields and objects, with task
// groups and tasks matched by name. Its types have the JSON shape of
// Nomad's JobDiff, so Nomad's clients read them.
//
//	d := jobdiff.Diff(current, proposed, false) // .Annotate(current, proposed) for a plan
//	for _, tg := range d.TaskGroups { ... tg.Type, tg.Fields, tg.Tasks ... }
package jobdiff

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/reconcile"
)

// Diff types.
const (
	TypeNone    = "None"
	TypeAdded   = "Added"
	TypeDeleted = "Deleted"
	TypeEdited  = "Edited"
)

// Task annotations: what a task's change makes the scheduler do. An edited
// task's change is destructive or in place by the rule the schedulers
// apply (reconcile.TasksUpdated).
const (
	AnnotationCreate      = "forces create"
	AnnotationDestroy     = "forces destroy"
	AnnotationInPlace     = "forces in-place update"
	AnnotationDestructive = "forces create/destroy update"
)

// JobDiff is the difference between two versions of a job.
type JobDiff struct {
	Type       string
	ID         string
	Fields     []*FieldDiff
	Objects    []*ObjectDiff
	TaskGroups []*TaskGroupDiff
}

// TaskGroupDiff is the difference in one group. Updates counts what a plan
// would do to it ("create", "destroy", "in-place update", ...).
type TaskGroupDiff struct {
	Type    string
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
	Tasks   []*TaskDiff
	Updates map[string]uint64 `json:",omitempty"`
}

// TaskDiff is the difference in one task.
type TaskDiff struct {
	Type        string
	Name        string
	Fields      []*FieldDiff
	Objects     []*ObjectDiff
	Annotations []string
}

// FieldDiff is one changed value.
type FieldDiff struct {
	Type        string
	Name        string
	Old, New    string
	Annotations []string
}

// ObjectDiff is a changed block (a constraint, the update block, a task's
// config, ...).
type ObjectDiff struct {
	Type    string
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
}

// Fields the server sets, which are not part of what a user changes.
var (
	skipJob   = set("ID", "TaskGroups", "Status", "StatusDescription", "Stable", "Version", "SubmitTime", "CreateIndex", "ModifyIndex", "JobModifyIndex", "VersionTag", "Payload", "NomadTokenID", "ParentID", "Dispatched", "DispatchIdempotencyToken")
	skipGroup = set("Name", "Tasks")
	skipTask  = set("Name")
	// skipBlock: in nested blocks, by type. A scaling policy's identity
	// is the server's (host/state sets it when the job is written).
	skipBlock = map[reflect.Type]map[string]bool{
		reflect.TypeFor[sdk.ScalingPolicy](): set("ID", "Target", "CreateIndex", "ModifyIndex"),
	}
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Diff compares old with new (either may be nil). With contextual set,
// unchanged groups and tasks, and unchanged fields of changed nested
// objects (a restart policy, a task's config), are included (type None)
// to show where a change sits; as in Nomad, the job's, groups' and tasks'
// own unchanged fields never are.
func Diff(old, new *sdk.Job, contextual bool) *JobDiff {
	d := &JobDiff{Type: TypeNone}
	var ov, nv reflect.Value
	switch {
	case old == nil && new == nil:
		return d
	case old == nil:
		d.Type, d.ID = TypeAdded, new.ID
		nv = reflect.ValueOf(*new)
	case new == nil:
		d.Type, d.ID = TypeDeleted, old.ID
		ov = reflect.ValueOf(*old)
	default:
		d.ID = new.ID
		ov, nv = reflect.ValueOf(*old), reflect.ValueOf(*new)
	}
	dc := differ{contextual: contextual}
	d.Fields, d.Objects = dc.structDiff(ov, nv, skipJob)
	d.Fields = changedOnly(d.Fields)
	var oldGroups, newGroups []*sdk.TaskGroup
	if old != nil {
		oldGroups = old.TaskGroups
	}
	if new != nil {
		newGroups = new.TaskGroups
	}
	groupName := func(tg *sdk.TaskGroup) string { return tg.Name }
	for _, name := range names(oldGroups, newGroups, groupName) {
		og, ng := lookup(oldGroups, name, groupName), lookup(newGroups, name, groupName)
		tgd := dc.groupDiff(name, og, ng)
		if tgd.Type != TypeNone || contextual {
			d.TaskGroups = append(d.TaskGroups, tgd)
		}
	}
	if d.Type == TypeNone && (hasChange(d.Fields, d.Objects) || changed(d.TaskGroups)) {
		d.Type = TypeEdited
	}
	return d
}

// Annotate marks each task of d, a diff of old against new, with what the
// change makes the scheduler do (taskAnnotation), as Nomad's plan
// annotates its diff; a job's history shows its diffs without. It returns
// d.
func (d *JobDiff) Annotate(old, new *sdk.Job) *JobDiff {
	groups := func(j *sdk.Job) []*sdk.TaskGroup {
		if j == nil {
			return nil
		}
		return j.TaskGroups
	}
	tasks := func(tg *sdk.TaskGroup) []*sdk.Task {
		if tg == nil {
			return nil
		}
		return tg.Tasks
	}
	groupName := func(tg *sdk.TaskGroup) string { return tg.Name }
	taskName := func(t *sdk.Task) string { return t.Name }
	for _, tgd := range d.TaskGroups {
		og, ng := lookup(groups(old), tgd.Name, groupName), lookup(groups(new), tgd.Name, groupName)
		for _, td := range tgd.Tasks {
			ot, nt := lookup(tasks(og), td.Name, taskName), lookup(tasks(ng), td.Name, taskName)
			if a := taskAnnotation(td.Type, old, og, ng, ot, nt); a != "" {
				td.Annotations = []string{a}
			}
		}
	}
	return d
}

// Updates fills each group's Updates from a plan's per-group counts.
func (d *JobDiff) Updates(desired map[string]*sdk.DesiredUpdates) {
	for _, tg := range d.TaskGroups {
		u := desired[tg.Name]
		if u == nil {
			continue
		}
		m := map[string]uint64{}
		add := func(k string, n uint64) {
			if n > 0 {
				m[k] = n
			}
		}
		add("ignore", u.Ignore)
		add("create", u.Place)
		add("destroy", u.Stop)
		add("migrate", u.Migrate)
		add("in-place update", u.InPlaceUpdate)
		add("create/destroy update", u.DestructiveUpdate)
		add("canary", u.Canary)
		add("preemptions", u.Preemptions)
		add("reconnect", u.Reconnect)
		add("disconnect", u.Disconnect)
		add("reschedule-now", u.RescheduleNow)
		add("reschedule-later", u.RescheduleLater)
		if len(m) > 0 {
			tg.Updates = m
		}
	}
}

// hasChange reports whether any field or object differs.
func hasChange(fields []*FieldDiff, objects []*ObjectDiff) bool {
	for _, f := range fields {
		if f.Type != TypeNone {
			return true
		}
	}
	for _, o := range objects {
		if o.Type != TypeNone {
			return true
		}
	}
	return false
}

func changed(tgs []*TaskGroupDiff) bool {
	for _, tg := range tgs {
		if tg.Type != TypeNone {
			return true
		}
	}
	return false
}

type differ struct{ contextual bool }

func (dc differ) groupDiff(name string, og, ng *sdk.TaskGroup) *TaskGroupDiff {
	d := &TaskGroupDiff{Name: name}
	var ov, nv reflect.Value
	if og != nil {
		ov = reflect.ValueOf(*og)
	}
	if ng != nil {
		nv = reflect.ValueOf(*ng)
	}
	d.Fields, d.Objects = dc.structDiff(ov, nv, skipGroup)
	d.Fields = changedOnly(d.Fields)
	var oldTasks, newTasks []*sdk.Task
	if og != nil {
		oldTasks = og.Tasks
	}
	if ng != nil {
		newTasks = ng.Tasks
	}
	taskName := func(t *sdk.Task) string { return t.Name }
	for _, tn := range names(oldTasks, newTasks, taskName) {
		ot, nt := lookup(oldTasks, tn, taskName), lookup(newTasks, tn, taskName)
		td := &TaskDiff{Name: tn}
		var otv, ntv reflect.Value
		if ot != nil {
			otv = reflect.ValueOf(*ot)
		}
		if nt != nil {
			ntv = reflect.ValueOf(*nt)
		}
		td.Fields, td.Objects = dc.structDiff(otv, ntv, skipTask)
		td.Fields = changedOnly(td.Fields)
		td.Type = kind(ot != nil, nt != nil, hasChange(td.Fields, td.Objects))
		if td.Type != TypeNone || dc.contextual {
			d.Tasks = append(d.Tasks, td)
		}
	}
	taskChanged := false
	for _, t := range d.Tasks {
		taskChanged = taskChanged || t.Type != TypeNone
	}
	d.Type = kind(og != nil, ng != nil, hasChange(d.Fields, d.Objects) || taskChanged)
	return d
}

// taskAnnotation says what a task's change makes the scheduler do, as
// Nomad's plan annotates it: a task of an added or deleted group is
// created or destroyed, a task added to or deleted from a group replaces
// the group's allocations, and an edited task's change is destructive or in
// place as reconcile.TasksUpdated, the schedulers' own check, decides. The
// edited task is judged alone, in its old job and group, so that a
// destructive change elsewhere (another task, the group's network) does not
// mark it: that change's own task or group shows it.
func taskAnnotation(typ string, old *sdk.Job, og, ng *sdk.TaskGroup, ot, nt *sdk.Task) string {
	switch {
	case typ == TypeAdded && og == nil:
		return AnnotationCreate
	case typ == TypeDeleted && ng == nil:
		return AnnotationDestroy
	case typ == TypeAdded || typ == TypeDeleted:
		return AnnotationDestructive
	case typ != TypeEdited:
		return ""
	}
	if destructive, _ := reconcile.TasksUpdated(alone(old, og, ot), alone(old, og, nt), og.Name); destructive {
		return AnnotationDestructive
	}
	return AnnotationInPlace
}

// alone is job j with only group tg, and in it only task t.
func alone(j *sdk.Job, tg *sdk.TaskGroup, t *sdk.Task) *sdk.Job {
	g := *tg
	g.Tasks = []*sdk.Task{t}
	out := *j
	out.TaskGroups = []*sdk.TaskGroup{&g}
	return &out
}

// changedOnly drops the unchanged fields a contextual diff added.
func changedOnly(fields []*FieldDiff) []*FieldDiff {
	return slices.DeleteFunc(fields, func(f *FieldDiff) bool { return f.Type == TypeNone })
}

func kind(hadOld, hasNew, edited bool) string {
	switch {
	case !hadOld && hasNew:
		return TypeAdded
	case hadOld && !hasNew:
		return TypeDeleted
	case edited:
		return TypeEdited
	}
	return TypeNone
}

// structDiff compares two structs of one type (either may be the zero
// Value, for an added or deleted object).
func (dc differ) structDiff(ov, nv reflect.Value, skip map[string]bool) ([]*FieldDiff, []*ObjectDiff) {
	var t reflect.Type
	switch {
	case ov.IsValid():
		t = ov.Type()
	case nv.IsValid():
		t = nv.Type()
	default:
		return nil, nil
	}
	var fields []*FieldDiff
	var objects []*ObjectDiff
	field := func(v reflect.Value, i int) reflect.Value {
		if !v.IsValid() {
			return reflect.Value{}
		}
		return v.Field(i)
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() || skip[f.Name] || f.Tag.Get("json") == "-" {
			continue
		}
		fo, fn := field(ov, i), field(nv, i)
		fo, fn = deref(fo), deref(fn)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case isPrimitive(ft):
			if fd := dc.field(f.Name, fo, fn); fd != nil {
				fields = append(fields, fd)
			}
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.String:
			fields = append(fields, dc.flatFields(flatten(f.Name, fo), flatten(f.Name, fn))...)
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Interface:
			if od := dc.flatObject(f.Name, fo, fn); od != nil {
				objects = append(objects, od)
			}
		case ft.Kind() == reflect.Slice && isPrimitive(ft.Elem()):
			if od := dc.stringSet(f.Name, fo, fn); od != nil {
				objects = append(objects, od)
			}
		case ft.Kind() == reflect.Slice:
			objects = append(objects, dc.objectSet(f.Name, fo, fn)...)
		case ft.Kind() == reflect.Map:
			objects = append(objects, dc.objectMap(singular(f.Name), fo, fn)...)
		case ft.Kind() == reflect.Struct:
			if od := dc.object(f.Name, fo, fn); od != nil {
				objects = append(objects, od)
			}
		}
	}
	return fields, objects
}

// object compares two nested structs.
func (dc differ) object(name string, ov, nv reflect.Value) *ObjectDiff {
	if !ov.IsValid() && !nv.IsValid() {
		return nil
	}
	var skip map[string]bool
	if ov.IsValid() {
		skip = skipBlock[ov.Type()]
	} else {
		skip = skipBlock[nv.Type()]
	}
	fields, objects := dc.structDiff(ov, nv, skip)
	typ := kind(ov.IsValid(), nv.IsValid(), hasChange(fields, objects))
	if typ == TypeNone && !same(without(ov, skip), without(nv, skip)) {
		typ = TypeEdited // a change in something the diff does not render
	}
	if typ == TypeNone {
		return nil
	}
	return &ObjectDiff{Type: typ, Name: name, Fields: fields, Objects: objects}
}

// without returns a copy of the struct v with the fields skip names zeroed.
func without(v reflect.Value, skip map[string]bool) reflect.Value {
	if !v.IsValid() || len(skip) == 0 {
		return v
	}
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	for name := range skip {
		c.FieldByName(name).SetZero()
	}
	return c
}

// element compares two elements of a list or a map (either may be the
// zero Value): structs field by field, anything else (a service, a
// template, a volume request: free-form maps) flattened, as a task's
// config is.
func (dc differ) element(name string, ov, nv reflect.Value) *ObjectDiff {
	switch {
	case !ov.IsValid() && !nv.IsValid():
		return nil
	case ov.IsValid() && nv.IsValid() && ov.Type() != nv.Type():
		return dc.flatObject(name, ov, nv)
	case ov.IsValid() && ov.Kind() == reflect.Struct, nv.IsValid() && nv.Kind() == reflect.Struct:
		return dc.object(name, ov, nv)
	}
	return dc.flatObject(name, ov, nv)
}

// identities name, for lists of free-form blocks, the key that identifies
// a block from one version to the next, so that a changed block shows as
// edited, as Nomad shows a changed service or template, rather than as one
// deleted and one added. Blocks of other lists (artifacts) are compared as
// sets, as Nomad compares them.
var identities = map[string]string{
	"Services":     "Name",
	"Templates":    "DestPath",
	"VolumeMounts": "Destination",
	"Identities":   "Name",
	"Actions":      "Name",
	"Secrets":      "Name",
}

// objectSet compares two lists of objects, list field field, as sets:
// an element equal to one of the other list (each matched once, so that a
// duplicate added or removed shows) is unchanged, the others deleted or
// added, except that blocks with an identity are paired by it (and a
// single changed block with the single block that replaced it) and shown
// edited.
func (dc differ) objectSet(field string, ov, nv reflect.Value) []*ObjectDiff {
	name := singular(field)
	length := func(v reflect.Value) int {
		if !v.IsValid() {
			return 0
		}
		return v.Len()
	}
	var gone, came []reflect.Value
	kept := make([]bool, length(nv))
	for i := 0; i < length(ov); i++ {
		e, found := ov.Index(i), false
		for j := 0; j < len(kept) && !found; j++ {
			if !kept[j] && same(e, nv.Index(j)) {
				kept[j], found = true, true
			}
		}
		if !found {
			gone = append(gone, deref(e))
		}
	}
	for j, k := range kept {
		if !k {
			came = append(came, deref(nv.Index(j)))
		}
	}
	match := pair(identities[field], gone, came)
	matched := make([]bool, len(came))
	var out []*ObjectDiff
	// Every element not in the other list is a change, shown even when it
	// renders no field (an empty block, a nil one).
	add := func(typ string, od *ObjectDiff) {
		if od == nil {
			od = &ObjectDiff{Type: typ, Name: name}
		}
		out = append(out, od)
	}
	for i, o := range gone {
		if j := match[i]; j >= 0 {
			matched[j] = true
			add(TypeEdited, dc.element(name, o, came[j]))
		} else {
			add(TypeDeleted, dc.element(name, o, reflect.Value{}))
		}
	}
	for j, n := range came {
		if !matched[j] {
			add(TypeAdded, dc.element(name, reflect.Value{}, n))
		}
	}
	return out
}

// pair matches each element of gone with the element of came that has the
// same value at key, and, when one of each is left, those two; it returns
// the index in came of each element of gone, -1 for none. Without a key
// nothing is paired.
func pair(key string, gone, came []reflect.Value) []int {
	match := make([]int, len(gone))
	for i := range match {
		match[i] = -1
	}
	if key == "" {
		return match
	}
	taken := make([]bool, len(came))
	for i, o := range gone {
		id, ok := identity(o, key)
		for j, n := range came {
			if nid, nok := identity(n, key); ok && nok && !taken[j] && id == nid {
				match[i], taken[j] = j, true
				break
			}
		}
	}
	left, right := -1, -1
	for i, j := range match {
		if j < 0 {
			if left != -1 {
				return match
			}
			left = i
		}
	}
	for j, t := range taken {
		if !t {
			if right != -1 {
				return match
			}
			right = j
		}
	}
	if left >= 0 && right >= 0 {
		match[left] = right
	}
	return match
}

// identity is the text of a free-form block's value at key.
func identity(v reflect.Value, key string) (string, bool) {
	if !v.IsValid() || v.Kind() != reflect.Map || v.Type().Key().Kind() != reflect.String {
		return "", false
	}
	id := deref(v.MapIndex(reflect.ValueOf(key).Convert(v.Type().Key())))
	if !id.IsValid() {
		return "", false
	}
	return text(id), true
}

// objectMap compares two maps of structs or opaque maps, key by key.
func (dc differ) objectMap(name string, ov, nv reflect.Value) []*ObjectDiff {
	keys := map[string]reflect.Value{}
	for _, v := range []reflect.Value{ov, nv} {
		if v.IsValid() {
			for _, k := range v.MapKeys() {
				keys[fmt.Sprint(k.Interface())] = k
			}
		}
	}
	var out []*ObjectDiff
	for _, k := range sortedKeys(keys) {
		get := func(m reflect.Value) reflect.Value {
			if !m.IsValid() {
				return reflect.Value{}
			}
			return deref(m.MapIndex(keys[k]))
		}
		if od := dc.element(fmt.Sprintf("%s[%s]", name, k), get(ov), get(nv)); od != nil {
			out = append(out, od)
		}
	}
	return out
}

// stringSet compares two lists of values as sets (datacenters, tags).
func (dc differ) stringSet(name string, ov, nv reflect.Value) *ObjectDiff {
	values := func(v reflect.Value) map[string]bool {
		m := map[string]bool{}
		for i := 0; v.IsValid() && i < v.Len(); i++ {
			m[fmt.Sprint(v.Index(i).Interface())] = true
		}
		return m
	}
	o, n := values(ov), values(nv)
	od := &ObjectDiff{Name: name}
	all := map[string]bool{}
	for k := range o {
		all[k] = true
	}
	for k := range n {
		all[k] = true
	}
	changes := 0
	for _, k := range sortedKeys(all) {
		switch {
		case o[k] && !n[k]:
			od.Fields = append(od.Fields, &FieldDiff{Type: TypeDeleted, Name: name, Old: k})
			changes++
		case !o[k] && n[k]:
			od.Fields = append(od.Fields, &FieldDiff{Type: TypeAdded, Name: name, New: k})
			changes++
		case dc.contextual:
			od.Fields = append(od.Fields, &FieldDiff{Type: TypeNone, Name: name, Old: k, New: k})
		}
	}
	if changes == 0 {
		return nil
	}
	od.Type = kind(len(o) > 0, len(n) > 0, true)
	return od
}

// flatObject compares two free-form maps (a task's config) flattened into
// fields such as "args[0]" and "mount[0][type]". A change the fields do not
// render (a null added, a nested map emptied) is still one, as in object.
func (dc differ) flatObject(name string, ov, nv reflect.Value) *ObjectDiff {
	fields := dc.flatFields(flatten("", ov), flatten("", nv))
	edited := false
	for _, f := range fields {
		edited = edited || f.Type != TypeNone
	}
	if !edited && same(ov, nv) {
		return nil
	}
	return &ObjectDiff{Type: kind(isSet(ov), isSet(nv), true), Name: name, Fields: fields}
}

func isSet(v reflect.Value) bool { return v.IsValid() && !(v.Kind() == reflect.Map && v.Len() == 0) }

// flatFields compares two flattened maps.
func (dc differ) flatFields(o, n map[string]string) []*FieldDiff {
	all := map[string]bool{}
	for k := range o {
		all[k] = true
	}
	for k := range n {
		all[k] = true
	}
	var out []*FieldDiff
	for _, k := range sortedKeys(all) {
		ov, oOK := o[k]
		nv, nOK := n[k]
		switch {
		case oOK && !nOK:
			out = append(out, &FieldDiff{Type: TypeDeleted, Name: k, Old: ov})
		case !oOK && nOK:
			out = append(out, &FieldDiff{Type: TypeAdded, Name: k, New: nv})
		case ov != nv:
			out = append(out, &FieldDiff{Type: TypeEdited, Name: k, Old: ov, New: nv})
		case dc.contextual:
			out = append(out, &FieldDiff{Type: TypeNone, Name: k, Old: ov, New: nv})
		}
	}
	return out
}

// field compares two primitive values; a missing value (of an added or
// deleted object) is empty.
func (dc differ) field(name string, ov, nv reflect.Value) *FieldDiff {
	os, ns := text(ov), text(nv)
	switch {
	case os == ns:
		if dc.contextual && (ov.IsValid() || nv.IsValid()) {
			return &FieldDiff{Type: TypeNone, Name: name, Old: os, New: ns}
		}
		return nil
	case os == "":
		return &FieldDiff{Type: TypeAdded, Name: name, New: ns}
	case ns == "":
		return &FieldDiff{Type: TypeDeleted, Name: name, Old: os}
	}
	return &FieldDiff{Type: TypeEdited, Name: name, Old: os, New: ns}
}

// flatten renders a value as flat keys, as Nomad's flatmap does: a map's
// entries as "prefix[key]" ("key" without a prefix), a list's elements as
// "prefix[0]", to any depth ("mount[0][type]").
func flatten(prefix string, v reflect.Value) map[string]string {
	out := map[string]string{}
	var walk func(key string, v reflect.Value)
	walk = func(key string, v reflect.Value) {
		v = deref(v)
		if !v.IsValid() {
			return
		}
		switch v.Kind() {
		case reflect.Map:
			for _, k := range v.MapKeys() {
				walk(fmt.Sprintf("%s[%v]", key, k.Interface()), v.MapIndex(k))
			}
		case reflect.Slice, reflect.Array:
			for i := 0; i < v.Len(); i++ {
				walk(fmt.Sprintf("%s[%d]", key, i), v.Index(i))
			}
		default:
			out[key] = text(v)
		}
	}
	if v = deref(v); prefix == "" && v.IsValid() && v.Kind() == reflect.Map {
		for _, k := range v.MapKeys() {
			walk(fmt.Sprint(k.Interface()), v.MapIndex(k))
		}
	} else {
		walk(prefix, v)
	}
	return out
}

// same reports whether two values are deeply equal, an empty list or map
// equal to none: the store's encoding makes one of the other, and a job
// compared with its stored copy has not changed.
func same(a, b reflect.Value) bool {
	a, b = deref(a), deref(b)
	switch {
	case !a.IsValid() || !b.IsValid():
		// A job added or deleted has none of the other's blocks: an unset
		// free-form block there (a nil map) is no block either.
		return empty(a) && empty(b)
	case a.Type() != b.Type():
		return false
	}
	switch a.Kind() {
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := 0; i < a.Len(); i++ {
			if !same(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			if e := b.MapIndex(k); !e.IsValid() || !same(a.MapIndex(k), e) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !same(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return a.IsNil() && b.IsNil()
	}
	return a.Equal(b)
}

// empty reports whether v is missing, or an empty list or map.
func empty(v reflect.Value) bool {
	if !v.IsValid() {
		return true
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	}
	return false
}

var durationType = reflect.TypeOf(time.Duration(0))

func text(v reflect.Value) string {
	v = deref(v)
	if !v.IsValid() {
		return ""
	}
	if v.Type() == durationType {
		return fmt.Sprint(v.Int())
	}
	return fmt.Sprint(v.Interface())
}

func isPrimitive(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// deref follows pointers and interfaces; nil becomes the zero Value.
func deref(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

// singular names one element of a list field: Constraints is Constraint,
// Affinities is Affinity.
func singular(name string) string {
	switch {
	case strings.HasSuffix(name, "ies"):
		return strings.TrimSuffix(name, "ies") + "y"
	case strings.HasSuffix(name, "s") && !strings.HasSuffix(name, "ss"):
		return strings.TrimSuffix(name, "s")
	}
	return name
}

// names lists the names of the elements of a and b, each once, in order;
// nil elements have none.
func names[T any](a, b []*T, name func(*T) string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range [][]*T{a, b} {
		for _, e := range l {
			if e == nil {
				continue
			}
			if n := name(e); !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// lookup returns the first element of list named n, or nil.
func lookup[T any](list []*T, n string, name func(*T) string) *T {
	for _, e := range list {
		if e != nil && name(e) == n {
			return e
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
