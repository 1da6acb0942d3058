package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/jobspec"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/nomad/api"
)

// agentProc is a running `drover agent` process.
type agentProc struct {
	cmd  *exec.Cmd
	base string
	logs *bytes.Buffer
	done chan struct{}
}

// startAgent runs `drover agent` with args and waits until it leads.
func startAgent(t *testing.T, bin string, args ...string) *agentProc {
	t.Helper()
	addr := freeAddr(t)
	p := &agentProc{base: "http://" + addr, logs: &bytes.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"agent", "-http-addr", addr, "-log-level", "warn"}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("agent output:\n%s", p.logs.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("agent exited: %v\n%s", p.cmd.ProcessState, p.logs.String())
		default:
		}
		if resp, err := http.Get(p.base + "/v1/status/leader"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("agent did not come up at %s:\n%s", p.base, p.logs.String())
	return nil
}

// kill SIGKILLs the agent.
func (p *agentProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// call sends a JSON request and decodes the JSON answer into out; it
// returns the status code.
func call(method, url string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, err
		}
	}
	return resp.StatusCode, nil
}

// registerUnderLoad has four clients register jobs (job-C-I, loadJob) as
// fast as they can, client C through bases[C mod len(bases)], until max
// registrations are acknowledged or during returns; it returns the IDs of
// the acknowledged ones.
func registerUnderLoad(bases []string, max int, during func()) map[string]bool {
	var mu sync.Mutex
	acked := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("job-%d-%d", c, i)
				var resp httpapi.JobRegisterResponse
				code, err := call("PUT", bases[c%len(bases)]+"/v1/jobs", &httpapi.JobRegisterRequest{Job: loadJob(id)}, &resp)
				if err == nil && code == 200 && resp.EvalID != "" {
					mu.Lock()
					acked[id] = true
					n := len(acked)
					mu.Unlock()
					if n >= max {
						return
					}
				}
			}
		}(c)
	}
	during()
	close(stop)
	wg.Wait()
	return acked
}

func loadJob(id string) *jobspec.Job {
	str := func(v string) *string { return &v }
	num := func(v int) *int { return &v }
	return &jobspec.Job{Job: api.Job{ID: str(id), Name: str(id), Type: str("service"), Datacenters: []string{"dc1"},
		TaskGroups: []*api.TaskGroup{{Name: str("g"), Count: num(2), Tasks: []*api.Task{{Name: "t", Driver: "docker",
			Resources: &api.Resources{CPU: num(100), MemoryMB: num(64)}}}}}}}
}

func loadNode(i int) *sdk.Node {
	return &sdk.Node{ID: fmt.Sprintf("node-%04d", i), Name: fmt.Sprintf("node-%04d", i), Datacenter: "dc1",
		Status: sdk.NodeStatusReady, SchedulingEligibility: sdk.NodeSchedulingEligible,
		Attributes: map[string]string{"kernel.name": "linux", "driver.docker": "1"},
		NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: 8000},
			Memory: sdk.NodeMemoryResources{MemoryMB: 16384}, Disk: sdk.NodeDiskResources{DiskMB: 100_000}}}
}

// TestE2E_DurableAgentSurvivesSIGKILL is the acceptance test of durable
// mode: an agent with a data dir takes node and job registrations under
// load, is killed with SIGKILL, and restarts from the same data dir. Every
// registration the API acknowledged is there, every eval reaches a
// terminal status, every acknowledged job is fully placed, and no node is
// over-committed.
func TestE2E_DurableAgentSurvivesSIGKILL(t *testing.T) {
	bin := droverBin(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "agent.hcl")
	// Nodes are registered once and never heartbeat: long TTLs keep them
	// ready. A low snapshot threshold makes the restart restore a snapshot
	// and replay the log after it.
	conf := fmt.Sprintf(`
data_dir = %q
server {
  num_schedulers          = 2
  min_heartbeat_ttl       = "1h"
  heartbeat_grace         = "1h"
  failover_heartbeat_ttl  = "1h"
  raft_snapshot_threshold = 256
  raft_snapshot_interval  = "1s"
  raft_trailing_logs      = 64
}
`, filepath.Join(dir, "data"))
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, bin, "-config", cfg)
	const nodes = 10
	for i := 0; i < nodes; i++ {
		if code, err := call("PUT", a.base+"/v1/nodes", &httpapi.NodeRegisterRequest{Node: &httpapi.RegisteredNode{Node: *loadNode(i)}}, nil); err != nil || code != 200 {
			t.Fatalf("register node: %d %v", code, err)
		}
	}

	// Load: four clients register jobs as fast as they can; the agent is
	// killed while they do.
	acked := registerUnderLoad([]string{a.base}, 300, func() {
		time.Sleep(1500 * time.Millisecond)
		a.kill(t)
	})
	t.Logf("%d job registrations acknowledged before SIGKILL", len(acked))
	if len(acked) < 20 {
		t.Fatalf("only %d registrations acknowledged: the load did not load", len(acked))
	}

	a = startAgent(t, bin, "-config", cfg)
	for id := range acked {
		if code, err := call("GET", a.base+"/v1/job/"+id, nil, nil); err != nil || code != 200 {
			t.Fatalf("acknowledged job %s lost after SIGKILL: %d %v", id, code, err)
		}
	}
	var evals []*sdk.Evaluation
	deadline := time.Now().Add(120 * time.Second)
	for {
		evals = nil
		if _, err := call("GET", a.base+"/v1/evaluations", nil, &evals); err != nil {
			t.Fatal(err)
		}
		open := 0
		for _, e := range evals {
			if !e.TerminalStatus() {
				open++
			}
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d evals still open after the restart", open, len(evals))
		}
		time.Sleep(200 * time.Millisecond)
	}
	statuses := map[string]int{}
	for _, e := range evals {
		statuses[e.Status]++
	}
	t.Logf("evals after restart: %v", statuses)
	if statuses[sdk.EvalStatusFailed] > 0 {
		t.Errorf("%d evals failed", statuses[sdk.EvalStatusFailed])
	}

	live := map[string]int{}
	for i := 0; i < nodes; i++ {
		var node sdk.Node
		var allocs []*sdk.Allocation
		id := loadNode(i).ID
		if _, err := call("GET", a.base+"/v1/node/"+id, nil, &node); err != nil {
			t.Fatal(err)
		}
		if _, err := call("GET", a.base+"/v1/node/"+id+"/allocations", nil, &allocs); err != nil {
			t.Fatal(err)
		}
		var used sdk.Usage
		for _, al := range allocs {
			if al.TerminalStatus() {
				continue
			}
			used.Add(al.Usage())
			live[al.JobID]++
		}
		if ok, dim := used.Fits(node.Capacity()); !ok {
			t.Errorf("node %s over-committed on %s: %+v used of %+v", id, dim, used, node.Capacity())
		}
	}
	for id := range acked {
		if live[id] != 2 {
			t.Errorf("acknowledged job %s has %d live allocations, want 2", id, live[id])
		}
	}
}
