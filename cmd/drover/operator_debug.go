package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/hashicorp/cli"
)

type operatorDebugCommand struct{ *meta }

func (c *operatorDebugCommand) Synopsis() string { return "Build a debug archive" }

func (c *operatorDebugCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator debug [options]

  Builds an archive of what it takes to debug a Drover cluster, as Nomad's
  operator debug does: the cluster's configuration, its servers and
  scheduler plugins, and its state (jobs, nodes, allocations, evaluations,
  deployments, metrics) every -interval for -duration; each server's log
  throughout, its configuration and pprof profiles, and, with
  -event-topic, the event stream.

  The files go to drover-debug-<time>.tar.gz in the current directory or,
  with -output, to the directory drover-debug-<time> under it. Ctrl-C
  stops the capture early: what was captured is still written.

  Each server selected is reached through the agent at -address (the
  agent endpoints' ?server_id=, as Nomad's). Drover's nodes have no API of
  their own: what the servers hold of each node selected is captured.

  The files, as in Nomad's archives: cluster/ (members, leader, peers,
  regions, namespaces, node pools, raft, scheduler and autopilot settings,
  scheduler plugins, nodes, the options given, eventstream.json);
  server/<name>/ (agent-self.json, monitor.log, each set of profiles as
  <profile>_NNNN.prof or .txt); client/<node ID>/ (the node and its
  allocations); interval/NNNN/ (jobs, nodes, allocations, evaluations,
  deployments, metrics, settings, each plugin); index.json and index.html
  list them. A list holds one JSON object a line.

  An endpoint that refuses or fails does not stop the capture: its error
  is recorded in the file its answer would have gone to. The token given,
  and every SecretID, OIDCClientSecret, VaultToken and ConsulToken, are
  left out of the files; variables are not captured. Review the archive
  before sharing it all the same.

  With ACLs, the token needs node:read, agent:read, operator:read,
  plugin:list, and list-jobs and read-job in the namespaces captured; the
  profiles need agent:write (without ACLs, the agent's enable_debug); the
  event topics need what the event stream asks (all of them: a management
  token).

  Exits 0 once the files are written (after Ctrl-C too), 1 for bad options,
  an agent that does not answer or a selection that matches nothing, 2
  when the output directory exists or the files cannot be written, as
  Nomad's.

General options:

  -address=ADDR    Address of the Drover agent (default: $DROVER_ADDR, or
                   http://127.0.0.1:4646).
  -namespace=NS    Namespace whose jobs, allocations, evaluations and
                   deployments are captured (default: $DROVER_NAMESPACE, or
                   "*": every namespace).` + tokenOptionHelp + tlsOptionsHelp + `

Debug options:

  -duration=D          How long to capture (default 2m).
  -interval=D          How often to capture the state (default 30s; at most
                       -duration).
  -server-id=IDS       The servers to capture: "all" (default), "leader",
                       or server names or their prefixes, comma separated.
  -node-id=IDS         The nodes to capture: "all" (default), or node ID
                       prefixes, comma separated.
  -node-class=CLASS    Only the nodes of this class.
  -max-nodes=N         At most N nodes (default 10; 0: no limit).
  -log-level=LEVEL     The log's level: trace, debug (default), info, warn
                       or error.
  -pprof-duration=D    How long the CPU profile and the execution trace run
                       (default 1s; at most -duration; whole seconds).
  -pprof-interval=D    The wait between sets of profiles during -duration
                       (default 250ms; at most -pprof-duration: equal to
                       it, one set).
  -event-topic=TOPICS  Capture the event stream: "all", or Topic:Key
                       filters, comma separated ("Job", a topic alone, is
                       "Job:*"; "*:web" is every event about job web);
                       default "none".
  -event-index=N       The index the event stream starts from (default 0:
                       all the agent still holds).
  -stale               Read the state from the server asked, rather than
                       from the leader (when the cluster has none).
  -output=DIR          Write the files to a directory under DIR, and no
                       archive.
  -verbose             Say more about what is captured.`)
}

// debugOptions are operator debug's options.
type debugOptions struct {
	duration, interval           time.Duration
	pprofDuration, pprofInterval time.Duration
	serverIDs, nodeIDs           string
	nodeClass                    string
	maxNodes                     int
	logLevel                     string
	// topics are the event stream's topic filters (Topic:Key), none
	// without an event capture.
	topics     []string
	eventIndex uint64
	stale      bool
	output     string
	verbose    bool
}

// debugLogLevels are the levels /v1/agent/monitor takes.
var debugLogLevels = []string{"trace", "debug", "info", "warn", "error"}

// check checks the options against each other and brings the profiles'
// times within the capture's, as Nomad's does.
func (o *debugOptions) check(eventTopic string, eventIndex int64) error {
	switch {
	case o.duration <= 0:
		return fmt.Errorf("-duration=%s: give a positive duration", o.duration)
	case o.interval <= 0:
		return fmt.Errorf("-interval=%s: give a positive duration", o.interval)
	case o.interval > o.duration:
		return fmt.Errorf("-interval=%s is longer than -duration=%s", o.interval, o.duration)
	case o.pprofDuration <= 0 || o.pprofInterval <= 0:
		return errors.New("-pprof-duration and -pprof-interval must be positive")
	case o.maxNodes < 0:
		return fmt.Errorf("-max-nodes=%d: give 0 (no limit) or more", o.maxNodes)
	case eventIndex < 0:
		return fmt.Errorf("-event-index=%d: give 0 or more", eventIndex)
	}
	o.logLevel = strings.ToLower(o.logLevel)
	if !slices.Contains(debugLogLevels, o.logLevel) {
		return fmt.Errorf("-log-level=%s: want one of %s", o.logLevel, strings.Join(debugLogLevels, ", "))
	}
	o.pprofDuration = min(o.pprofDuration, o.duration)
	o.pprofInterval = min(o.pprofInterval, o.pprofDuration)
	o.eventIndex = uint64(eventIndex)
	topics, err := eventTopics(eventTopic)
	o.topics = topics
	return err
}

// pprofSeconds is the profiles' ?seconds=: whole seconds, at least one.
func (o *debugOptions) pprofSeconds() int {
	return max(1, int(math.Ceil(o.pprofDuration.Seconds())))
}

// eventTopics reads -event-topic as Nomad's does: "none", "all" (every
// topic, every key), or Topic:Key filters, a topic alone meaning all its
// keys, its first letter made upper case (job is Job).
func eventTopics(s string) ([]string, error) {
	switch s {
	case "none":
		return nil, nil
	case "all":
		return []string{"*:*"}, nil
	}
	var topics []string
	for _, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		topic, key, found := strings.Cut(t, ":")
		if !found {
			key = "*"
		}
		if topic == "" || key == "" || strings.Contains(key, ":") {
			return nil, fmt.Errorf("-event-topic: %q is not Topic or Topic:Key", t)
		}
		topics = append(topics, strings.ToUpper(topic[:1])+topic[1:]+":"+key)
	}
	if len(topics) == 0 {
		return nil, fmt.Errorf("-event-topic=%q: give none, all, or Topic:Key filters", s)
	}
	return topics, nil
}

// commaList splits a comma separated list, without blanks.
func commaList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// debugRun is one capture.
type debugRun struct {
	o  debugOptions
	cl *client.Client
	ui cli.Ui
	b  *bundle
	// servers are the names of the servers selected (NAME.REGION, as
	// /v1/agent/members lists them): their ?server_id= and directories.
	servers []string
	// nodes are the IDs of the nodes selected; every node when allNodes.
	nodes    []string
	allNodes bool
	// plugins are the scheduler plugins' names, once read.
	plugins []string
}

func (c *operatorDebugCommand) Run(args []string) int {
	fs := c.flags("operator debug", false)
	var (
		o          debugOptions
		eventTopic string
		eventIndex int64
	)
	fs.DurationVar(&o.duration, "duration", 2*time.Minute, "")
	fs.DurationVar(&o.interval, "interval", 30*time.Second, "")
	fs.DurationVar(&o.pprofDuration, "pprof-duration", time.Second, "")
	fs.DurationVar(&o.pprofInterval, "pprof-interval", 250*time.Millisecond, "")
	fs.StringVar(&o.serverIDs, "server-id", "all", "")
	fs.StringVar(&o.nodeIDs, "node-id", "all", "")
	fs.StringVar(&o.nodeClass, "node-class", "", "")
	fs.IntVar(&o.maxNodes, "max-nodes", 10, "")
	fs.StringVar(&o.logLevel, "log-level", "debug", "")
	fs.StringVar(&eventTopic, "event-topic", "none", "")
	fs.Int64Var(&eventIndex, "event-index", 0, "")
	fs.BoolVar(&o.stale, "stale", false, "")
	fs.StringVar(&o.output, "output", "", "")
	fs.BoolVar(&o.verbose, "verbose", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	if err := o.check(eventTopic, eventIndex); err != nil {
		return c.errorf("%v", err)
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	if cl.Namespace == "" {
		cl.Namespace = "*"
	}
	ui := &cli.ConcurrentUi{Ui: c.ui}
	r := &debugRun{o: o, cl: cl, ui: ui}

	// Ctrl-C ends the capture; a second one, the command.
	interrupt, stop := signal.NotifyContext(bg, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer stop()
	go func() { <-interrupt.Done(); stop() }()

	found, err := r.find(interrupt)
	if err != nil {
		return c.errorf("%v", err)
	}

	stamped := "drover-debug-" + c.clock().UTC().Format("2006-01-02-150405Z")
	var dir string
	if o.output != "" {
		dir = filepath.Join(o.output, stamped)
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			ui.Error(fmt.Sprintf("Output directory %s already exists", dir))
			return exitDebugOutput
		}
		if err := os.MkdirAll(dir, bundleDirPerm); err != nil {
			ui.Error(fmt.Sprintf("Error creating the output directory: %v", err))
			return exitDebugOutput
		}
	} else {
		if dir, err = os.MkdirTemp("", stamped); err != nil {
			ui.Error(fmt.Sprintf("Error creating a temporary directory: %v", err))
			return exitDebugOutput
		}
		defer os.RemoveAll(dir)
	}
	r.b = &bundle{dir: dir, secrets: []string{cl.Token}}
	r.writeFound(found, fs)
	r.header(found)

	interrupted := r.capture(interrupt)
	if interrupted {
		ui.Warn("Interrupted: the capture stopped early; writing what was captured")
	}
	if err := r.b.writeIndex(stamped); err != nil {
		ui.Error(fmt.Sprintf("Error writing the index: %v", err))
		return exitDebugOutput
	}
	if n := r.b.errorCount(); n > 0 {
		ui.Output(fmt.Sprintf("%d answers were errors, recorded in their files", n))
	}
	if o.output != "" {
		ui.Output("Created debug directory: " + dir)
		return exitOK
	}
	archive := stamped + ".tar.gz"
	if err := r.b.archive(archive, stamped); err != nil {
		ui.Error(fmt.Sprintf("Error creating the archive: %v", err))
		return exitDebugOutput
	}
	ui.Output("Created debug archive: " + archive)
	return exitOK
}

// debugFound is what the capture starts from: the leader, the servers
// and the nodes, as the agent answered (or the errors it answered).
type debugFound struct {
	leader, members, nodes []byte
	membersErr, nodesErr   error
	region                 string
	// serverCount is how many servers there are ("?": unknown).
	serverCount  string
	nodeCount    int
	missingNodes []string // -node-id prefixes that match none
}

// find asks the agent for the leader, the servers and the nodes, and
// selects those -server-id, -node-id, -node-class and -max-nodes say. An
// agent that does not answer, or a selection that matches nothing, is an
// error; the list of servers or nodes refused is recorded, and the
// capture goes on.
func (r *debugRun) find(ctx context.Context) (*debugFound, error) {
	f := &debugFound{}
	// Every agent answers this itself, to any token: one that does not is
	// no agent to capture.
	var leader json.RawMessage
	meta, err := r.cl.Get(ctx, "/v1/status/leader", &leader)
	if err != nil {
		return nil, fmt.Errorf("asking the agent for the leader: %w", err)
	}
	f.leader = leader
	askedID := meta.Server
	var leaderAddr string
	_ = json.Unmarshal(leader, &leaderAddr)

	var members httpapi.ServerMembers
	f.members, f.membersErr = r.cl.GetRaw(ctx, "/v1/agent/members")
	if f.membersErr == nil {
		if err := json.Unmarshal(f.members, &members); err != nil {
			return nil, fmt.Errorf("reading the server members: %w", err)
		}
	}
	f.region = members.ServerRegion
	f.serverCount = strconv.Itoa(len(members.Members))
	if f.membersErr != nil {
		f.serverCount = "?"
		// With no member list, the agent asked is the one server known.
		r.ui.Warn(fmt.Sprintf("Could not list the servers (%v): capturing the agent asked only", f.membersErr))
		if askedID != "" {
			r.servers = []string{askedID}
		}
	} else {
		r.servers = selectServers(members.Members, r.o.serverIDs, leaderAddr)
		if len(r.servers) == 0 {
			return nil, fmt.Errorf("no server matches -server-id=%s", r.o.serverIDs)
		}
	}

	f.nodes, f.nodesErr = r.cl.GetRaw(ctx, r.stale("/v1/nodes"))
	var nodes []httpapi.NodeListStub
	if f.nodesErr == nil {
		if err := json.Unmarshal(f.nodes, &nodes); err != nil {
			return nil, fmt.Errorf("reading the node list: %w", err)
		}
	}
	f.nodeCount = len(nodes)
	r.nodes, f.missingNodes = selectNodes(nodes, r.o.nodeIDs, r.o.nodeClass, r.o.maxNodes)
	r.allNodes = r.o.nodeIDs == "all" && r.o.nodeClass == "" && r.o.maxNodes == 0
	for _, p := range f.missingNodes {
		r.ui.Error(fmt.Sprintf("No node with ID prefix %q", p))
	}
	if r.o.nodeIDs != "all" && len(r.nodes) == 0 {
		if f.nodesErr != nil {
			return nil, fmt.Errorf("listing the nodes: %w", f.nodesErr)
		}
		return nil, fmt.Errorf("no node matches -node-id=%s", r.o.nodeIDs)
	}
	return f, nil
}

// selectServers picks the servers -server-id names: all of them, the
// leader (the member at the leader's address), or those whose names
// start with one of the names given, in the members' order.
func selectServers(members []*httpapi.AgentMember, ids, leaderAddr string) []string {
	want := commaList(ids)
	var out []string
	for _, m := range members {
		addr := net.JoinHostPort(m.Addr, strconv.Itoa(int(m.Port)))
		if slices.ContainsFunc(want, func(w string) bool {
			switch w {
			case "all":
				return true
			case "leader":
				return leaderAddr != "" && addr == leaderAddr
			}
			return strings.HasPrefix(m.Name, w)
		}) {
			out = append(out, m.Name)
		}
	}
	return out
}

// selectNodes picks the nodes -node-id, -node-class and -max-nodes say,
// in the list's order, and returns the prefixes that matched no node.
func selectNodes(nodes []httpapi.NodeListStub, ids, class string, maxNodes int) (selected, missing []string) {
	prefixes := commaList(ids)
	if slices.Contains(prefixes, "all") {
		prefixes = []string{""}
	}
	for _, p := range prefixes {
		matched := false
		for _, n := range nodes {
			if !strings.HasPrefix(n.ID, p) {
				continue
			}
			matched = true
			if (class != "" && n.NodeClass != class) || slices.Contains(selected, n.ID) ||
				(maxNodes > 0 && len(selected) >= maxNodes) {
				continue
			}
			selected = append(selected, n.ID)
		}
		if !matched && p != "" {
			missing = append(missing, p)
		}
	}
	return selected, missing
}

// stale adds ?stale to a read of the state with -stale.
func (r *debugRun) stale(p string) string {
	if !r.o.stale {
		return p
	}
	return withQuery(p, "stale=true")
}

// withQuery adds q to p's query.
func withQuery(p, q string) string {
	if strings.Contains(p, "?") {
		return p + "&" + q
	}
	return p + "?" + q
}

// debugFlags is cli-flags.json: the options the command ran with.
type debugFlags struct {
	Name string
	// Flags are every option's value (the token's redacted).
	Flags map[string]string
	// Set are the options given.
	Set  []string
	Args []string
}

// writeFound writes what find read, and the options.
func (r *debugRun) writeFound(f *debugFound, fs *flag.FlagSet) {
	r.report(r.b.answer("cluster/leader.json", f.leader, nil, false))
	r.report(r.b.answer("cluster/members.json", f.members, f.membersErr, false))
	r.report(r.b.answer("cluster/nodes.json", f.nodes, f.nodesErr, false))
	flags := debugFlags{Name: fs.Name(), Flags: map[string]string{}, Args: fs.Args()}
	fs.VisitAll(func(fl *flag.Flag) {
		v := fl.Value.String()
		if fl.Name == "token" && v != "" {
			v = redacted
		}
		flags.Flags[fl.Name] = v
	})
	fs.Visit(func(fl *flag.Flag) { flags.Set = append(flags.Set, fl.Name) })
	r.report(r.b.writeJSON("cluster/cli-flags.json", flags))
}

// header prints what is captured, as Nomad's does.
func (r *debugRun) header(f *debugFound) {
	o := r.o
	lines := []string{
		"Starting debugger...",
		"",
		"Drover CLI Version: " + version,
		"            Region: " + f.region,
		"         Namespace: " + r.cl.Namespace,
		fmt.Sprintf("           Servers: (%d/%s) %v", len(r.servers), f.serverCount, r.servers),
		fmt.Sprintf("           Clients: (%d/%d) %v", len(r.nodes), f.nodeCount, r.nodes),
	}
	if o.maxNodes > 0 && len(r.nodes) == o.maxNodes {
		lines = append(lines, fmt.Sprintf("                    Max node count reached (%d)", o.maxNodes))
	}
	if n := len(f.missingNodes); n > 0 {
		lines = append(lines, fmt.Sprintf(" Client fail count: %d", n))
	}
	if o.nodeClass != "" {
		lines = append(lines, "        Node Class: "+o.nodeClass)
	}
	lines = append(lines,
		"          Interval: "+o.interval.String(),
		"          Duration: "+o.duration.String(),
		"    pprof Interval: "+o.pprofInterval.String())
	if o.pprofDuration != time.Second {
		lines = append(lines, "    pprof Duration: "+o.pprofDuration.String())
	}
	if o.topics != nil {
		lines = append(lines, fmt.Sprintf("      Event topics: %v", o.topics))
	}
	for _, l := range lines {
		r.ui.Output(l)
	}
	r.ui.Output("")
	r.ui.Output("Capturing cluster data...")
}

// capture captures for the duration, or until interrupt is done, and
// reports whether it was. The log, the event stream and the profiles run
// beside the state's captures; a capture of the state or a set of
// profiles once started is finished, unless interrupted.
func (r *debugRun) capture(interrupt context.Context) bool {
	start := time.Now()
	deadline := start.Add(r.o.duration)
	ctx, cancel := context.WithDeadline(interrupt, deadline)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range r.servers {
		wg.Go(func() { r.monitor(ctx, s) })
	}
	if len(r.servers) > 0 {
		wg.Go(func() { r.profiles(ctx, interrupt) })
	}
	if r.o.topics != nil {
		wg.Go(func() { r.events(ctx) })
	}
	r.cluster(interrupt)
	for k := 0; ; k++ {
		at := start.Add(time.Duration(k) * r.o.interval)
		if k > 0 && !at.Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(at)):
		}
		if ctx.Err() != nil {
			break
		}
		name := fmt.Sprintf("%04d", k)
		r.ui.Output("    Capture interval " + name)
		r.interval(interrupt, "interval/"+name)
	}
	<-ctx.Done()
	wg.Wait()
	return interrupt.Err() != nil
}

// report prints an error writing the bundle.
func (r *debugRun) report(err error) {
	if err != nil {
		r.ui.Error(err.Error())
	}
}

// save writes what GET p answers to rel (see bundle.answer).
func (r *debugRun) save(ctx context.Context, rel, p string, list bool) {
	raw, err := r.cl.GetRaw(ctx, p)
	if err != nil && r.o.verbose {
		r.ui.Output(fmt.Sprintf("    %s: %v", rel, err))
	}
	r.report(r.b.answer(rel, raw, err, list))
}

// cluster captures the cluster's configuration, the servers and the
// nodes selected, once.
func (r *debugRun) cluster(ctx context.Context) {
	for _, e := range []struct{ file, path string }{
		{"peers.json", "/v1/status/peers"},
		{"regions.json", "/v1/regions"},
		{"namespaces.json", r.stale("/v1/namespaces")},
		{"node-pools.json", r.stale("/v1/node/pools")},
		{"operator-raft.json", r.stale("/v1/operator/raft/configuration")},
		{"operator-scheduler.json", r.stale("/v1/operator/scheduler/configuration")},
		{"operator-autopilot-configuration.json", r.stale("/v1/operator/autopilot/configuration")},
		// Only the leader's autopilot knows the servers' health: never
		// stale.
		{"operator-autopilot-health.json", "/v1/operator/autopilot/health"},
		{"plugins-refused.json", "/v1/plugins/refused"},
	} {
		r.save(ctx, "cluster/"+e.file, e.path, false)
	}
	raw, err := r.cl.GetRaw(ctx, "/v1/plugins/schedulers")
	r.report(r.b.answer("cluster/plugins-schedulers.json", raw, err, false))
	var plugins []struct{ Name string }
	if err == nil && json.Unmarshal(raw, &plugins) == nil {
		for _, p := range plugins {
			r.plugins = append(r.plugins, p.Name)
		}
	}

	r.save(ctx, "cluster/agent-self.json", "/v1/agent/self", false)
	for _, s := range r.servers {
		r.save(ctx, serverPath(s, "agent-self.json"), atServer("/v1/agent/self", s), false)
	}
	for _, id := range r.nodes {
		dir := "client/" + cleanName(id)
		r.save(ctx, dir+"/node.json", r.stale("/v1/node/"+url.PathEscape(id)), false)
		r.save(ctx, dir+"/allocations.json", r.stale("/v1/node/"+url.PathEscape(id)+"/allocations"), true)
	}
}

// serverPath is the path of a server's file in the bundle.
func serverPath(server, file string) string { return "server/" + cleanName(server) + "/" + file }

// atServer is an agent endpoint's path for server, which the agent asked
// forwards the request to.
func atServer(p, server string) string { return withQuery(p, "server_id="+url.QueryEscape(server)) }

// interval captures the state into dir.
func (r *debugRun) interval(ctx context.Context, dir string) {
	for _, e := range []struct {
		file, path string
		list       bool
	}{
		{"jobs.json", r.stale("/v1/jobs"), true},
		{"allocations.json", r.stale("/v1/allocations"), true},
		{"evaluations.json", r.stale("/v1/evaluations"), true},
		{"deployments.json", r.stale("/v1/deployments"), true},
		{"metrics.json", "/v1/metrics", false},
		{"operator-scheduler.json", r.stale("/v1/operator/scheduler/configuration"), false},
		{"operator-raft.json", r.stale("/v1/operator/raft/configuration"), false},
		{"operator-autopilot-health.json", "/v1/operator/autopilot/health", false}, // never stale: see cluster
	} {
		r.save(ctx, dir+"/"+e.file, e.path, e.list)
	}
	raw, err := r.cl.GetRaw(ctx, r.stale("/v1/nodes"))
	if err == nil {
		raw = r.selectedNodes(raw)
	}
	r.report(r.b.answer(dir+"/nodes.json", raw, err, true))
	for _, p := range r.plugins {
		r.save(ctx, dir+"/plugin-scheduler-"+cleanName(p)+".json", "/v1/plugin/scheduler/"+url.PathEscape(p), false)
	}
}

// selectedNodes keeps the nodes selected of a node list.
func (r *debugRun) selectedNodes(raw []byte) []byte {
	if r.allNodes {
		return raw
	}
	var nodes []json.RawMessage
	if err := json.Unmarshal(raw, &nodes); err != nil {
		return raw
	}
	kept := []json.RawMessage{}
	for _, n := range nodes {
		var id struct{ ID string }
		if json.Unmarshal(n, &id) == nil && slices.Contains(r.nodes, id.ID) {
			kept = append(kept, n)
		}
	}
	out, err := json.Marshal(kept)
	if err != nil {
		return raw
	}
	return out
}

// streamRetry is how long a stream that broke off waits to start again.
const streamRetry = time.Second

// monitor captures a server's log into its monitor.log until ctx is done.
// A refusal is written in the log and ends it, as in Nomad's bundles; a
// stream that breaks off (the server restarted, the client's time limit)
// starts again.
func (r *debugRun) monitor(ctx context.Context, server string) {
	w, err := r.b.create(serverPath(server, "monitor.log"))
	if err != nil {
		r.ui.Error(err.Error())
		return
	}
	defer w.Close()
	p := "/v1/agent/monitor?" + url.Values{"log_level": {r.o.logLevel}, "server_id": {server}}.Encode()
	for {
		err := r.follow(ctx, p, func(dec *json.Decoder) error {
			var f httpapi.StreamFrame
			if err := dec.Decode(&f); err != nil {
				return err
			}
			if len(f.Data) > 0 {
				_, err := w.Write(f.Data)
				return err
			}
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		var apiErr *client.APIError
		if errors.As(err, &apiErr) {
			_, _ = w.Write(errorLine("monitor", err))
			return
		}
		_, _ = w.Write(errorLine("monitor (starting again)", err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(streamRetry):
		}
	}
}

// follow reads the stream GET p answers with next until it fails or ctx
// is done; it returns the error that ended it.
func (r *debugRun) follow(ctx context.Context, p string, next func(*json.Decoder) error) error {
	body, err := r.cl.Stream(ctx, http.MethodGet, p, nil)
	if err != nil {
		return err
	}
	defer body.Close()
	dec := json.NewDecoder(body)
	for {
		if err := next(dec); err != nil {
			return err
		}
	}
}

// eventFrame is a frame of the event stream: events at an index, a
// heartbeat (nothing), or the error that ends the stream.
type eventFrame struct {
	Index  uint64
	Events []json.RawMessage
	Error  json.RawMessage
}

// events captures the event stream into cluster/eventstream.json, one
// event a line, as Nomad's bundles, until ctx is done. A refusal (or the
// stream's own error) is written in the file and ends it; a stream that
// breaks off starts again after the last index seen.
func (r *debugRun) events(ctx context.Context) {
	w, err := r.b.create("cluster/eventstream.json")
	if err != nil {
		r.ui.Error(err.Error())
		return
	}
	defer w.Close()
	r.verbose("Capturing the event stream...")
	index := r.o.eventIndex
	var frames, heartbeats, count int
	fail := func(err error) {
		r.ui.Error(fmt.Sprintf("Error capturing the event stream: %v", err))
		raw, _ := json.Marshal(errorFile{Error: err.Error()})
		_, _ = w.Write(append(raw, '\n'))
	}
	for ctx.Err() == nil {
		q := url.Values{"topic": r.o.topics}
		q.Set("index", strconv.FormatUint(index, 10))
		err := r.follow(ctx, "/v1/event/stream?"+q.Encode(), func(dec *json.Decoder) error {
			var f eventFrame
			if err := dec.Decode(&f); err != nil {
				return err
			}
			frames++
			if len(f.Error) > 0 {
				return fmt.Errorf("%w: %s", errStreamEnded, f.Error)
			}
			if len(f.Events) == 0 {
				heartbeats++
				return nil
			}
			index = f.Index + 1
			for _, e := range f.Events {
				count++
				if r.o.verbose {
					var ev struct {
						Index      uint64
						Topic      string
						Type       string
						FilterKeys []string
					}
					_ = json.Unmarshal(e, &ev)
					r.ui.Output(fmt.Sprintf("Event: %4d, Index: %d, Topic: %-10s, Type: %s, FilterKeys: %s", count, ev.Index, ev.Topic, ev.Type, ev.FilterKeys))
				}
				var line []byte
				line = append(line, redactJSON(e)...)
				if _, err := w.Write(append(line, '\n')); err != nil {
					return err
				}
			}
			return nil
		})
		if ctx.Err() != nil {
			break
		}
		if !isBreak(err) {
			fail(err)
			break
		}
		r.verbose(fmt.Sprintf("The event stream broke off (%v): starting again at index %d", err, index))
		select {
		case <-ctx.Done():
		case <-time.After(streamRetry):
		}
	}
	r.verbose(fmt.Sprintf("Event stream captured %d events, %d frames, %d heartbeats", count, frames, heartbeats))
}

// errStreamEnded is the event stream's own error ({"Error": ...}), which
// ends it.
var errStreamEnded = errors.New("the agent ended the event stream")

// isBreak reports whether err broke a stream off, rather than the agent
// refusing it or ending it with an error of its own.
func isBreak(err error) bool {
	var apiErr *client.APIError
	return !errors.As(err, &apiErr) && !errors.Is(err, errStreamEnded)
}

func (r *debugRun) verbose(msg string) {
	if r.o.verbose {
		r.ui.Output(msg)
	}
}

// debugProfile is a profile taken from /v1/agent/pprof.
type debugProfile struct {
	file  string // the file's name, before _NNNN
	query string // the path under /v1/agent/pprof/
	text  bool   // text (goroutine stacks), not a gzipped profile
	timed bool   // runs for -pprof-duration (?seconds=)
}

// debugProfiles are the profiles of a set, in the order they are taken,
// the CPU profile first as Nomad's: all need the same permission, so its
// refusal ends the profiling.
var debugProfiles = []debugProfile{
	{file: "profile", query: "profile", timed: true},
	{file: "trace", query: "trace", timed: true},
	{file: "goroutine-debug1", query: "goroutine?debug=1", text: true},
	{file: "goroutine-debug2", query: "goroutine?debug=2", text: true},
	{file: "goroutine", query: "goroutine"},
	{file: "heap", query: "heap"},
	{file: "allocs", query: "allocs"},
	{file: "threadcreate", query: "threadcreate"},
	{file: "block", query: "block"},
	{file: "mutex", query: "mutex"},
}

// profiles takes a set of profiles of each server, one server after the
// other as Nomad's, every -pprof-interval while ctx lasts (once, when the
// interval is -pprof-duration); a set started is finished unless
// interrupt is done. A server that refuses is not asked again.
func (r *debugRun) profiles(ctx, interrupt context.Context) {
	servers := slices.Clone(r.servers)
	for k := 0; ; k++ {
		r.ui.Output(fmt.Sprintf("    Capture pprofInterval %04d", k))
		servers = slices.DeleteFunc(servers, func(s string) bool { return !r.profileSet(interrupt, s, k) })
		if len(servers) == 0 || interrupt.Err() != nil || r.o.pprofInterval >= r.o.pprofDuration {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.o.pprofInterval):
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// profileSet takes set k of a server's profiles into its directory,
// recording each failure in <file>_NNNN.error.json; it reports whether
// the next set may be taken (not after a refusal, an endpoint the agent
// does not have, or an interruption).
func (r *debugRun) profileSet(ctx context.Context, server string, k int) bool {
	for _, p := range debugProfiles {
		q := atServer("/v1/agent/pprof/"+p.query, server)
		if p.timed {
			q = withQuery(q, "seconds="+strconv.Itoa(r.o.pprofSeconds()))
		}
		ext := ".prof"
		if p.text {
			ext = ".txt"
		}
		name := fmt.Sprintf("%s_%04d", p.file, k)
		data, err := r.cl.GetRaw(ctx, q)
		if err == nil {
			if p.text {
				r.report(r.b.write(serverPath(server, name+ext), data))
			} else {
				r.report(r.b.writeBinary(serverPath(server, name+ext), data))
			}
			continue
		}
		r.report(r.b.writeError(serverPath(server, name+".error.json"), err))
		if ctx.Err() != nil {
			return false
		}
		r.ui.Error(fmt.Sprintf("server %s: failed to retrieve pprof %s: %v", server, name+ext, err))
		var apiErr *client.APIError
		if errors.As(err, &apiErr) && (apiErr.Status == http.StatusForbidden || apiErr.Status == http.StatusNotFound) {
			if apiErr.Status == http.StatusForbidden {
				r.ui.Warn("Profiles need a token with agent:write, or, without ACLs, the agent's enable_debug = true")
			}
			return false
		}
	}
	return true
}
