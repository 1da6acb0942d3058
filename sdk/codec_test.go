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
