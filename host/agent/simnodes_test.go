package agent_test

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
)

// A purged dev node registers again at its next heartbeat, as a running
// Nomad client does.
func TestAgent_PurgedDevNodeRegistersAgain(t *testing.T) {
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	s := startAgent(t, dir, nil).Server()
	nodes := s.Store().Snapshot().Nodes()
	if len(nodes) != 3 {
		t.Fatalf("%d dev nodes", len(nodes))
	}
	id := nodes[0].ID
	if _, err := s.DeregisterNode(id); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); s.Store().Snapshot().Node(id) == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the purged dev node did not register again")
		}
	}
}
