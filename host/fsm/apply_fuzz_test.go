package fsm

import (
	"bytes"
	"errors"
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
	"github.com/tinylib/msgp/msgp"
)

// applyBase is a small state every fuzzed entry applies to.
func applyBase(t testing.TB) *FSM {
	store, _ := state.NewStore()
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service",
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1, Tasks: []*sdk.Task{{Name: "t", Driver: "docker"}}}}}
	err := store.Write(1, func(tx *state.Txn) error {
		if err := tx.UpsertNode(&sdk.Node{ID: "n1", Status: sdk.NodeStatusReady}); err != nil {
			return err
		}
		if err := tx.UpsertJob(job); err != nil {
			return err
		}
		if err := tx.UpsertEval(&sdk.Evaluation{ID: "e1", Namespace: "default", JobID: "web", Status: sdk.EvalStatusPending}); err != nil {
			return err
		}
		if err := tx.UpsertDeployment(&sdk.Deployment{ID: "d1", Namespace: "default", JobID: "web",
			TaskGroups: map[string]*sdk.DeploymentState{"g": {DesiredTotal: 1}}, Status: sdk.DeploymentStatusRunning}); err != nil {
			return err
		}
		if err := tx.UpsertACLPolicies([]*state.ACLPolicy{{Name: "readonly", Rules: `node { policy = "read" }`}}); err != nil {
			return err
		}
		if err := tx.UpsertACLRoles([]*state.ACLRole{{ID: "r1", Name: "readers", Policies: []string{"readonly"}}}); err != nil {
			return err
		}
		if err := tx.UpsertACLTokens([]*state.ACLToken{{AccessorID: "t1", SecretID: "s1", Type: state.ACLClientToken,
			Policies: []string{"readonly"}, Roles: []string{"r1"}, ExpirationTime: 5}}); err != nil {
			return err
		}
		return tx.UpsertAlloc(&sdk.Allocation{ID: "a1", Namespace: "default", JobID: "web", Job: job, TaskGroup: "g",
			NodeID: "n1", EvalID: "e1", DeploymentID: "d1", DesiredStatus: sdk.AllocDesiredStatusRun})
	})
	if err != nil {
		t.Fatal(err)
	}
	return New(store, nil, zerolog.Nop())
}

// FuzzApply: no decodable entry makes applying it panic. (Apply turns a
// panic into ErrApplyPanic so a bad entry cannot crash the host or poison
// a durable log; this test finds the inputs that would need that net.) An
// entry refused leaves the state as it was, and applying an entry is
// deterministic, as raft's replicas need.
func FuzzApply(f *testing.F) {
	seeds := []struct {
		t   MessageType
		msg msgp.Marshaler
	}{
		{JobRegisterRequestType, &JobRegisterRequest{Job: &sdk.Job{Namespace: "default", ID: "j2"}, Eval: &sdk.Evaluation{ID: "e2"}}},
		{ApplyPlanResultsRequestType, &ApplyPlanResultsRequest{EvalID: "e1",
			Deployment:    &sdk.Deployment{ID: "d2", Namespace: "default", JobID: "web", TaskGroups: map[string]*sdk.DeploymentState{"g": nil}},
			AllocsUpdated: []*sdk.Allocation{{ID: "a2", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1", DeploymentID: "d2"}}}},
		{ApplyPlanResultsRequestType, &ApplyPlanResultsRequest{EvalID: "e1", AllocsStopped: []*sdk.Allocation{nil, {ID: "a1"}}}},
		{AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*sdk.Allocation{{ID: "a1", ClientStatus: "running"}, nil}}},
		{EvalUpdateRequestType, &EvalUpdateRequest{Evals: []*sdk.Evaluation{nil}}},
		{NodeRegisterRequestType, &NodeRegisterRequest{Node: &sdk.Node{ID: "n2"}}},
		{NodeRegisterRequestType, &NodeRegisterRequest{Node: &sdk.Node{ID: "n3", Drivers: map[string]*sdk.DriverInfo{"exec": nil},
			NodeResources: &sdk.NodeResources{Networks: []*sdk.NetworkResource{nil},
				NodeNetworks: []*sdk.NodeNetworkResource{nil}, Devices: []*sdk.NodeDeviceResource{nil}}}}},
		{DeploymentStatusUpdateRequestType, &DeploymentStatusUpdateRequest{Update: &sdk.DeploymentStatusUpdate{DeploymentID: "d1", Status: "failed"}}},
		{DeploymentPromoteRequestType, &DeploymentPromoteRequest{DeploymentID: "d1", Groups: []string{"g", "nope"}}},
		{AllocUpdateDesiredTransitionRequestType, &AllocUpdateDesiredTransitionRequest{Allocs: map[string]*sdk.DesiredTransition{"a1": nil}}},
		{NodeUpdateDrainRequestType, &NodeUpdateDrainRequest{NodeID: "n1", DrainStrategy: &sdk.DrainStrategy{}}},
		{GarbageCollectRequestType, &GarbageCollectRequest{Evals: []string{"e1"}, Allocs: []string{"a1"}}},
		{ScalingEventRequestType, &ScalingEventRequest{Namespace: "default", JobID: "web", TaskGroup: "g",
			Event: &state.ScalingEvent{Message: "policy failed", Error: true}}},
		{ScalingEventRequestType, &ScalingEventRequest{Namespace: "default", JobID: "web", TaskGroup: "g"}},
		{ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: "ops", Rules: "x"}, {}}}},
		{ACLPolicyDeleteRequestType, &ACLPolicyDeleteRequest{Names: []string{"readonly", "nope"}}},
		{ACLTokenUpsertRequestType, &ACLTokenUpsertRequest{Tokens: []*state.ACLToken{
			{AccessorID: "t2", SecretID: "s1", Type: state.ACLManagementToken}, {AccessorID: "t1", SecretID: "s3", CreateIndex: 1}}}},
		{ACLTokenDeleteRequestType, &ACLTokenDeleteRequest{AccessorIDs: []string{"t1", ""}}},
		{ACLTokenBootstrapRequestType, &ACLTokenBootstrapRequest{Token: &state.ACLToken{AccessorID: "b", SecretID: "s1",
			Type: state.ACLManagementToken}, ResetIndex: 0}},
		{ACLRoleUpsertRequestType, &ACLRoleUpsertRequest{Roles: []*state.ACLRole{
			{ID: "r2", Name: "ops", Policies: []string{"readonly"}}, {ID: "r1", Name: "ops", CreateIndex: 1}, nil}}},
		{ACLRoleUpsertRequestType, &ACLRoleUpsertRequest{Roles: []*state.ACLRole{{ID: "r1", Name: "renamed",
			Policies: []string{"readonly", "nope"}, CreateIndex: 1}}}},
		{ACLRoleDeleteRequestType, &ACLRoleDeleteRequest{IDs: []string{"r1", ""}}},
		{RootKeyUpsertRequestType, &RootKeyUpsertRequest{Keys: []*state.RootKey{{KeyID: "k1", State: state.RootKeyActive, Key: []byte("k")}, nil}}},
		{VariableApplyRequestType, &VariableApplyRequest{Op: VarOpSet, Var: &state.Variable{Namespace: "default", Path: "a", KeyID: "k1", Data: []byte{1}}}},
		{VariableApplyRequestType, &VariableApplyRequest{Op: VarOpSet, RefsMustExist: true,
			Var: &state.Variable{Namespace: "prod", Path: "a", KeyID: "k1", Data: []byte{1}}}},
		{JobRegisterRequestType, &JobRegisterRequest{Job: &sdk.Job{Namespace: "prod", ID: "j3", NodePool: "gpu"}, RefsMustExist: true}},
		{NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "prod",
			Capabilities: &state.NamespaceCapabilities{EnabledTaskDrivers: []string{"exec"}}}, nil}}},
		{NamespaceDeleteRequestType, &NamespaceDeleteRequest{Names: []string{"prod", "default", ""}}},
		{NodePoolUpsertRequestType, &NodePoolUpsertRequest{NodePools: []*state.NodePool{{Name: "gpu"}, {Name: "all"}, nil}}},
		{NodePoolDeleteRequestType, &NodePoolDeleteRequest{Names: []string{"gpu", "default"}}},
		{JobVersionTagRequestType, &JobVersionTagRequest{Namespace: "default", JobID: "web", Name: "v0",
			Tag: &state.JobVersionTag{Name: "v0", Version: 0}}},
		{JobVersionTagRequestType, &JobVersionTagRequest{Namespace: "default", JobID: "web", Name: "v0"}},
		{CSIVolumeRegisterRequestType, &CSIVolumeRegisterRequest{Volumes: []*sdk.CSIVolume{{Namespace: "default", ID: "data", PluginID: "ebs",
			RequestedCapabilities: []*sdk.CSIVolumeCapability{{AccessMode: sdk.CSIAccessModeSingleNodeWriter}}}, nil}}},
		{CSIVolumeDetachRequestType, &CSIVolumeDetachRequest{Namespace: "default", ID: "data", NodeID: "n1"}},
		{CSIVolumeDeregisterRequestType, &CSIVolumeDeregisterRequest{Namespace: "default", IDs: []string{"data", ""}}},
		{VariableApplyRequestType, &VariableApplyRequest{Op: VarOpRekey, Var: &state.Variable{Namespace: "default", Path: "a", KeyID: "k1"}, CheckIndex: 3}},
		{VariableApplyRequestType, &VariableApplyRequest{Op: VarOpDeleteCAS, Var: &state.Variable{Namespace: "default", Path: "a"}}},
		{VariableApplyRequestType, &VariableApplyRequest{Op: VarOpLockAcquire, Var: &state.Variable{Namespace: "default", Path: "a",
			Lock: &state.VariableLock{ID: "l1", TTL: 10, LockDelay: 5}}, Now: 3}},
		{VariableApplyRequestType, &VariableApplyRequest{Op: VarOpLockExpire, Var: &state.Variable{Namespace: "default", Path: "a",
			Lock: &state.VariableLock{ID: "l1"}}, Now: 20}},
		{RootKeyDeleteRequestType, &RootKeyDeleteRequest{KeyID: "k1"}},
		{AutopilotConfigRequestType, &AutopilotConfigRequest{Config: &state.AutopilotConfig{CleanupDeadServers: true, MaxTrailingLogs: 250}, CAS: true}},
		{ACLAuthMethodUpsertRequestType, &ACLAuthMethodUpsertRequest{Methods: []*state.ACLAuthMethod{
			{Name: "ci", Type: state.ACLAuthMethodTypeJWT, Default: true, Config: &state.ACLAuthMethodConfig{JWKSURL: "u"}}, {Name: "x"}}}},
		{ACLBindingRuleUpsertRequestType, &ACLBindingRuleUpsertRequest{Rules: []*state.ACLBindingRule{
			{ID: "b1", AuthMethod: "ci", BindType: state.ACLBindTypeManagement}, {ID: "b1", AuthMethod: "nope", CreateIndex: 1}}}},
		{ACLBindingRuleDeleteRequestType, &ACLBindingRuleDeleteRequest{IDs: []string{"b1", ""}}},
		{ACLAuthMethodDeleteRequestType, &ACLAuthMethodDeleteRequest{Names: []string{"ci"}}},
		{OneTimeTokenUpsertRequestType, &OneTimeTokenUpsertRequest{Token: &state.OneTimeToken{OneTimeSecretID: "o", AccessorID: "t1", ExpiresAt: 5}}},
		{OneTimeTokenExchangeRequestType, &OneTimeTokenExchangeRequest{OneTimeSecretID: "o", Now: 4}},
		{OneTimeTokenExpireRequestType, &OneTimeTokenExpireRequest{Now: 6}},
	}
	for _, s := range seeds {
		b, err := Encode(s.t, s.msg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		msg, err := decodeEntry(b)
		if err != nil {
			return
		}
		fsm := applyBase(t)
		before := persisted(t, fsm)
		err = fsm.commit(10, msg)
		if errors.Is(err, ErrApplyPanic) {
			t.Fatalf("applying %T panicked: %v", msg, err)
		}
		after := persisted(t, fsm)
		if diff := compare(before, after); err != nil && diff != "" {
			t.Fatalf("%T was refused (%v) but changed the state: %s", msg, err, diff)
		}
		// Every replica applies the entry to the same state: they must
		// end in the same state (nothing read from a clock, a random
		// source or a map's order).
		again, _ := decodeEntry(b)
		other := applyBase(t)
		err2 := other.commit(10, again)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("%T applied twice to the same state: %v, then %v", msg, err, err2)
		}
		if diff := compare(after, persisted(t, other)); diff != "" {
			t.Fatalf("%T applied twice to the same state ends differently: %s", msg, diff)
		}
	})
}

// persisted is a copy of the FSM's state, through a snapshot: objects
// changed in place in the store afterwards do not change it.
func persisted(t *testing.T, f *FSM) *state.Snapshot {
	t.Helper()
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, f.store.Snapshot()); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return s.Snapshot()
}
