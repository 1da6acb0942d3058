package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/agent"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/logmon"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/internal/testlog"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
	"github.com/rs/zerolog"
)

// debugMarker is the line the test agent logs every 50 ms at debug
// level, for the captured log to hold.
const debugMarker = "operator-debug-test-marker"

// debugAgent starts an in-process dev agent with two nodes, the service
// plugin, a log to monitor (at debug, with a marker line every 50 ms) and,
// with acls, ACLs bootstrapped; it returns the agent, its address and the
// management token's secret ("" without ACLs).
func debugAgent(t *testing.T, acls bool) (a *agent.Agent, addr, root string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(wasmtest.Build(t, "./plugins/service"), filepath.Join(dir, "service.wasm")); err != nil {
		t.Fatal(err)
	}
	cfg := agent.DefaultConfig()
	cfg.Dev, cfg.DevNodes, cfg.HTTPAddr, cfg.PluginDir = true, 2, "127.0.0.1:0", dir
	cfg.Server.NumWorkers = 1
	cfg.Server.ACLEnabled = acls
	cfg.Logs = logmon.NewHub()
	log := zerolog.New(cfg.Logs).Level(zerolog.DebugLevel)
	a, err := agent.New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	logMarkers(t, log, debugMarker)
	if acls {
		cl := debugClient(t, a.Addr(), "")
		var token api.ACLToken
		if _, err := cl.Post(bg, "/v1/acl/bootstrap", &api.BootstrapRequest{}, &token); err != nil {
			t.Fatalf("bootstrap: %v", err)
		}
		root = token.SecretID
	}
	return a, a.Addr(), root
}

// logMarkers logs msg at debug level every 50 ms until the test ends.
func logMarkers(t *testing.T, log zerolog.Logger, msg string) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			log.Debug().Msg(msg)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	t.Cleanup(func() {
		stop()
		<-done
	})
}

func debugClient(t *testing.T, addr, token string) *client.Client {
	t.Helper()
	cl, err := client.New(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	cl.Token = token
	return cl
}

// registerDebugJob registers a service job through the API, for the
// state to hold one.
func registerDebugJob(t *testing.T, cl *client.Client) {
	t.Helper()
	var job json.RawMessage
	if _, err := cl.Post(bg, "/v1/jobs/parse", map[string]any{"JobHCL": `
job "web" {
  datacenters = ["*"]
  group "web" {
    task "web" {
      driver = "exec"
      config {
        command = "sleep"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}`}, &job); err != nil {
		t.Fatalf("parse: %v", err)
	}
	if _, err := cl.Put(bg, "/v1/jobs", map[string]any{"Job": job}, nil); err != nil {
		t.Fatalf("register: %v", err)
	}
}

// registerSecretNode registers a node with a secret ID through the
// node-agent endpoint and returns the secret.
func registerSecretNode(t *testing.T, cl *client.Client) string {
	t.Helper()
	const secret = "5ec2e7a1-0000-4000-8000-00000000dead"
	n := httpapi.RegisteredNode{SecretID: secret, Node: sdk.Node{ID: "d3b06a10-0000-4000-8000-000000000001", Name: "secretive",
		Datacenter: "dc1", Status: "ready", Attributes: map[string]string{"kernel.name": "linux"}}}
	if _, err := cl.Put(bg, "/v1/nodes", &httpapi.NodeRegisterRequest{Node: &n}, nil); err != nil {
		t.Fatalf("node register: %v", err)
	}
	return secret
}

// runDebug runs operator debug against addr with token and args, in the
// test's working directory; it returns the exit code and the output.
func runDebug(t *testing.T, addr, token string, args ...string) (int, string, string) {
	t.Helper()
	setTokenEnv(t, nil)
	t.Setenv(envNamespace, "")
	var out, errOut testlog.Buffer
	ui := &cli.BasicUi{Writer: &out, ErrorWriter: &errOut}
	m := &meta{ui: ui, out: &out, errOut: &errOut, in: strings.NewReader(""), now: time.Now}
	cmd, err := commands(m)["operator debug"]()
	if err != nil {
		t.Fatal(err)
	}
	code := cmd.Run(append([]string{"-address", addr, "-token", token}, args...))
	return code, out.String(), errOut.String()
}

// archiveRE finds the archive in operator debug's output.
var archiveRE = regexp.MustCompile(`Created debug archive: (drover-debug-\S+\.tar\.gz)`)

// readArchive returns the files of a debug archive by their paths under
// its one top directory, which must be the archive's name.
func readArchive(t *testing.T, file string) map[string][]byte {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	top := strings.TrimSuffix(filepath.Base(file), ".tar.gz")
	files := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rel, ok := strings.CutPrefix(h.Name, top+"/")
		if !ok {
			t.Fatalf("%s is not under %s/", h.Name, top)
		}
		if files[rel], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// checkJSON fails unless data is one JSON document, not a recorded error.
func checkJSON(t *testing.T, name string, data []byte) {
	t.Helper()
	var e struct{ Error string }
	if !json.Valid(data) {
		t.Errorf("%s is not JSON: %.200s", name, data)
	} else if json.Unmarshal(data, &e) == nil && e.Error != "" {
		t.Errorf("%s is an error: %s", name, e.Error)
	}
}

// jsonLinesOf returns the lines of a file of JSON lines, failing on one
// that is not JSON.
func jsonLinesOf(t *testing.T, name string, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if l == "" {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Errorf("%s: a line is not JSON: %v: %.200s", name, err, l)
			continue
		}
		if _, ok := v["Error"]; ok && len(v) == 1 {
			t.Errorf("%s is an error: %s", name, l)
		}
		out = append(out, v)
	}
	return out
}

// checkProfile fails unless data is a pprof profile: gzipped protocol
// buffer fields, read to the end, with sample types and a string table.
func checkProfile(t *testing.T, name string, data []byte) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Errorf("%s: not gzipped: %v", name, err)
		return
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	fields := map[uint64]int{}
	for len(raw) > 0 {
		tag, n := binary.Uvarint(raw)
		if n <= 0 {
			t.Errorf("%s: a bad field tag", name)
			return
		}
		raw = raw[n:]
		switch tag & 7 {
		case 0: // varint
			if _, n = binary.Uvarint(raw); n <= 0 {
				t.Errorf("%s: a bad varint", name)
				return
			}
			raw = raw[n:]
		case 2: // length-delimited
			l, n := binary.Uvarint(raw)
			if n <= 0 || uint64(len(raw)-n) < l {
				t.Errorf("%s: a field cut short", name)
				return
			}
			raw = raw[n+int(l):]
		default:
			t.Errorf("%s: wire type %d, which profiles do not use", name, tag&7)
			return
		}
		fields[tag>>3]++
	}
	if fields[1] == 0 || fields[6] == 0 {
		t.Errorf("%s: no sample types or no string table: fields %v", name, fields)
	}
}

// checkNoSecrets fails if any file holds one of the secrets.
func checkNoSecrets(t *testing.T, files map[string][]byte, secrets ...string) {
	t.Helper()
	for name, data := range files {
		for _, s := range secrets {
			if s != "" && bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds the secret %s", name, s)
			}
		}
	}
}

// serverDir is the directory of the agent's server in a bundle.
func serverDir(t *testing.T, a *agent.Agent) string {
	t.Helper()
	return "server/" + a.Server().Config().NodeName + "." + a.Server().Config().Region
}

// A capture with the management token against an agent with ACLs: the
// archive holds the cluster's files, the state every interval, the log,
// the profiles, the event stream and the nodes, each valid, listed in
// index.json; no file holds a token's secret or a node's.
func TestOperatorDebug_Archive(t *testing.T) {
	a, addr, root := debugAgent(t, true)
	cl := debugClient(t, addr, root)
	registerDebugJob(t, cl)
	nodeSecret := registerSecretNode(t, cl)
	writeACLPolicy(t, addr, root, "reader", `node { policy = "read" }`)
	var reader api.ACLToken
	if _, err := cl.Post(bg, "/v1/acl/token", &api.ACLToken{Name: "reader", Type: "client", Policies: []string{"reader"}}, &reader); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())

	start := time.Now()
	code, out, errOut := runDebug(t, addr, root, "-duration", "2s", "-interval", "1s", "-pprof-duration", "1s", "-pprof-interval", "1s",
		"-event-topic", "all")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Logf("the capture took %s", time.Since(start))
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a 2 s capture took %s", took)
	}
	m := archiveRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no archive named:\n%s", out)
	}
	checkContains(t, "output", out, "Starting debugger...", "Servers: (1/1)", "Clients: (3/3)", "Interval: 1s", "Duration: 2s",
		"Event topics: [*:*]", "Capturing cluster data...", "Capture interval 0000", "Capture interval 0001", "Capture pprofInterval 0000")
	files := readArchive(t, m[1])
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	t.Logf("archive %s:\n%s", m[1], strings.Join(names, "\n"))

	var index []string
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if want := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "index.json" || n == "index.html" }); !slices.Equal(index, want) {
		t.Errorf("index.json lists %v, the archive holds %v", index, want)
	}
	if !bytes.Contains(files["index.html"], []byte(`<a href="cluster/members.json">`)) {
		t.Errorf("index.html:\n%s", files["index.html"])
	}

	for _, f := range []string{"members", "leader", "peers", "regions", "namespaces", "node-pools", "agent-self", "nodes",
		"operator-raft", "operator-scheduler", "operator-autopilot-configuration", "operator-autopilot-health",
		"plugins-schedulers", "plugins-refused", "cli-flags"} {
		checkJSON(t, "cluster/"+f+".json", files["cluster/"+f+".json"])
	}
	if !bytes.Contains(files["cluster/plugins-schedulers.json"], []byte(`"service"`)) {
		t.Errorf("plugins-schedulers.json: %s", files["cluster/plugins-schedulers.json"])
	}
	events := jsonLinesOf(t, "cluster/eventstream.json", files["cluster/eventstream.json"])
	types := map[any]bool{}
	for _, e := range events {
		types[e["Type"]] = true
	}
	if !types["NodeRegistration"] || !types["JobRegistered"] || !types["ACLTokenUpserted"] {
		t.Errorf("the event stream's types: %v", types)
	}

	for _, k := range []string{"0000", "0001"} {
		dir := "interval/" + k + "/"
		for _, f := range []string{"metrics", "operator-scheduler", "operator-raft", "operator-autopilot-health", "plugin-scheduler-service"} {
			checkJSON(t, dir+f+".json", files[dir+f+".json"])
		}
		for _, f := range []string{"allocations", "evaluations", "deployments"} {
			if _, ok := files[dir+f+".json"]; !ok {
				t.Errorf("no %s%s.json", dir, f)
			}
			jsonLinesOf(t, dir+f+".json", files[dir+f+".json"])
		}
		if jobs := jsonLinesOf(t, dir+"jobs.json", files[dir+"jobs.json"]); len(jobs) != 1 || jobs[0]["ID"] != "web" {
			t.Errorf("%sjobs.json: %v", dir, jobs)
		}
		if nodes := jsonLinesOf(t, dir+"nodes.json", files[dir+"nodes.json"]); len(nodes) != 3 {
			t.Errorf("%snodes.json: %d nodes, want 3", dir, len(nodes))
		}
	}
	if _, ok := files["interval/0002/jobs.json"]; ok {
		t.Error("a third interval in a 2 s capture every 1 s")
	}
	for _, n := range a.Server().Store().Snapshot().Nodes() {
		checkJSON(t, "node.json of "+n.ID, files["client/"+n.ID+"/node.json"])
		jsonLinesOf(t, "allocations.json of "+n.ID, files["client/"+n.ID+"/allocations.json"])
	}

	srv := serverDir(t, a)
	checkJSON(t, srv+"/agent-self.json", files[srv+"/agent-self.json"])
	if !bytes.Contains(files[srv+"/monitor.log"], []byte(debugMarker)) {
		t.Errorf("%s/monitor.log lacks the agent's log:\n%.500s", srv, files[srv+"/monitor.log"])
	}
	for _, p := range []string{"profile", "goroutine", "heap", "allocs", "threadcreate", "block", "mutex"} {
		checkProfile(t, p, files[srv+"/"+p+"_0000.prof"])
	}
	if tr := files[srv+"/trace_0000.prof"]; !bytes.HasPrefix(tr, []byte("go 1.")) {
		t.Errorf("trace_0000.prof is not an execution trace: %.40q", tr)
	}
	if !bytes.HasPrefix(files[srv+"/goroutine-debug1_0000.txt"], []byte("goroutine profile: total ")) {
		t.Errorf("goroutine-debug1_0000.txt: %.100s", files[srv+"/goroutine-debug1_0000.txt"])
	}
	if !bytes.HasPrefix(files[srv+"/goroutine-debug2_0000.txt"], []byte("goroutine ")) {
		t.Errorf("goroutine-debug2_0000.txt: %.100s", files[srv+"/goroutine-debug2_0000.txt"])
	}
	if _, ok := files[srv+"/profile_0001.prof"]; ok {
		t.Error("a second set of profiles, with -pprof-interval at -pprof-duration")
	}
	for name := range files {
		if strings.HasSuffix(name, ".error.json") {
			t.Errorf("%s: %s", name, files[name])
		}
	}

	if !bytes.Contains(files["cluster/cli-flags.json"], []byte(`"token":"`+redacted+`"`)) {
		t.Errorf("cli-flags.json: %s", files["cluster/cli-flags.json"])
	}
	checkNoSecrets(t, files, root, reader.SecretID, nodeSecret)
}

// A token without agent:write: the profiles are recorded as refused, and
// the rest is captured.
func TestOperatorDebug_ProfilesRefused(t *testing.T) {
	a, addr, root := debugAgent(t, true)
	writeACLPolicy(t, addr, root, "debugger", `
namespace "*" {
  policy = "read"
}
node {
  policy = "read"
}
agent {
  policy = "read"
}
operator {
  policy = "read"
}
plugin {
  policy = "read"
}
`)
	cl := debugClient(t, addr, root)
	registerDebugJob(t, cl)
	var token api.ACLToken
	if _, err := cl.Post(bg, "/v1/acl/token", &api.ACLToken{Name: "debugger", Type: "client", Policies: []string{"debugger"}}, &token); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	code, stdout, stderr := runDebug(t, addr, token.SecretID, "-duration", "1s", "-interval", "1s", "-output", out)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkContains(t, "stderr", stderr, "API error (403)", "Profiles need a token with agent:write")
	dirs, err := filepath.Glob(filepath.Join(out, "drover-debug-*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("output directories %v, %v", dirs, err)
	}
	checkContains(t, "stdout", stdout, "Created debug directory: "+dirs[0])
	if archives, _ := filepath.Glob("*.tar.gz"); len(archives) > 0 {
		t.Errorf("archives made with -output: %v", archives)
	}
	read := func(rel string) []byte {
		b, err := os.ReadFile(filepath.Join(dirs[0], filepath.FromSlash(rel)))
		if err != nil {
			t.Error(err)
		}
		return b
	}
	srv := serverDir(t, a)
	var refused errorFile
	if err := json.Unmarshal(read(srv+"/profile_0000.error.json"), &refused); err != nil || !strings.Contains(refused.Error, "403") {
		t.Errorf("profile_0000.error.json: %+v, %v", refused, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dirs[0], filepath.FromSlash(srv), "*.prof")); len(m) > 0 {
		t.Errorf("profiles taken with a token that may not: %v", m)
	}
	if m, _ := filepath.Glob(filepath.Join(dirs[0], filepath.FromSlash(srv), "trace_*")); len(m) > 0 {
		t.Errorf("the profiles went on after the refusal: %v", m)
	}
	for _, f := range []string{"cluster/members.json", "cluster/nodes.json", "cluster/operator-scheduler.json",
		"cluster/plugins-schedulers.json", srv + "/agent-self.json", "interval/0000/metrics.json"} {
		checkJSON(t, f, read(f))
	}
	if jobs := jsonLinesOf(t, "jobs.json", read("interval/0000/jobs.json")); len(jobs) != 1 {
		t.Errorf("jobs.json: %v", jobs)
	}
	if !bytes.Contains(read(srv+"/monitor.log"), []byte(debugMarker)) {
		t.Errorf("monitor.log lacks the agent's log")
	}
	var index []string
	if err := json.Unmarshal(read("index.json"), &index); err != nil || !slices.Contains(index, srv+"/profile_0000.error.json") {
		t.Errorf("index.json: %v, %v", index, err)
	}
}

// A token that may not list the servers or the nodes (no node:read): the
// refusals are recorded, and the agent asked, named by the server that
// answered, is captured all the same.
func TestOperatorDebug_ServersRefused(t *testing.T) {
	a, addr, root := debugAgent(t, true)
	writeACLPolicy(t, addr, root, "profiler", `agent { policy = "write" }`)
	var token api.ACLToken
	if _, err := debugClient(t, addr, root).Post(bg, "/v1/acl/token", &api.ACLToken{Name: "profiler", Type: "client", Policies: []string{"profiler"}}, &token); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	code, stdout, stderr := runDebug(t, addr, token.SecretID, "-duration", "1s", "-interval", "1s", "-pprof-interval", "1s", "-output", out)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkContains(t, "stderr", stderr, "Could not list the servers (API error (403)")
	name := a.Server().Config().NodeName
	checkContains(t, "stdout", stdout, "Servers: (1/?) ["+name+"]", "Clients: (0/0)")
	dirs, _ := filepath.Glob(filepath.Join(out, "drover-debug-*"))
	if len(dirs) != 1 {
		t.Fatalf("output directories: %v", dirs)
	}
	read := func(rel string) []byte {
		b, err := os.ReadFile(filepath.Join(dirs[0], filepath.FromSlash(rel)))
		if err != nil {
			t.Error(err)
		}
		return b
	}
	for _, f := range []string{"cluster/members.json", "cluster/nodes.json"} {
		var e errorFile
		if err := json.Unmarshal(read(f), &e); err != nil || !strings.Contains(e.Error, "403") {
			t.Errorf("%s: %+v, %v", f, e, err)
		}
	}
	checkProfile(t, "heap", read("server/"+name+"/heap_0000.prof"))
	checkJSON(t, "agent-self.json", read("server/"+name+"/agent-self.json"))
}

// Ctrl-C stops a long capture early, and the archive of what was
// captured is still written; the command exits 0, as Nomad's. Not
// parallel: the signal goes to the test process.
func TestOperatorDebug_Interrupted(t *testing.T) {
	_, addr, _ := debugAgent(t, false)
	t.Chdir(t.TempDir())
	// The capture's directory is made under $TMPDIR: this test's own, where
	// no other capture's is.
	t.Setenv("TMPDIR", t.TempDir())
	// Should the command have stopped listening, the signal lands here
	// rather than ending the test binary.
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, os.Interrupt)
	defer signal.Stop(guard)

	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runDebug(t, addr, "", "-duration", "1m", "-interval", "200ms", "-pprof-duration", "1s", "-pprof-interval", "1s")
		done <- result{code, out, errOut}
	}()
	// The capture is under way once its directory holds an interval.
	waitUntil(t, 10*time.Second, "the first interval", func() bool {
		m, _ := filepath.Glob(filepath.Join(os.TempDir(), "drover-debug-*", "interval", "0000", "metrics.json"))
		return len(m) > 0
	})
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("operator debug still runs 10 s after Ctrl-C")
	}
	if r.code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
	checkContains(t, "stderr", r.errOut, "Interrupted")
	m := archiveRE.FindStringSubmatch(r.out)
	if m == nil {
		t.Fatalf("no archive:\n%s", r.out)
	}
	files := readArchive(t, m[1])
	for _, f := range []string{"index.json", "cluster/members.json", "interval/0000/jobs.json"} {
		if _, ok := files[f]; !ok {
			t.Errorf("the archive lacks %s", f)
		}
	}
	var index []string
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index) == 0 {
		t.Errorf("index.json: %v, %v", index, err)
	}
}

// Bad options, a selection that matches nothing and an output directory
// that exists end the command before any capture, with Nomad's exit
// codes.
func TestOperatorDebug_Refusals(t *testing.T) {
	a, addr, _ := debugAgent(t, false)
	out := t.TempDir()
	stamp := time.Now().UTC()
	existing := filepath.Join(out, "drover-debug-"+stamp.Format("2006-01-02-150405Z"))
	if err := os.Mkdir(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		errHas string
	}{
		{"interval over duration", []string{"-duration", "1s", "-interval", "2s"}, exitError, "-interval=2s is longer than -duration=1s"},
		{"zero duration", []string{"-duration", "0s"}, exitError, "-duration=0s: give a positive duration"},
		{"bad log level", []string{"-log-level", "loud"}, exitError, "-log-level=loud"},
		{"bad topic", []string{"-event-topic", "Job:a:b"}, exitError, `"Job:a:b" is not Topic or Topic:Key`},
		{"negative index", []string{"-event-index", "-1"}, exitError, "-event-index=-1"},
		{"arguments", []string{"now"}, exitError, "This command takes no arguments"},
		{"no such server", []string{"-server-id", "nope"}, exitError, "no server matches -server-id=nope"},
		{"no such node", []string{"-node-id", "zzzz"}, exitError, "no node matches -node-id=zzzz"},
		{"no agent", []string{"-address", "http://" + freeAddr(t)}, exitError, "cannot reach the Drover agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runDebug(t, addr, "", tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.errHas) {
				t.Errorf("exit %d, want %d; stderr lacks %q:\n%s%s", code, tc.code, tc.errHas, stderr, stdout)
			}
		})
	}
	t.Run("output directory exists", func(t *testing.T) {
		now := func() time.Time { return stamp }
		setTokenEnv(t, nil)
		ui := cli.NewMockUi()
		cmd, _ := commands(&meta{ui: ui, out: ui.OutputWriter, now: now})["operator debug"]()
		if code := cmd.Run([]string{"-address", addr, "-token", "", "-output", out, "-duration", "1s", "-interval", "1s"}); code != exitDebugOutput ||
			!strings.Contains(ui.ErrorWriter.String(), "already exists") {
			t.Errorf("exit %d, want 2:\n%s", code, ui.ErrorWriter.String())
		}
	})
	t.Run("-server-id leader", func(t *testing.T) {
		code, stdout, stderr := runDebug(t, addr, "", "-server-id", "leader", "-duration", "1s", "-interval", "1s",
			"-output", t.TempDir(), "-node-id", a.Server().Store().Snapshot().Nodes()[0].ID[:8])
		if code != exitOK {
			t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
		}
		checkContains(t, "stdout", stdout, "Servers: (1/1) ["+strings.TrimPrefix(serverDir(t, a), "server/")+"]", "Clients: (1/2)")
	})
}

// Against the follower of a cluster of two: every server's log, agent
// self and profiles are captured through the follower (?server_id=), each
// in its own directory; -server-id=leader selects the leader alone, by
// its RPC address. -stale reads the state from the follower.
func TestOperatorDebug_Cluster(t *testing.T) {
	cfgs := servertest.ClusterConfigs(t, 2)
	servers := make([]*server.Server, len(cfgs))
	apis := make([]*httptest.Server, len(cfgs))
	for i, cfg := range cfgs {
		cfg.EnableDebug = true
		s := servertest.StartMember(t, cfg, nil)
		hub := logmon.NewHub()
		log := zerolog.New(hub).Level(zerolog.DebugLevel)
		logMarkers(t, log, "marker of "+cfg.NodeName)
		api := httpapi.New(s, log, nil)
		api.SetLogs(hub)
		s.SetForwardedHandler(api.Handler())
		apis[i] = httptest.NewServer(api.Handler())
		t.Cleanup(apis[i].Close)
		servers[i] = s
	}
	leader := servertest.WaitForClusterLeader(t, servers)
	fi := (slices.Index(servers, leader) + 1) % len(servers)
	name := func(s *server.Server) string { return s.Config().NodeName + "." + s.Config().Region }

	run := func(t *testing.T, args ...string) (dir, stdout string) {
		t.Helper()
		out := t.TempDir()
		code, stdout, stderr := runDebug(t, apis[fi].URL, "", append([]string{"-duration", "1s", "-interval", "1s",
			"-pprof-interval", "1s", "-output", out}, args...)...)
		if code != exitOK {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		dirs, _ := filepath.Glob(filepath.Join(out, "drover-debug-*"))
		if len(dirs) != 1 {
			t.Fatalf("output directories: %v", dirs)
		}
		return dirs[0], stdout
	}
	read := func(dir, rel string) []byte {
		b, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		return b
	}
	// checkServer fails unless the bundle holds s's own agent self, log
	// and profiles.
	checkServer := func(t *testing.T, dir string, s *server.Server) {
		t.Helper()
		n := name(s)
		var self httpapi.AgentSelf
		if err := json.Unmarshal(read(dir, "server/"+n+"/agent-self.json"), &self); err != nil || self.Member == nil || self.Member.Name != n {
			t.Errorf("server/%s/agent-self.json is not %s's: %+v, %v", n, n, self.Member, err)
		}
		for _, o := range servers {
			has := bytes.Contains(read(dir, "server/"+n+"/monitor.log"), []byte("marker of "+o.Config().NodeName))
			if has != (o == s) {
				t.Errorf("server/%s/monitor.log holds %s's log: %v", n, o.Config().NodeName, has)
			}
		}
		checkProfile(t, n+" heap", read(dir, "server/"+n+"/heap_0000.prof"))
		checkProfile(t, n+" profile", read(dir, "server/"+n+"/profile_0000.prof"))
	}

	t.Run("all", func(t *testing.T) {
		dir, stdout := run(t, "-stale")
		checkContains(t, "stdout", stdout, "Servers: (2/2)")
		if strings.Contains(stdout, "answers were errors") {
			t.Errorf("errors recorded:\n%s", stdout)
		}
		for _, s := range servers {
			checkServer(t, dir, s)
		}
		var flags debugFlags
		raw := read(dir, "cluster/cli-flags.json")
		if err := json.Unmarshal(raw, &flags); err != nil || !slices.Contains(flags.Set, "stale") {
			t.Errorf("cli-flags.json: %s", raw)
		}
	})
	t.Run("leader", func(t *testing.T) {
		dir, stdout := run(t, "-server-id", "leader")
		checkContains(t, "stdout", stdout, "Servers: (1/2) ["+name(leader)+"]")
		checkServer(t, dir, leader)
		if dirs, _ := filepath.Glob(filepath.Join(dir, "server", "*")); len(dirs) != 1 {
			t.Errorf("server directories: %v", dirs)
		}
	})
}

// cleanName keeps names safe as one path element.
func TestCleanName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"node1.global", "node1.global"},
		{"../etc", ".._etc"},
		{"..", "__"},
		{"a/b c", "a_b_c"},
		{"", "_"},
	} {
		if got := cleanName(tc.in); got != tc.want || path.Base(got) != got {
			t.Errorf("cleanName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// redactJSON blanks the secret fields at any depth and leaves other
// documents as they are.
func TestRedactJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b":1,"a":2}`, `{"b":1,"a":2}`},
		{`{"Node":{"SecretID":"s","ID":"i"}}`, `{"Node":{"ID":"i","SecretID":"<redacted>"}}`},
		{`[{"AuthMethod":{"Config":{"OIDCClientSecret":"x"}}},{"SecretID":""}]`, `[{"AuthMethod":{"Config":{"OIDCClientSecret":"<redacted>"}}},{"SecretID":""}]`},
		{`{"Job":{"VaultToken":"v","ConsulToken":"c","N":12345678901234567890}}`, `{"Job":{"ConsulToken":"<redacted>","N":12345678901234567890,"VaultToken":"<redacted>"}}`},
		{`not JSON "SecretID"`, `not JSON "SecretID"`},
	} {
		if got := string(redactJSON([]byte(tc.in))); got != tc.want {
			t.Errorf("redactJSON(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// -node-id prefixes, -node-class and -max-nodes select nodes in the
// list's order, each once; a prefix that matches no node is named.
func TestSelectNodes(t *testing.T) {
	nodes := []httpapi.NodeListStub{{ID: "aa1", NodeClass: "gpu"}, {ID: "aa2"}, {ID: "bb1", NodeClass: "gpu"}, {ID: "cc1"}}
	for _, tc := range []struct {
		name          string
		ids, class    string
		maxNodes      int
		want, missing []string
	}{
		{name: "all", ids: "all", want: []string{"aa1", "aa2", "bb1", "cc1"}},
		{name: "capped", ids: "all", maxNodes: 2, want: []string{"aa1", "aa2"}},
		{name: "class", ids: "all", class: "gpu", want: []string{"aa1", "bb1"}},
		{name: "prefixes, overlapping", ids: "aa, aa1,cc", want: []string{"aa1", "aa2", "cc1"}},
		{name: "a prefix of none", ids: "bb,zz", want: []string{"bb1"}, missing: []string{"zz"}},
		{name: "class and cap", ids: "aa,bb", class: "gpu", maxNodes: 1, want: []string{"aa1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, missing := selectNodes(nodes, tc.ids, tc.class, tc.maxNodes)
			if !slices.Equal(got, tc.want) || !slices.Equal(missing, tc.missing) {
				t.Errorf("selectNodes = %v, %v; want %v, %v", got, missing, tc.want, tc.missing)
			}
		})
	}
}

// -event-topic reads as Nomad's: none, all, Topic[:Key] filters.
func TestEventTopics(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "none"},
		{in: "all", want: []string{"*:*"}},
		{in: "job, Evaluation:web,*:api", want: []string{"Job:*", "Evaluation:web", "*:api"}},
		{in: "Job:a:b", err: true},
		{in: ":web", err: true},
		{in: " , ", err: true},
	} {
		got, err := eventTopics(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("eventTopics(%q) = %v, %v; want %v (error: %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// A bundle's files, directories and archive are its user's alone,
// whatever the umask: they hold the cluster's state, logs and
// profiles. An agent that answers only the leader is enough.
func TestOperatorDebug_FilesPrivate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/status/leader" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `"127.0.0.1:4647"`)
	}))
	t.Cleanup(srv.Close)
	checkPrivate := func(name string, mode fs.FileMode) {
		t.Helper()
		if mode.Perm()&0o077 != 0 {
			t.Errorf("%s: mode %s, want no access for group or others", name, mode)
		}
	}
	t.Run("output", func(t *testing.T) {
		out := t.TempDir()
		code, stdout, stderr := runDebug(t, srv.URL, "", "-duration", "1s", "-interval", "1s", "-output", out)
		if code != exitOK {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		dirs, err := filepath.Glob(filepath.Join(out, "drover-debug-*"))
		if err != nil || len(dirs) != 1 {
			t.Fatalf("output directories %v, %v", dirs, err)
		}
		n := 0
		err = filepath.WalkDir(dirs[0], func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			n++
			checkPrivate(p, info.Mode())
			return nil
		})
		if err != nil || n < 3 {
			t.Fatalf("walked %d files: %v", n, err)
		}
	})
	t.Run("archive", func(t *testing.T) {
		t.Chdir(t.TempDir())
		code, stdout, stderr := runDebug(t, srv.URL, "", "-duration", "1s", "-interval", "1s")
		m := archiveRE.FindStringSubmatch(stdout)
		if code != exitOK || m == nil {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		info, err := os.Stat(m[1])
		if err != nil {
			t.Fatal(err)
		}
		checkPrivate(m[1], info.Mode())
		f, err := os.Open(m[1])
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			checkPrivate(h.Name, h.FileInfo().Mode())
		}
	})
}
