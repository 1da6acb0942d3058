package sdk

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// TestAllocation_RoundTrip checks that encoding leaves out empty fields and
// decoding clears fields a message leaves out, so that a decoded
// allocation equals the encoded one even when decoded into a used value.
func TestAllocation_RoundTrip(t *testing.T) {
	healthy := true
	in := &Allocation{
		ID: "a1", Namespace: "default", Name: "web.web[0]", NodeID: "n1", JobID: "web", JobVersion: 3, TaskGroup: "web",
		AllocatedResources: &AllocatedResources{Tasks: map[string]*AllocatedTaskResources{
			"web": {Cpu: AllocatedCpuResources{CpuShares: 500}, Memory: AllocatedMemoryResources{MemoryMB: 256}}}},
		Metrics: &AllocMetric{NodesEvaluated: 3, NodesAvailable: map[string]int{"dc1": 3},
			ScoreMetaData: []*NodeScoreMeta{{NodeID: "n1", Scores: NodeScores{{Name: "binpack", Score: 0.5}}, NormScore: 0.5}}},
		DesiredStatus: AllocDesiredStatusRun, ClientStatus: AllocClientStatusPending,
		DeploymentStatus: &AllocDeploymentStatus{Healthy: &healthy, Timestamp: time.Unix(10, 0).UTC(), Canary: true},
	}
	b, err := in.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	dirty := &Allocation{ID: "old", DesiredDescription: "stale", FollowupEvalID: "stale", Metrics: &AllocMetric{NodesFiltered: 9}}
	if _, err := dirty.UnmarshalMsg(b); err != nil {
		t.Fatal(err)
	}
	again, err := dirty.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, again) {
		t.Fatalf("round trip differs:\n in %+v\nout %+v", in, dirty)
	}
	if dirty.DesiredDescription != "" || dirty.FollowupEvalID != "" || dirty.Metrics.NodesFiltered != 0 {
		t.Fatalf("fields the message left out were not cleared: %+v %+v", dirty, dirty.Metrics)
	}
	empty, _ := (&Allocation{}).MarshalMsg(nil)
	if len(empty) > 64 {
		t.Fatalf("an empty allocation encodes to %d bytes: empty fields are not left out", len(empty))
	}
}

func TestNodeScores_JSONIsAnObject(t *testing.T) {
	m := NodeScoreMeta{NodeID: "n1", Scores: NodeScores{{"binpack", 0.5}, {"job-anti-affinity", -0.2}}, NormScore: 0.15}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"NodeID":"n1","Scores":{"binpack":0.5,"job-anti-affinity":-0.2},"NormScore":0.15}`
	if string(b) != want {
		t.Fatalf("JSON = %s, want %s", b, want)
	}
	var back NodeScoreMeta
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if v, ok := back.Scores.Get("job-anti-affinity"); !ok || v != -0.2 || len(back.Scores) != 2 {
		t.Fatalf("decoded %+v", back)
	}
}

// TestObjects_LeaveOutAndClearZeroFields: the other objects the host
// sends leave out their zero fields as allocations do (an empty one
// encodes to the fields holding a struct, not a pointer, which are always
// written), and decoding into a used value clears what the message leaves
// out.
func TestObjects_LeaveOutAndClearZeroFields(t *testing.T) {
	type codec interface {
		MarshalMsg([]byte) ([]byte, error)
		UnmarshalMsg([]byte) ([]byte, error)
	}
	cases := []struct {
		name string
		// size is what an empty one encodes to: a map of the fields that
		// hold a struct, each an empty map.
		size             int
		empty, in, dirty codec
	}{
		{"job", 9, &Job{},
			&Job{ID: "web", Type: JobTypeService, TaskGroups: []*TaskGroup{{Name: "g", Count: 2, Tasks: []*Task{{Name: "t", Driver: "exec"}}}}},
			&Job{ID: "old", Region: "stale", Priority: 9, Stop: true, Meta: map[string]string{"a": "b"},
				TaskGroups: []*TaskGroup{{Name: "x", Count: 7, Meta: map[string]string{"c": "d"},
					Tasks: []*Task{{Name: "y", User: "stale", Resources: &Resources{CPU: 5}}}}}}},
		{"evaluation", 1, &Evaluation{},
			&Evaluation{ID: "e1", Status: EvalStatusPending},
			&Evaluation{ID: "old", StatusDescription: "stale", Wait: time.Second, QueuedAllocations: map[string]int{"g": 1},
				WaitUntil: time.Unix(5, 0).UTC()}},
		{"node", 1, &Node{},
			&Node{ID: "n1", Status: NodeStatusReady},
			&Node{ID: "old", Datacenter: "dc9", Drain: true, Attributes: map[string]string{"a": "b"},
				NodeResources: &NodeResources{MinDynamicPort: 3}}},
		{"deployment", 1, &Deployment{},
			&Deployment{ID: "d1", Status: "running"},
			&Deployment{ID: "old", StatusDescription: "stale", JobVersion: 3}},
		{"plan", 1, &Plan{},
			&Plan{EvalID: "e1"},
			&Plan{EvalID: "old", Priority: 5, AllAtOnce: true, NodeAllocation: map[string][]*Allocation{"n1": {{ID: "a"}}}}},
		{"scheduler configuration", 19, &SchedulerConfiguration{},
			&SchedulerConfiguration{SchedulerAlgorithm: "spread"},
			&SchedulerConfiguration{RejectJobRegistration: true, CreateIndex: 4}},
		{"node device", 1, &NodeDeviceResource{},
			&NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Instances: []*NodeDevice{{ID: "d0", Healthy: true}}},
			&NodeDeviceResource{Name: "stale", Attributes: DeviceAttributes{"memory": "8 GiB"}}},
	}
	for _, c := range cases {
		empty, err := c.empty.MarshalMsg(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(empty) != c.size {
			t.Errorf("%s: an empty one encodes to %d bytes, not %d: empty fields are not left out", c.name, len(empty), c.size)
		}
		b, err := c.in.MarshalMsg(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.dirty.UnmarshalMsg(b); err != nil {
			t.Fatal(err)
		}
		again, err := c.dirty.MarshalMsg(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, again) {
			t.Errorf("%s: decoded into a used value, it is not what was sent:\n in %+v\nout %+v", c.name, c.in, c.dirty)
		}
	}
}

// BenchmarkDecode decodes objects the guest receives in every eval: the
// benchmark's batch job (Nomad's mock job, as bench builds it) and one of
// its constraints. It runs natively and, with a wasm runner as -exec, in
// the guest's runtime, which is how the cost of the same Go code in and
// out of the sandbox is compared (docs/benchmarks.md, "twenty-fifth
// session"):
//
//	go test -run '^$' -bench Decode ./sdk
//	go build -o /tmp/wazero github.com/tetratelabs/wazero/cmd/wazero
//	GOOS=wasip1 GOARCH=wasm go test -exec '/tmp/wazero run' -run '^$' -bench Decode ./sdk
func BenchmarkDecode(b *testing.B) {
	job := &Job{Region: "global", Namespace: DefaultNamespace, ID: "batch-00000012", Name: "batch-00000012",
		Type: JobTypeBatch, Priority: JobDefaultPriority, Datacenters: []string{"dc1"}, NodePool: DefaultNodePool,
		Constraints: []*Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		Meta:        map[string]string{"owner": "armon"},
		TaskGroups: []*TaskGroup{{Name: "web", Count: 100, EphemeralDisk: &EphemeralDisk{SizeMB: 150},
			RestartPolicy: &RestartPolicy{Attempts: 3, Interval: 10 * time.Minute, Delay: time.Minute, Mode: "delay"},
			ReschedulePolicy: &ReschedulePolicy{Attempts: 2, Interval: 10 * time.Minute, Delay: 5 * time.Second,
				DelayFunction: "constant"},
			Migrate: &MigrateStrategy{MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: 10 * time.Second,
				HealthyDeadline: 5 * time.Minute},
			Tasks: []*Task{{Name: "web", Driver: "mock_driver", Config: Opaque{"command": "/bin/date"},
				Env: map[string]string{"FOO": "bar"}, Meta: map[string]string{"foo": "bar"},
				Resources: &Resources{CPU: 100, MemoryMB: 128}}}}},
	}
	cases := []struct {
		name  string
		obj   interface{ MarshalMsg([]byte) ([]byte, error) }
		fresh func() interface{ UnmarshalMsg([]byte) ([]byte, error) }
	}{
		{"job", job, func() interface{ UnmarshalMsg([]byte) ([]byte, error) } { return &Job{} }},
		{"constraint", job.Constraints[0], func() interface{ UnmarshalMsg([]byte) ([]byte, error) } { return &Constraint{} }},
	}
	for _, c := range cases {
		buf, err := c.obj.MarshalMsg(nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.fresh().UnmarshalMsg(buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(buf)), "bytes")
		})
	}
}
