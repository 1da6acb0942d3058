package state

import (
	"bytes"
	"sort"
	"testing"

	"github.com/drover-sched/drover/sdk"
	memdb "github.com/hashicorp/go-memdb"
)

// reflectSchema is the schema's indexes built with memdb.StringFieldIndex:
// the reference the typed indexers must match key for key.
func reflectSchema() map[string]map[string]memdb.Indexer {
	str := func(f string) memdb.Indexer { return &memdb.StringFieldIndex{Field: f} }
	nsID := func(f string) memdb.Indexer {
		return &memdb.CompoundIndex{Indexes: []memdb.Indexer{str("Namespace"), str(f)}}
	}
	return map[string]map[string]memdb.Indexer{
		TableIndex:       {"id": str("Key")},
		TableNodes:       {"id": str("ID")},
		TableJobs:        {"id": nsID("ID")},
		TableAllocs:      {"id": str("ID"), "job": nsID("JobID"), "node": str("NodeID")},
		TableEvals:       {"id": str("ID"), "job": nsID("JobID")},
		TableDeployments: {"id": str("ID"), "job": nsID("JobID")},
		TableSchedConfig: {"id": str("ID")},
		TableCluster:     {"id": str("Key")},
		TablePeriodic:    {"id": nsID("ID")},
		TableScaling:     {"id": nsID("JobID")},
		TableSummaries:   {"id": nsID("JobID")},
		TableACLPolicies: {"id": str("Name")},
		TableACLTokens:   {"id": str("AccessorID"), "secret": str("SecretID")},
		TableACLRoles:    {"id": str("ID"), "name": str("Name")},
		TableVariables:   {"id": nsID("Path")},
		TableRootKeys:    {"id": str("KeyID")},
		TableAutopilot:   {"id": str("Key")},

		TableACLAuthMethods:  {"id": str("Name")},
		TableNamespaces:      {"id": str("Name")},
		TableNodePools:       {"id": str("Name")},
		TableVersionTags:     {"id": nsID("JobID")},
		TableCSIVolumes:      {"id": nsID("ID"), "plugin": str("PluginID")},
		TableACLBindingRules: {"id": str("ID"), "auth_method": str("AuthMethod")},
		TableOneTimeTokens:   {"id": str("OneTimeSecretID"), "accessor": str("AccessorID")},
	}
}

// indexedObjects are, per table, objects with every indexed field set,
// none set, and each one left empty in turn.
func indexedObjects() map[string][]any {
	const id = "9f3c1a2e-0000-4000-8000-0000000000aa"
	return map[string][]any{
		TableIndex: {&IndexEntry{Key: TableAllocs, Value: 7}, &IndexEntry{}},
		TableNodes: {&sdk.Node{ID: id}, &sdk.Node{}, &sdk.Node{ID: "nöde/ü\x00x"}},
		TableJobs: {
			&sdk.Job{Namespace: "default", ID: "web"}, &sdk.Job{},
			&sdk.Job{ID: "web"}, &sdk.Job{Namespace: "default"},
		},
		TableAllocs: {
			&sdk.Allocation{ID: id, Namespace: "default", JobID: "web", NodeID: "n1", EvalID: "e1", DeploymentID: "d1"},
			&sdk.Allocation{},
			&sdk.Allocation{Namespace: "default", JobID: "web", NodeID: "n1", EvalID: "e1", DeploymentID: "d1"},
			&sdk.Allocation{ID: id, JobID: "web", NodeID: "n1", EvalID: "e1", DeploymentID: "d1"},
			&sdk.Allocation{ID: id, Namespace: "default", NodeID: "n1", EvalID: "e1", DeploymentID: "d1"},
			&sdk.Allocation{ID: id, Namespace: "default", JobID: "web", EvalID: "e1", DeploymentID: "d1"},
			&sdk.Allocation{ID: id, Namespace: "default", JobID: "web", NodeID: "n1", DeploymentID: "d1"},
			&sdk.Allocation{ID: id, Namespace: "default", JobID: "web", NodeID: "n1", EvalID: "e1"},
		},
		TableEvals: {
			&sdk.Evaluation{ID: id, Namespace: "default", JobID: "web"}, &sdk.Evaluation{},
			&sdk.Evaluation{Namespace: "default", JobID: "web"}, &sdk.Evaluation{ID: id, JobID: "web"},
			&sdk.Evaluation{ID: id, Namespace: "default"},
		},
		TableDeployments: {
			&sdk.Deployment{ID: id, Namespace: "default", JobID: "web"}, &sdk.Deployment{},
			&sdk.Deployment{Namespace: "default", JobID: "web"}, &sdk.Deployment{ID: id, JobID: "web"},
			&sdk.Deployment{ID: id, Namespace: "default"},
		},
		TableSchedConfig: {&SchedulerConfigEntry{ID: "config"}, &SchedulerConfigEntry{}},
		TableCluster:     {&ClusterMeta{Key: "cluster", ClusterID: "c1"}, &ClusterMeta{}},
		TablePeriodic: {
			&PeriodicLaunch{Namespace: "default", ID: "cron"}, &PeriodicLaunch{},
			&PeriodicLaunch{ID: "cron"}, &PeriodicLaunch{Namespace: "default"},
		},
		TableScaling: {
			&JobScalingEvents{Namespace: "default", JobID: "web"}, &JobScalingEvents{},
			&JobScalingEvents{JobID: "web"}, &JobScalingEvents{Namespace: "default"},
		},
		TableSummaries: {
			&JobSummaryKept{Namespace: "default", JobID: "web"}, &JobSummaryKept{},
			&JobSummaryKept{JobID: "web"}, &JobSummaryKept{Namespace: "default"},
		},
		TableACLPolicies: {&ACLPolicy{Name: "readonly"}, &ACLPolicy{}},
		TableACLTokens: {
			&ACLToken{AccessorID: id, SecretID: "s"}, &ACLToken{},
			&ACLToken{AccessorID: id}, &ACLToken{SecretID: "s"},
		},
		TableACLRoles: {
			&ACLRole{ID: id, Name: "ops"}, &ACLRole{},
			&ACLRole{ID: id}, &ACLRole{Name: "ops"},
		},
		TableVariables: {
			&Variable{Namespace: "default", Path: "app/db"}, &Variable{},
			&Variable{Path: "app/db"}, &Variable{Namespace: "default"},
		},
		TableRootKeys:       {&RootKey{KeyID: id}, &RootKey{}},
		TableAutopilot:      {&AutopilotConfig{Key: AutopilotConfigKey}, &AutopilotConfig{}},
		TableACLAuthMethods: {&ACLAuthMethod{Name: "okta"}, &ACLAuthMethod{}},
		TableNamespaces:     {&Namespace{Name: "prod"}, &Namespace{}},
		TableNodePools:      {&NodePool{Name: "gpu"}, &NodePool{}},
		TableCSIVolumes: {
			&sdk.CSIVolume{Namespace: "default", ID: "data", PluginID: "ebs"}, &sdk.CSIVolume{},
			&sdk.CSIVolume{ID: "data"}, &sdk.CSIVolume{Namespace: "default"}, &sdk.CSIVolume{PluginID: "ebs"},
		},
		TableVersionTags: {
			&JobVersionTags{Namespace: "default", JobID: "web"}, &JobVersionTags{},
			&JobVersionTags{JobID: "web"}, &JobVersionTags{Namespace: "default"},
		},
		TableACLBindingRules: {
			&ACLBindingRule{ID: id, AuthMethod: "okta"}, &ACLBindingRule{},
			&ACLBindingRule{ID: id}, &ACLBindingRule{AuthMethod: "okta"},
		},
		TableOneTimeTokens: {
			&OneTimeToken{OneTimeSecretID: "s", AccessorID: id}, &OneTimeToken{},
			&OneTimeToken{OneTimeSecretID: "s"}, &OneTimeToken{AccessorID: id},
		},
	}
}

// indexArgs are the argument lists tried against every index, valid and
// not, for one-field and namespace-and-ID indexes alike.
var indexArgs = [][]any{
	{}, {"9f3c"}, {""}, {"n\x00ü"}, {42}, {nil}, {[]byte("x")},
	{"default", "web"}, {"default", ""}, {"", "web"}, {"", ""}, {"default", 42}, {42, "web"},
	{"a", "b", "c"},
}

// The typed indexers give exactly the keys and errors of the
// StringFieldIndex schema they replace, so the change is invisible to
// stored data, lookups and prefix searches.
func TestSchema_TypedIndexersMatchStringFieldIndex(t *testing.T) {
	ref, objs := reflectSchema(), indexedObjects()
	for table, ts := range schema().Tables {
		names := make([]string, 0, len(ts.Indexes))
		for name := range ts.Indexes {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			got := ts.Indexes[name].Indexer
			want, ok := ref[table][name]
			if !ok {
				switch got.(type) {
				case versionIndexer[sdk.Job], versionIndexer[JobSubmission], policyIndexer: // new, not replacements
				default:
					t.Errorf("%s.%s: no reference indexer", table, name)
				}
				continue
			}
			delete(ref[table], name)
			t.Run(table+"."+name, func(t *testing.T) {
				if len(objs[table]) == 0 {
					t.Fatal("no objects")
				}
				for _, obj := range objs[table] {
					gOK, gKey, gErr := got.(memdb.SingleIndexer).FromObject(obj)
					wOK, wKey, wErr := want.(memdb.SingleIndexer).FromObject(obj)
					if gOK != wOK || !bytes.Equal(gKey, wKey) || errString(gErr) != errString(wErr) {
						t.Errorf("FromObject(%+v) = %v %q %v, want %v %q %v", obj, gOK, gKey, gErr, wOK, wKey, wErr)
					}
				}
				for _, args := range indexArgs {
					gKey, gErr := got.FromArgs(args...)
					wKey, wErr := want.FromArgs(args...)
					if !bytes.Equal(gKey, wKey) || errString(gErr) != errString(wErr) {
						t.Errorf("FromArgs(%q) = %q %v, want %q %v", args, gKey, gErr, wKey, wErr)
					}
					gKey, gErr = got.(memdb.PrefixIndexer).PrefixFromArgs(args...)
					wKey, wErr = want.(memdb.PrefixIndexer).PrefixFromArgs(args...)
					if !bytes.Equal(gKey, wKey) || errString(gErr) != errString(wErr) {
						t.Errorf("PrefixFromArgs(%q) = %q %v, want %q %v", args, gKey, gErr, wKey, wErr)
					}
				}
			})
		}
	}
	for table, idx := range ref {
		for name := range idx {
			t.Errorf("%s.%s: reference indexer not in schema", table, name)
		}
	}
}

// An object of the wrong type, or a nil one, is an error naming both
// types, not a panic or another type's field.
func TestSchema_TypedIndexerRejectsOtherTypes(t *testing.T) {
	for _, c := range []struct {
		obj  any
		want string
	}{
		{&sdk.Node{ID: "n1"}, "state: ID index wants *sdk.Allocation, got *sdk.Node"},
		{sdk.Allocation{ID: "a1"}, "state: ID index wants *sdk.Allocation, got sdk.Allocation"},
		{"a1", "state: ID index wants *sdk.Allocation, got string"},
		{nil, "state: ID index wants *sdk.Allocation, got <nil>"},
		{(*sdk.Allocation)(nil), "state: ID index got a nil *sdk.Allocation"},
	} {
		ok, key, err := allocID.FromObject(c.obj)
		if ok || key != nil || errString(err) != c.want {
			t.Errorf("FromObject(%#v) = %v %q %v, want error %q", c.obj, ok, key, err, c.want)
		}
	}
	// Inside a compound index too.
	if _, _, err := schema().Tables[TableAllocs].Indexes["job"].Indexer.(memdb.SingleIndexer).FromObject(&sdk.Job{}); err == nil {
		t.Error("allocs job index took a *sdk.Job")
	}
}

// Lookups by ID prefix, namespace and compound key go through the typed
// indexers end to end.
func TestSchema_PrefixAndCompoundLookups(t *testing.T) {
	s, _ := NewStore()
	err := s.Write(1, func(tx *Txn) error {
		for _, id := range []string{"ab12", "ab34", "cd56"} {
			if err := tx.UpsertNode(&sdk.Node{ID: id}); err != nil {
				return err
			}
		}
		for _, j := range []*sdk.Job{{Namespace: "default", ID: "web"}, {Namespace: "default", ID: "worker"}, {Namespace: "other", ID: "web"}} {
			if err := tx.UpsertJob(j); err != nil {
				return err
			}
		}
		// Allocations by eval and by deployment are those of existing ones.
		for _, e := range []*sdk.Evaluation{{ID: "e1", Namespace: "default", JobID: "web"}, {ID: "e2", Namespace: "other", JobID: "web"}} {
			if err := tx.UpsertEval(e); err != nil {
				return err
			}
		}
		if err := tx.UpsertDeployment(&sdk.Deployment{ID: "d1", Namespace: "default", JobID: "web"}); err != nil {
			return err
		}
		for _, a := range []*sdk.Allocation{
			{ID: "aa01", Namespace: "default", JobID: "web", NodeID: "ab12", EvalID: "e1"},
			{ID: "aa02", Namespace: "default", JobID: "web", NodeID: "ab34", EvalID: "e1", DeploymentID: "d1"},
			{ID: "bb01", Namespace: "other", JobID: "web", NodeID: "ab12", EvalID: "e2"},
		} {
			if err := tx.UpsertAlloc(a); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	for _, c := range []struct {
		name string
		got  int
		want int
	}{
		{"NodesByPrefix(ab)", len(snap.NodesByPrefix("ab")), 2},
		{"NodesByPrefix()", len(snap.NodesByPrefix("")), 3},
		{"Jobs(default)", len(snap.Jobs("default")), 2},
		{"JobsByIDPrefix(default, w)", len(snap.JobsByIDPrefix("default", "w")), 2},
		{"JobsByIDPrefix(other, w)", len(snap.JobsByIDPrefix("other", "w")), 1},
		{"AllocsByPrefix(aa)", len(snap.AllocsByPrefix("aa")), 2},
		{"AllocsByJob(default, web)", len(snap.AllocsByJob("default", "web")), 2},
		{"AllocsByNode(ab12)", len(snap.AllocsByNode("ab12")), 2},
		{"AllocsByEval(e1)", len(snap.AllocsByEval("e1")), 2},
		{"AllocsByEval(e2)", len(snap.AllocsByEval("e2")), 1},
		{"AllocsByEval(no such eval)", len(snap.AllocsByEval("e3")), 0},
		{"AllocsByDeployment(d1)", len(snap.AllocsByDeployment("d1")), 1},
		{"AllocsByDeployment(no such deployment)", len(snap.AllocsByDeployment("d2")), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d results, want %d", c.name, c.got, c.want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
