package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/tinylib/msgp/msgp"
)

func TestSnapshot_RoundTripKeepsEverything(t *testing.T) {
	src, _ := state.NewStore()
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 70,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 2, Tasks: []*sdk.Task{{Name: "t", Driver: "docker",
			Config: sdk.Opaque{"image": "nginx", "ports": []any{"http"}}}}}}}
	write := func(i uint64, fn func(*state.Txn) error) {
		if err := src.Write(i, fn); err != nil {
			t.Fatal(err)
		}
	}
	write(1, func(tx *state.Txn) error {
		return tx.UpsertNode(&sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"})
	})
	write(2, func(tx *state.Txn) error { return tx.UpsertJob(job) })
	v0 := src.Snapshot().Job("default", "web")
	write(3, func(tx *state.Txn) error {
		return tx.UpsertAlloc(&sdk.Allocation{ID: "a1", Namespace: "default", JobID: "web", Job: v0, NodeID: "n1", EvalID: "e1",
			DesiredStatus: "run", ClientStatus: "running"})
	})
	j2 := *job
	j2.Priority = 80
	write(4, func(tx *state.Txn) error { return tx.UpsertJob(&j2) })
	write(5, func(tx *state.Txn) error {
		return tx.UpsertEval(&sdk.Evaluation{ID: "e1", Namespace: "default", JobID: "web", Status: "complete"})
	})
	write(6, func(tx *state.Txn) error {
		if err := tx.SetClusterMeta(&state.ClusterMeta{ClusterID: "c-1", CreateTime: 5}); err != nil {
			return err
		}
		return tx.SetSchedulerConfig(&sdk.SchedulerConfiguration{SchedulerAlgorithm: "spread"})
	})

	var buf bytes.Buffer
	if err := writeSnapshot(&buf, src.Snapshot()); err != nil {
		t.Fatal(err)
	}
	dst, _ := state.NewStore()
	if err := restore(dst, bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	snap := dst.Snapshot()
	if snap.Index() != 6 {
		t.Errorf("index = %d, want 6", snap.Index())
	}
	if j := snap.Job("default", "web"); j == nil || j.Priority != 80 || j.Version != 1 {
		t.Fatalf("job not restored: %+v", j)
	}
	a := snap.Alloc("a1")
	if a == nil || a.Job == nil || a.Job.Version != 0 || a.Job.Priority != 70 {
		t.Fatalf("alloc not restored with its own job version: %+v", a)
	}
	if got := a.Job.TaskGroups[0].Tasks[0].Config["image"]; got != "nginx" {
		t.Errorf("task config lost: %v", got)
	}
	if snap.Eval("e1") == nil || snap.Node("n1") == nil {
		t.Error("eval or node missing")
	}
	if snap.SchedulerConfig().SchedulerAlgorithm != "spread" {
		t.Error("scheduler config lost")
	}
	if m := snap.ClusterMeta(); m == nil || m.ClusterID != "c-1" || m.CreateTime != 5 {
		t.Errorf("cluster ID lost: %+v", m)
	}
	if snap.TableIndex(state.TableJobs) != 4 {
		t.Errorf("jobs table index = %d, want 4", snap.TableIndex(state.TableJobs))
	}
}

func TestSnapshot_CorruptIsRefused(t *testing.T) {
	src, _ := state.NewStore()
	_ = src.Write(1, func(tx *state.Txn) error { return tx.UpsertNode(&sdk.Node{ID: "n1"}) })
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, src.Snapshot()); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	cases := map[string][]byte{
		"empty":     nil,
		"bad magic": append([]byte("nope"), good[4:]...),
		"truncated": good[:len(good)-3],
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			dst, _ := state.NewStore()
			err := restore(dst, bytes.NewReader(b))
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("err = %v, want ErrCorruptSnapshot", err)
			}
		})
	}
}

// TestSnapshot_Property_RestoreEqualsSource writes random state, then
// checks that a snapshot restored into an empty store holds exactly what
// the source holds, object by object, with the same table indexes.
func TestSnapshot_Property_RestoreEqualsSource(t *testing.T) {
	queued, collected := 0, 0 // kept summaries seen, so the property covers them
	defer func() {
		if queued == 0 || collected == 0 {
			t.Errorf("the random states kept %d queued counts and %d collected counts: summaries untested", queued, collected)
		}
	}()
	for seed := uint64(1); seed <= 10; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 3))
			src, _ := state.NewStore()
			for i := uint64(1); i <= 200; i++ {
				err := src.Write(i, func(tx *state.Txn) error {
					job := func() *sdk.Job {
						j := &sdk.Job{Namespace: "default", ID: fmt.Sprintf("j%d", r.IntN(4)), Type: "service",
							Priority: 10 + r.IntN(80), TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: r.IntN(5)}}}
						if r.IntN(2) == 0 { // a scaling policy, whose identity and index the store keeps
							j.TaskGroups[0].Scaling = &sdk.ScalingPolicy{Type: "horizontal", Max: int64(5 + r.IntN(2)), Enabled: true}
						}
						return j
					}
					switch r.IntN(9) {
					case 0:
						return tx.UpsertNode(&sdk.Node{ID: fmt.Sprintf("n%d", r.IntN(5)), Status: "ready", Datacenter: "dc1"})
					case 1:
						j := job()
						if err := tx.UpsertJob(j); err != nil || r.IntN(3) == 0 {
							return err
						}
						return tx.UpsertJobSubmission(j.Namespace, j.ID, &state.JobSubmission{Source: fmt.Sprintf("job %d", i),
							Format: "hcl2", VariableFlags: map[string]string{"n": fmt.Sprint(i)}, Variables: "n = 1\n"})
					case 8:
						if j := tx.Job("default", fmt.Sprintf("j%d", r.IntN(4))); j != nil && r.IntN(4) == 0 {
							return tx.DeleteJob(j.Namespace, j.ID)
						}
						return nil
					case 2:
						j := tx.Job("default", fmt.Sprintf("j%d", r.IntN(4)))
						if j == nil {
							return nil
						}
						return tx.UpsertAlloc(&sdk.Allocation{ID: fmt.Sprintf("a%d", r.IntN(30)), Namespace: "default", JobID: j.ID,
							Job: j, TaskGroup: "g", NodeID: fmt.Sprintf("n%d", r.IntN(5)), DesiredStatus: "run",
							ClientStatus: []string{"running", "complete", "failed", "lost"}[r.IntN(4)]})
					case 3:
						// Evals with a queued count and collected terminal
						// allocations (default) make kept job summaries.
						e := &sdk.Evaluation{ID: fmt.Sprintf("e%d", r.IntN(30)), Namespace: "default",
							JobID: fmt.Sprintf("j%d", r.IntN(4)), Status: []string{"pending", "blocked", "complete"}[r.IntN(3)],
							WaitUntil: time.Unix(int64(r.IntN(1000)), 0).UTC()}
						if r.IntN(2) == 0 {
							e.QueuedAllocations = map[string]int{"g": r.IntN(3)}
						}
						return tx.UpsertEval(e)
					case 4:
						return tx.UpsertDeployment(&sdk.Deployment{ID: fmt.Sprintf("d%d", r.IntN(3)), Namespace: "default", JobID: "j0", Status: "running"})
					case 5:
						return tx.UpsertPeriodicLaunch(&state.PeriodicLaunch{Namespace: "default", ID: fmt.Sprintf("j%d", r.IntN(4)), Launch: int64(r.IntN(1e9))})
					case 6:
						count, evalID := int64(r.IntN(9)), fmt.Sprintf("e%d", r.IntN(30))
						e := &state.ScalingEvent{Time: int64(r.IntN(1e9)), PreviousCount: int64(r.IntN(9)), Message: "scaled",
							Meta: sdk.Opaque{"policy": "cpu"}}
						if r.IntN(2) == 0 {
							e.Count, e.EvalID = &count, &evalID
						} else {
							e.Error = true
						}
						return tx.AddScalingEvent("default", fmt.Sprintf("j%d", r.IntN(4)), []string{"g", "h"}[r.IntN(2)], e)
					default:
						if a := tx.Alloc(fmt.Sprintf("a%d", r.IntN(30))); a != nil {
							return tx.DeleteAlloc(a.ID)
						}
						return nil
					}
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			var buf bytes.Buffer
			if err := writeSnapshot(&buf, src.Snapshot()); err != nil {
				t.Fatal(err)
			}
			dst, _ := state.NewStore()
			if err := restore(dst, bytes.NewReader(buf.Bytes())); err != nil {
				t.Fatal(err)
			}
			a, b := src.Snapshot(), dst.Snapshot()
			if a.Index() != b.Index() {
				t.Fatalf("index %d vs %d", a.Index(), b.Index())
			}
			for _, table := range []string{state.TableNodes, state.TableJobs, state.TableAllocs, state.TableEvals, state.TableDeployments,
				state.TablePeriodic, state.TableSubmissions, state.TableSummaries, state.TableScalingPolicies} {
				if a.TableIndex(table) == 0 && table == state.TableScalingPolicies {
					t.Errorf("no write changed a scaling policy")
				}
				if a.TableIndex(table) != b.TableIndex(table) {
					t.Errorf("table %s index %d vs %d", table, a.TableIndex(table), b.TableIndex(table))
				}
			}
			if d := compare(a, b); d != "" {
				t.Fatal(d)
			}
			for _, k := range a.JobSummariesKept() {
				if k.Queued != nil {
					queued++
				}
				if len(k.Collected) > 0 {
					collected++
				}
			}
		})
	}
}

// norm returns v as it comes out of an encode and decode, so objects
// built in Go (nil maps) compare equal to decoded ones (empty maps).
func norm[T any, PT interface {
	*T
	msgp.Marshaler
	msgp.Unmarshaler
}](v PT) PT {
	b, err := v.MarshalMsg(nil)
	if err != nil {
		panic(err)
	}
	out := PT(new(T))
	if _, err := out.UnmarshalMsg(b); err != nil {
		panic(err)
	}
	return out
}

// compare lists every object of both snapshots and names the first
// difference.
func compare(a, b *state.Snapshot) string {
	list := func(s *state.Snapshot) map[string]any {
		out := map[string]any{}
		for _, n := range s.Nodes() {
			out["node/"+n.ID] = norm(n)
		}
		for _, j := range s.Jobs("") {
			out["job/"+j.ID] = norm(j)
			for _, v := range s.JobVersions(j.Namespace, j.ID) {
				out[fmt.Sprintf("version/%s/%d", j.ID, v.Version)] = norm(v)
			}
		}
		for _, al := range s.Allocs() {
			out["alloc/"+al.ID] = norm(al)
		}
		for _, e := range s.Evals() {
			out["eval/"+e.ID] = norm(e)
		}
		for _, d := range s.Deployments() {
			out["deployment/"+d.ID] = norm(d)
		}
		for _, l := range s.PeriodicLaunches() {
			out["periodic/"+l.ID] = norm(l)
		}
		for _, e := range s.AllScalingEvents() {
			out["scaling/"+e.JobID] = norm(e)
		}
		for _, sub := range s.JobSubmissions() {
			out[fmt.Sprintf("submission/%s/%d", sub.JobID, sub.Version)] = norm(sub)
		}
		for _, k := range s.JobSummariesKept() {
			out["summary/"+k.JobID] = norm(k)
		}
		for _, p := range s.ACLPolicies("") {
			out["acl-policy/"+p.Name] = norm(p)
		}
		for _, t := range s.ACLTokens("") {
			out["acl-token/"+t.AccessorID] = norm(t)
		}
		for _, r := range s.ACLRoles("") {
			out["acl-role/"+r.ID] = norm(r)
		}
		if i := s.ACLBootstrapIndex(); i != 0 {
			out["acl-bootstrap"] = i
		}
		for _, k := range s.RootKeys() {
			out["root-key/"+k.KeyID] = norm(k)
		}
		for _, v := range s.Variables("*", "") {
			out["variable/"+v.Namespace+"/"+v.Path] = norm(v)
		}
		if c := s.AutopilotConfig(); c != nil {
			out["autopilot"] = norm(c)
		}
		for _, m := range s.ACLAuthMethods() {
			out["auth-method/"+m.Name] = norm(m)
		}
		for _, r := range s.ACLBindingRules("") {
			out["binding-rule/"+r.ID] = norm(r)
		}
		for _, o := range s.OneTimeTokens() {
			out["one-time-token/"+o.OneTimeSecretID] = norm(o)
		}
		for _, ns := range s.Namespaces() {
			out["namespace/"+ns.Name] = norm(ns)
		}
		for _, p := range s.NodePools() {
			out["node-pool/"+p.Name] = norm(p)
		}
		for _, ts := range s.AllJobVersionTags() {
			out["version-tags/"+ts.Namespace+"/"+ts.JobID] = norm(ts)
		}
		return out
	}
	x, y := list(a), list(b)
	for k, v := range x {
		if !reflect.DeepEqual(v, y[k]) {
			return fmt.Sprintf("differs or lost: %s\n%+v\n%+v", k, v, y[k])
		}
	}
	for k := range y {
		if _, ok := x[k]; !ok {
			return "appeared: " + k
		}
	}
	return ""
}

// FuzzRestore: no input makes the snapshot reader panic; what it refuses
// it refuses as ErrCorruptSnapshot, leaving the state it would have
// replaced as it was; what it accepts, written again and read back, is
// the same state (nothing accepted is lost or changed by the next
// snapshot).
func FuzzRestore(f *testing.F) {
	src, _ := state.NewStore()
	_ = src.Write(1, func(tx *state.Txn) error {
		if err := tx.UpsertNode(&sdk.Node{ID: "n1"}); err != nil {
			return err
		}
		return tx.UpsertJob(&sdk.Job{Namespace: "default", ID: "j", TaskGroups: []*sdk.TaskGroup{{Name: "g"}}})
	})
	var buf bytes.Buffer
	_ = writeSnapshot(&buf, src.Snapshot())
	f.Add(buf.Bytes())
	f.Add([]byte(snapshotMagic))
	var rich bytes.Buffer
	if err := writeSnapshot(&rich, richState(f).Snapshot()); err != nil {
		f.Fatal(err)
	}
	f.Add(rich.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		dst, _ := state.NewStore()
		if err := restore(dst, bytes.NewReader(buf.Bytes())); err != nil {
			t.Fatal(err)
		}
		before := dst.Snapshot()
		if err := restore(dst, bytes.NewReader(b)); err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("error not ErrCorruptSnapshot: %v", err)
			}
			if diff := compare(before, dst.Snapshot()); diff != "" || dst.Snapshot().Index() != before.Index() {
				t.Fatalf("a refused snapshot changed the state: %s", diff)
			}
			return
		}
		var again bytes.Buffer
		if err := writeSnapshot(&again, dst.Snapshot()); err != nil {
			t.Fatalf("an accepted snapshot cannot be written again: %v", err)
		}
		back, _ := state.NewStore()
		if err := restore(back, &again); err != nil {
			t.Fatalf("an accepted snapshot, written again, is refused: %v", err)
		}
		if diff := compare(dst.Snapshot(), back.Snapshot()); diff != "" {
			t.Fatalf("an accepted snapshot does not survive being written again: %s", diff)
		}
	})
}

// richState holds a record of every kind a snapshot writes, so that the
// fuzzer starts from each of them: an allocation of a version no longer
// kept (an allocation job record), evaluations with queued counts, a
// deployment, a periodic launch, scaling events, a submission, the
// cluster's meta, the scheduler's configuration, ACL policies and tokens
// after a bootstrap, and an ACL role a token holds.
func richState(tb testing.TB) *state.Store { return richStateOf(tb, true, true) }

// richStateOf is richState, without its ACLs unless acls is set, and
// without its ACL role unless roles is set: a state as a version without
// ACLs, or with ACLs but without roles, would have had.
func richStateOf(tb testing.TB, acls, roles bool) *state.Store {
	src, _ := state.NewStore()
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 70,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 2, Tasks: []*sdk.Task{{Name: "t", Driver: "docker",
			Config: sdk.Opaque{"image": "nginx"}}}}}}
	steps := []func(tx *state.Txn) error{
		func(tx *state.Txn) error {
			return tx.UpsertNode(&sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"})
		},
		func(tx *state.Txn) error { return tx.UpsertJob(job) },
		func(tx *state.Txn) error {
			return tx.UpsertAlloc(&sdk.Allocation{ID: "a1", Namespace: "default", JobID: "web", Job: tx.Job("default", "web"),
				TaskGroup: "g", NodeID: "n1", EvalID: "e1", DesiredStatus: "run", ClientStatus: "running"})
		},
		func(tx *state.Txn) error { return tx.DeleteJob("default", "web") },
		func(tx *state.Txn) error {
			j := *job
			j.Priority = 80
			if err := tx.UpsertJob(&j); err != nil {
				return err
			}
			if err := tx.UpsertJobSubmission("default", "web", &state.JobSubmission{Source: `job "web" {}`, Format: "hcl2",
				VariableFlags: map[string]string{"n": "1"}}); err != nil {
				return err
			}
			return tx.TagJobVersion("default", "web", &state.JobVersionTag{Name: "golden", Description: "known good",
				TaggedTime: 5, Version: tx.Job("default", "web").Version})
		},
		func(tx *state.Txn) error {
			return tx.UpsertEval(&sdk.Evaluation{ID: "e1", Namespace: "default", JobID: "web", Status: "complete",
				QueuedAllocations: map[string]int{"g": 1}})
		},
		func(tx *state.Txn) error {
			return tx.UpsertDeployment(&sdk.Deployment{ID: "d1", Namespace: "default", JobID: "web", Status: "running",
				TaskGroups: map[string]*sdk.DeploymentState{"g": {DesiredTotal: 2}}})
		},
		func(tx *state.Txn) error {
			return tx.UpsertPeriodicLaunch(&state.PeriodicLaunch{Namespace: "default", ID: "web", Launch: 5})
		},
		func(tx *state.Txn) error {
			return tx.AddScalingEvent("default", "web", "g", &state.ScalingEvent{Time: 7, Message: "scaled", Error: true})
		},
		func(tx *state.Txn) error {
			if err := tx.SetClusterMeta(&state.ClusterMeta{ClusterID: "c-1", CreateTime: 5}); err != nil {
				return err
			}
			return tx.SetSchedulerConfig(&sdk.SchedulerConfiguration{SchedulerAlgorithm: "spread"})
		},
		func(tx *state.Txn) error {
			if err := tx.UpsertACLTokens([]*state.ACLToken{mgmtToken("boot")}); err != nil {
				return err
			}
			if err := tx.UpsertACLPolicies([]*state.ACLPolicy{{Name: "readonly", Rules: `node { policy = "read" }`}}); err != nil {
				return err
			}
			if err := tx.UpsertACLTokens([]*state.ACLToken{{AccessorID: "c-acc", SecretID: "c-sec", Type: state.ACLClientToken,
				Policies: []string{"readonly"}, CreateTime: 7, ExpirationTime: 9}}); err != nil {
				return err
			}
			return tx.SetACLBootstrap(tx.Index())
		},
		func(tx *state.Txn) error {
			if err := tx.UpsertACLRoles([]*state.ACLRole{{ID: "r-1", Name: "readers", Description: "read",
				Policies: []string{"readonly"}}}); err != nil {
				return err
			}
			return tx.UpsertACLTokens([]*state.ACLToken{{AccessorID: "r-acc", SecretID: "r-sec", Type: state.ACLClientToken,
				Roles: []string{"r-1"}, CreateTime: 8}})
		},
		func(tx *state.Txn) error {
			for _, k := range []*state.RootKey{{KeyID: "k-1", Algorithm: "aes256-gcm", CreateTime: 3, State: state.RootKeyInactive, Key: []byte("old key")},
				{KeyID: "k-2", Algorithm: "aes256-gcm", CreateTime: 4, State: state.RootKeyActive, Key: []byte("new key")}} {
				if err := tx.UpsertRootKey(k); err != nil {
					return err
				}
			}
			for _, v := range []*state.Variable{{Namespace: "default", Path: "app/db", CreateTime: 5, ModifyTime: 6, KeyID: "k-1", Data: []byte{1, 2}},
				{Namespace: "prod", Path: "nomad/jobs/web", CreateTime: 7, ModifyTime: 7, KeyID: "k-2", Data: []byte{3},
					Lock: &state.VariableLock{ID: "l-1", TTL: 15e9, LockDelay: 15e9}, LockDelayUntil: 8}} {
				if err := tx.SetVariable(v); err != nil {
					return err
				}
			}
			if err := tx.MakeRefsExplicit(); err != nil { // as the first namespace write makes them
				return err
			}
			if err := tx.UpsertNamespaces([]*state.Namespace{{Name: "prod", Description: "production", Meta: map[string]string{"team": "a"},
				Capabilities: &state.NamespaceCapabilities{EnabledTaskDrivers: []string{"docker"}, DisabledTaskDrivers: []string{"raw_exec"}}},
				{Name: "default", Description: "ours"}}); err != nil {
				return err
			}
			if err := tx.UpsertNodePools([]*state.NodePool{{Name: "gpu", Description: "GPUs", Meta: map[string]string{"cuda": "12"}}}); err != nil {
				return err
			}
			if err := tx.SetAutopilotConfig(&state.AutopilotConfig{CleanupDeadServers: true, LastContactThreshold: 2e8, MaxTrailingLogs: 250,
				ServerStabilizationTime: 1e10, EnableRedundancyZones: true}); err != nil {
				return err
			}
			if err := tx.UpsertACLAuthMethods([]*state.ACLAuthMethod{{Name: "okta", Type: state.ACLAuthMethodTypeOIDC,
				TokenLocality: state.ACLTokenLocalityLocal, MaxTokenTTL: 36e11, Default: true, CreateTime: 9, ModifyTime: 9,
				Config: &state.ACLAuthMethodConfig{OIDCDiscoveryURL: "https://okta.example", OIDCClientID: "drover",
					BoundAudiences: []string{"drover"}, ClaimMappings: map[string]string{"email": "email"},
					ListClaimMappings: map[string]string{"groups": "groups"}, ClockSkewLeeway: 1e9}}}); err != nil {
				return err
			}
			if err := tx.UpsertACLBindingRules([]*state.ACLBindingRule{{ID: "b-1", AuthMethod: "okta", Selector: `"ops" in list.groups`,
				BindType: state.ACLBindTypeRole, BindName: "readers", CreateTime: 9, ModifyTime: 9}}); err != nil {
				return err
			}
			return tx.UpsertOneTimeToken(&state.OneTimeToken{OneTimeSecretID: "ott-1", AccessorID: "r-acc", ExpiresAt: 99})
		},
	}
	// Without roles, the variables (which came after them) are left out
	// too.
	if !roles {
		steps = steps[:len(steps)-2]
	}
	if !acls {
		steps = steps[:len(steps)-1]
	}
	for i, step := range steps {
		if err := src.Write(uint64(i+1), step); err != nil {
			tb.Fatal(err)
		}
	}
	return src
}

// FuzzCheck: no log entry makes the entry decoder panic, and an entry it
// passes decodes to a message whose encoding is stable: encoded again,
// it passes and decodes to the same encoding (a replica replaying the
// log, or a leader re-encoding what it decoded, sees the same entry).
func FuzzCheck(f *testing.F) {
	good, _ := Encode(JobRegisterRequestType, &JobRegisterRequest{Job: &sdk.Job{ID: "j"}, Eval: &sdk.Evaluation{ID: "e"}})
	f.Add(good)
	f.Add([]byte{byte(ApplyPlanResultsRequestType), 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := Check(b); err != nil {
			if !errors.Is(err, ErrBadEntry) {
				t.Fatalf("error not ErrBadEntry: %v", err)
			}
			return
		}
		once := reencode(t, b)
		if err := Check(once); err != nil {
			t.Fatalf("%T passed, but not once encoded again: %v", decodedOf(t, b), err)
		}
		if twice := reencode(t, once); !bytes.Equal(once, twice) {
			t.Fatalf("%T encodes differently each time it is decoded and encoded:\n%x\n%x", decodedOf(t, b), once, twice)
		}
	})
}

// decodedOf decodes an entry Check passed.
func decodedOf(t *testing.T, b []byte) msgp.Unmarshaler {
	t.Helper()
	msg, err := decodeEntry(b)
	if err != nil {
		t.Fatalf("Check passed an entry decodeEntry refuses: %v", err)
	}
	return msg
}

// reencode decodes an entry Check passed and encodes it again.
func reencode(t *testing.T, b []byte) []byte {
	t.Helper()
	out, err := Encode(MessageType(b[0]), decodedOf(t, b).(msgp.Marshaler))
	if err != nil {
		t.Fatalf("a decoded entry cannot be encoded again: %v", err)
	}
	return out
}

// A snapshot taken after a job was purged and registered again restores
// each allocation with the job version it ran, not the one that shares its
// version number.
func TestSnapshot_RestoreKeepsPurgedVersionsApart(t *testing.T) {
	src, _ := state.NewStore()
	mk := func(img string) *sdk.Job {
		return &sdk.Job{Namespace: "default", ID: "web", Type: "service", TaskGroups: []*sdk.TaskGroup{{Name: "g",
			Tasks: []*sdk.Task{{Name: "t", Driver: "docker", Config: sdk.Opaque{"image": img}}}}}}
	}
	steps := []func(tx *state.Txn) error{
		func(tx *state.Txn) error { return tx.UpsertJob(mk("v1")) },
		func(tx *state.Txn) error {
			return tx.UpsertAlloc(&sdk.Allocation{ID: "a1", Namespace: "default", JobID: "web", Job: tx.Job("default", "web"), NodeID: "n1"})
		},
		func(tx *state.Txn) error { return tx.DeleteJob("default", "web") },
		func(tx *state.Txn) error { return tx.UpsertJob(mk("v2")) },
		func(tx *state.Txn) error {
			return tx.UpsertAlloc(&sdk.Allocation{ID: "a2", Namespace: "default", JobID: "web", Job: tx.Job("default", "web"), NodeID: "n1"})
		},
	}
	for i, step := range steps {
		if err := src.Write(uint64(i+1), step); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, src.Snapshot()); err != nil {
		t.Fatal(err)
	}
	dst, _ := state.NewStore()
	if err := restore(dst, &buf); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"a1": "v1", "a2": "v2"} {
		a := dst.Snapshot().Alloc(id)
		if a.Job == nil || a.Job.TaskGroups[0].Tasks[0].Config["image"] != want {
			t.Errorf("restored %s runs %+v, want image %s", id, a.Job, want)
		}
	}
	// What the API lists as the job's own allocations leaves out the
	// purged instance's, after a restore as before.
	if got := dst.Snapshot().AllocsByJobInstance("default", "web"); len(got) != 1 || got[0].ID != "a2" {
		t.Errorf("restored, the job's own allocations are %d, want a2 alone", len(got))
	}
}

// A snapshot restored into a cluster takes that cluster's ID: the record
// is replaced (or added, or left out for none), everything else is
// unchanged, and the size is what ClusterMetaRecordSize says.
func TestReplaceClusterMeta(t *testing.T) {
	src, _ := state.NewStore()
	write := func(i uint64, fn func(*state.Txn) error) {
		if err := src.Write(i, fn); err != nil {
			t.Fatal(err)
		}
	}
	write(1, func(tx *state.Txn) error {
		return tx.UpsertNode(&sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"})
	})
	var without bytes.Buffer
	if err := writeSnapshot(&without, src.Snapshot()); err != nil {
		t.Fatal(err)
	}
	theirs := &state.ClusterMeta{ClusterID: "theirs-0000", CreateTime: 1}
	write(2, func(tx *state.Txn) error { return tx.SetClusterMeta(theirs) })
	var with bytes.Buffer
	if err := writeSnapshot(&with, src.Snapshot()); err != nil {
		t.Fatal(err)
	}
	ours := &state.ClusterMeta{ClusterID: "ours-00000000000000", CreateTime: 7}
	for _, tc := range []struct {
		name     string
		in       []byte
		old, new *state.ClusterMeta
	}{
		{"replaced", with.Bytes(), theirs, ours},
		{"added", without.Bytes(), nil, ours},
		{"removed", with.Bytes(), theirs, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := ReplaceClusterMeta(&out, bytes.NewReader(tc.in), tc.new); err != nil {
				t.Fatal(err)
			}
			if want := int64(len(tc.in)) - ClusterMetaRecordSize(tc.old) + ClusterMetaRecordSize(tc.new); int64(out.Len()) != want {
				t.Fatalf("size %d, want %d", out.Len(), want)
			}
			dst, err := ReadSnapshot(bytes.NewReader(out.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			snap := dst.Snapshot()
			got := snap.ClusterMeta()
			if (tc.new == nil) != (got == nil) || got != nil && (got.ClusterID != tc.new.ClusterID || got.CreateTime != tc.new.CreateTime) {
				t.Fatalf("cluster meta %+v, want %+v", got, tc.new)
			}
			if snap.Node("n1") == nil {
				t.Fatal("the rest of the state was lost")
			}
		})
	}
	if err := ReplaceClusterMeta(io.Discard, bytes.NewReader(with.Bytes()[:with.Len()-3]), ours); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("truncated: %v", err)
	}
}
