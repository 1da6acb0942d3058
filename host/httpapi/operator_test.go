package httpapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/nomad/api"
	"github.com/rs/zerolog"
)

// What Nomad's `server members` and `operator raft list-peers` read: the
// one server, its tags, and the leader's address matching the member's.
func TestNomadClient_MembersAndRaftPeers(t *testing.T) {
	s := servertest.New(t, nil, nil)
	a := httpapi.New(s, zerolog.Nop(), nil)
	ts := httptest.NewServer(a.Handler())
	t.Cleanup(ts.Close)
	a.SetAdvertise(ts.Listener.Addr().String())
	c := nomadClient(t, ts.URL)

	m, err := c.Agent().Members()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Members) != 1 {
		t.Fatalf("members: %+v", m)
	}
	me := m.Members[0]
	leader, err := c.Status().Leader()
	if err != nil {
		t.Fatal(err)
	}
	if net.JoinHostPort(me.Addr, me.Tags["port"]) != leader || strconv.Itoa(int(me.Port)) != me.Tags["port"] ||
		me.Status != "alive" || me.Tags["region"] != "global" || me.Tags["raft_vsn"] != "3" {
		t.Fatalf("member %+v, leader %q: Nomad's CLI would not see it lead", me, leader)
	}
	cfg, err := c.Operator().RaftGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 1 || !cfg.Servers[0].Leader || !cfg.Servers[0].Voter || cfg.Servers[0].ID == "" {
		t.Fatalf("raft configuration: %+v", cfg.Servers)
	}
	// agent self: the same member, and the version as Nomad's object.
	self, err := c.Agent().Self()
	if err != nil {
		t.Fatal(err)
	}
	if self.Member.Name != me.Name || self.Member.Addr != me.Addr || self.Member.Port != me.Port ||
		self.Member.Tags["build"] != me.Tags["build"] {
		t.Fatalf("agent self member %+v, members list %+v", self.Member, me)
	}
	// Nomad's lower-case keys, which scripts read (jq .stats.nomad.leader;
	// the agent fills the stats): the api package decodes any key case, so
	// the raw answer is checked.
	_, raw := do(t, "GET", ts.URL+"/v1/agent/self", "")
	var keys struct {
		Config map[string]any               `json:"config"`
		Member map[string]any               `json:"member"`
		Stats  map[string]map[string]string `json:"stats"`
	}
	if err := json.Unmarshal(raw, &keys); err != nil || keys.Config == nil || keys.Member == nil {
		t.Fatalf("agent self, raw: %v %s", err, raw)
	}
	v, pre, _ := strings.Cut(server.Version, "-")
	version, ok := self.Config["Version"].(map[string]any)
	if !ok || version["Version"] != v || version["VersionPrerelease"] != pre {
		t.Fatalf("agent self version %#v, want Nomad's version object", self.Config["Version"])
	}
}

// nomad system reconcile summaries: nothing to recount here, and no error.
func TestNomadClient_ReconcileSummaries(t *testing.T) {
	ts, _ := newAPI(t, 0)
	if err := nomadClient(t, ts.URL).System().ReconcileSummaries(); err != nil {
		t.Fatal(err)
	}
}

// nomad eval delete: refused while the broker runs; with it paused, by IDs
// and by filter, deleting the evaluations only.
func TestNomadClient_EvalDelete(t *testing.T) {
	ts, s := newAPI(t, 1)
	c := nomadClient(t, ts.URL)
	var evals []string
	for _, id := range []string{"a", "b", "c"} {
		e, _, err := s.RegisterJob(servertest.Job(id, sdk.JobTypeService, 1, 100, 64))
		if err != nil {
			t.Fatal(err)
		}
		servertest.WaitForEval(t, s, e)
		evals = append(evals, e)
	}
	big, _, err := s.RegisterJob(servertest.Job("big", sdk.JobTypeService, 1, 100_000, 64))
	if err != nil {
		t.Fatal(err)
	}
	blocked := servertest.WaitForEval(t, s, big).BlockedEval
	if b := s.Blocked().Blocked("default", "big"); b == nil || b.ID != blocked {
		t.Fatalf("no blocked eval tracked for big: %+v", b)
	}
	if _, err := c.Evaluations().Delete(evals[:1], nil); err == nil || !strings.Contains(err.Error(), "must be paused") {
		t.Fatalf("delete with the broker running: %v", err)
	}
	if _, _, err := c.Operator().SchedulerSetConfiguration(&api.SchedulerConfiguration{PauseEvalBroker: true}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Evaluations().Delete(evals[:1], nil); err != nil {
		t.Fatal(err)
	}
	resp, _, err := c.Evaluations().DeleteOpts(&api.EvalDeleteRequest{Filter: `JobID == "b"`}, nil)
	if err != nil || resp.Count != 1 {
		t.Fatalf("delete by filter: %+v %v", resp, err)
	}
	snap := s.Store().Snapshot()
	if snap.Eval(evals[0]) != nil || snap.Eval(evals[1]) != nil || snap.Eval(evals[2]) == nil {
		t.Fatal("the wrong evaluations were deleted")
	}
	if len(snap.AllocsByJob("default", "a")) != 1 {
		t.Fatal("deleting an evaluation deleted its allocation")
	}
	// A deleted blocked eval leaves the blocked tracker.
	if _, err := c.Evaluations().Delete([]string{blocked}, nil); err != nil {
		t.Fatal(err)
	}
	if b := s.Blocked().Blocked("default", "big"); b != nil {
		t.Fatalf("the deleted blocked eval is still tracked: %+v", b)
	}
	if _, err := c.Evaluations().Delete([]string{"nope"}, nil); err == nil {
		t.Fatal("deleting an unknown evaluation succeeded")
	}
}

// Nomad's client saves (checking the Digest header) and restores an
// operator snapshot.
func TestNomadClient_OperatorSnapshot(t *testing.T) {
	ts, s := newAPI(t, 1)
	c := nomadClient(t, ts.URL)
	registerWeb(t, c)
	rc, err := c.Operator().Snapshot(nil)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := io.ReadAll(rc) // fails on a checksum mismatch
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Deregister("web", true, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Operator().SnapshotRestore(bytes.NewReader(saved), nil); err != nil {
		t.Fatal(err)
	}
	if s.Store().Snapshot().Job("default", "web") == nil {
		t.Fatal("the restored snapshot lacks the job purged after it was saved")
	}
}

// A check-and-set index given empty (?cas=) is a 400, as in Nomad, not a
// write without the check.
func TestSchedulerSetConfig_EmptyCASIsRefused(t *testing.T) {
	ts, s := newAPI(t, 0)
	before := s.Store().Snapshot().SchedulerConfig()
	resp, out := do(t, "PUT", ts.URL+"/v1/operator/scheduler/configuration?cas=", `{"SchedulerAlgorithm": "spread"}`)
	if resp.StatusCode != 400 {
		t.Fatalf("?cas=: %d %s", resp.StatusCode, out)
	}
	if after := s.Store().Snapshot().SchedulerConfig(); after.ModifyIndex != before.ModifyIndex || after.SchedulerAlgorithm != before.SchedulerAlgorithm {
		t.Fatalf("the refused write changed the configuration: %+v", after)
	}
}

// While the scheduler configuration rejects job registrations, Nomad
// answers a registration, a dispatch or a scaling request with a 403 and
// its message; stopping a job goes through.
func TestNomadClient_RejectJobRegistrationIs403(t *testing.T) {
	ts, _ := newAPI(t, 1)
	c := nomadClient(t, ts.URL)
	job := registerWeb(t, c)
	param, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{Canonicalize: true, JobHCL: `
job "report" {
  type = "batch"
  parameterized {}
  group "g" {
    task "t" {
      driver = "exec"
      resources { cpu = 100 }
    }
  }
}`})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Register(param, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Operator().SchedulerSetConfiguration(&api.SchedulerConfiguration{RejectJobRegistration: true}, nil); err != nil {
		t.Fatal(err)
	}
	refused := map[string]error{}
	_, _, refused["register"] = c.Jobs().Register(job, nil)
	_, _, refused["scale"] = c.Jobs().Scale("web", "frontend", ptr(3), "", false, nil, nil)
	_, _, refused["dispatch"] = c.Jobs().Dispatch("report", nil, nil, "", nil)
	for what, err := range refused {
		var e api.UnexpectedResponseError
		if !errors.As(err, &e) || e.StatusCode() != http.StatusForbidden ||
			!strings.Contains(strings.ToLower(e.Body()), "job registration, dispatch, and scale are disabled by the scheduler configuration") {
			t.Errorf("%s: %v, want a 403", what, err)
		}
	}
	if _, _, err := c.Jobs().Deregister("web", false, nil); err != nil {
		t.Fatalf("stop: %v", err)
	}
}

// nomad eval delete -filter: as Nomad's, the filter reads the evaluations
// of every namespace, whatever namespace the client is configured with
// (the command takes none).
func TestNomadClient_EvalDeleteByFilterSpansNamespaces(t *testing.T) {
	ts, s := newAPI(t, 1)
	c := nomadClient(t, ts.URL)
	evals := map[string]string{}
	servertest.Namespaces(t, s, "team-a", "team-b")
	for _, ns := range []string{"default", "team-a", "team-b"} {
		job := servertest.Job("web", sdk.JobTypeService, 1, 100, 64)
		job.Namespace = ns
		e, _, err := s.RegisterJob(job)
		if err != nil {
			t.Fatal(err)
		}
		servertest.WaitForEval(t, s, e)
		evals[ns] = e
	}
	if _, _, err := c.Operator().SchedulerSetConfiguration(&api.SchedulerConfiguration{PauseEvalBroker: true}, nil); err != nil {
		t.Fatal(err)
	}
	resp, _, err := c.Evaluations().DeleteOpts(&api.EvalDeleteRequest{Filter: `Namespace != "team-b"`}, nil)
	if err != nil || resp.Count != 2 {
		t.Fatalf("delete by filter: %+v %v", resp, err)
	}
	// A client configured with a namespace deletes in every one too.
	resp, _, err = c.Evaluations().DeleteOpts(&api.EvalDeleteRequest{Filter: `JobID == "web"`}, &api.WriteOptions{Namespace: "team-a"})
	if err != nil || resp.Count != 1 {
		t.Fatalf("delete by filter from namespace team-a: %+v %v", resp, err)
	}
	snap := s.Store().Snapshot()
	for ns, id := range evals {
		if snap.Eval(id) != nil {
			t.Errorf("the eval of namespace %s is still there", ns)
		}
	}
}

// registerWeb registers webHCL's job through Nomad's client and returns it.
func registerWeb(t *testing.T, c *api.Client) *api.Job {
	t.Helper()
	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: webHCL, Canonicalize: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	return job
}
