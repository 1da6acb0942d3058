package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// SchedulerConfigurationResponse answers GET
// /v1/operator/scheduler/configuration.
type SchedulerConfigurationResponse struct {
	SchedulerConfig *sdk.SchedulerConfiguration
	// Index, KnownLeader and LastContact are Nomad's query metadata, which
	// its answer carries in the body too ('nomad operator scheduler
	// get-config -json' prints them).
	Index       uint64
	KnownLeader bool
	LastContact time.Duration
}

// SchedulerSetConfigurationResponse answers a configuration change;
// Updated is false when a check-and-set index did not match.
type SchedulerSetConfigurationResponse struct {
	Updated bool
	Index   uint64
}

func (a *API) schedulerConfig(w http.ResponseWriter, r *http.Request) (any, error) {
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		c := snap.SchedulerConfig()
		return &SchedulerConfigurationResponse{SchedulerConfig: c, Index: c.ModifyIndex, KnownLeader: a.srv.Leader() != "",
			LastContact: a.srv.LastContact()}, c.ModifyIndex, nil
	})
}

func (a *API) schedulerSetConfig(w http.ResponseWriter, r *http.Request) (any, error) {
	var c sdk.SchedulerConfiguration
	if err := decode(w, r, &c); err != nil {
		return nil, err
	}
	// A cas given empty is refused, as by Nomad, rather than taken for no
	// check at all.
	if _, ok := r.URL.Query()["cas"]; ok {
		raw := r.URL.Query().Get("cas")
		cas, err := strconv.ParseUint(raw, 10, 64)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "invalid cas %q: not an unsigned integer", raw)
		}
		updated, index, err := a.srv.SetSchedulerConfigCAS(&c, cas)
		if err != nil {
			return nil, err
		}
		setIndex(w, index)
		return &SchedulerSetConfigurationResponse{Updated: updated, Index: index}, nil
	}
	index, err := a.srv.SetSchedulerConfig(&c)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &SchedulerSetConfigurationResponse{Updated: true, Index: index}, nil
}

// leader is the leader's address. Clustered servers give its RPC address,
// as Nomad's do, the same from every server. A server alone gives this
// agent's advertised API address while it leads (Nomad's CLI matches the
// leader against the members' addresses).
func (a *API) leader() string {
	if !a.srv.Clustered() && a.advertise != "" && a.srv.IsLeader() {
		return a.advertise
	}
	return a.srv.Leader()
}

func (a *API) statusLeader(http.ResponseWriter, *http.Request) (any, error) {
	return a.leader(), nil
}

// AgentHealthResponse answers GET /v1/agent/health in Nomad's shape: the
// health of the agent's client and server, each present when asked about.
type AgentHealthResponse struct {
	Client *AgentHealth `json:"client,omitempty"`
	Server *AgentHealth `json:"server,omitempty"`
}

// AgentHealth is one part of an agent's health; Message says why it is
// not Ok.
type AgentHealth struct {
	Ok      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
}

// agentHealth is Nomad's agent health check, what load balancers and
// service checks poll: a server is healthy while it knows a cluster
// leader. A Drover agent is a server only, so ?type=client (which Nomad's
// server-only agents answer so too) is unhealthy: "client not enabled".
// An unhealthy agent answers 500 with the same JSON, as Nomad's does.
func (a *API) agentHealth(_ http.ResponseWriter, r *http.Request) (any, error) {
	var health AgentHealthResponse
	checkServer := true
	if types, ok := r.URL.Query()["type"]; ok {
		// Only the types asked about, each unhealthy unless this agent
		// runs it.
		checkServer = false
		for _, t := range types {
			switch t {
			case "client":
				health.Client = &AgentHealth{Message: "client not enabled"}
			case "server":
				checkServer = true
			}
		}
	}
	if checkServer {
		health.Server = &AgentHealth{Ok: true, Message: "ok"}
		if a.srv.Leader() == "" {
			health.Server = &AgentHealth{Message: "no leader"}
		}
	}
	if (health.Client == nil || health.Client.Ok) && (health.Server == nil || health.Server.Ok) {
		return &health, nil
	}
	return written(func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(&health)
	}), nil
}

// statusPeers lists the raft peers' addresses.
func (a *API) statusPeers(http.ResponseWriter, *http.Request) (any, error) {
	peers := []string{}
	if !a.srv.Clustered() {
		if l := a.leader(); l != "" {
			peers = append(peers, l)
		}
		return peers, nil
	}
	servers, _, err := a.srv.RaftConfiguration()
	if err != nil {
		return nil, err
	}
	for _, sv := range servers {
		peers = append(peers, sv.Address)
	}
	return peers, nil
}

// SetAdvertise says at which address (host:port) the agent's API is
// reached: members and the leader's address report it.
func (a *API) SetAdvertise(addr string) { a.advertise = addr }

// ServerMembers answers /v1/agent/members, as Nomad's.
type ServerMembers struct {
	ServerName   string
	ServerRegion string
	ServerDC     string
	Members      []*AgentMember
}

// AgentMember is a server of the cluster, as Nomad's gossip reports it.
type AgentMember struct {
	Name                                  string
	Addr                                  string
	Port                                  uint16
	Tags                                  map[string]string
	Status                                string
	ProtocolMin, ProtocolMax, ProtocolCur uint8
	DelegateMin, DelegateMax, DelegateCur uint8
}

// memberProbeTimeout bounds how long /v1/agent/members waits for the
// other servers to answer.
const memberProbeTimeout = 2 * time.Second

// members answers GET /v1/agent/members: the cluster's servers, with the
// tags Nomad's `server members` shows. A server alone lists itself at its
// API address; clustered servers list the raft configuration at their RPC
// addresses, each "alive" if it answered just now and "failed" if not
// (Drover has no gossip: this is the liveness a member list can show).
// member is a server as a member of Nomad's gossip pool: id is its name,
// addr its RPC address (or, alone, its API address).
func (a *API) member(id, addr, status string) (*AgentMember, error) {
	c := a.srv.Config()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, errorf(http.StatusNotImplemented, "no address known for server %s", id)
	}
	p, _ := strconv.ParseUint(port, 10, 16)
	return &AgentMember{
		Name: id + "." + c.Region, Addr: host, Port: uint16(p), Status: status,
		Tags: map[string]string{"role": "nomad", "region": c.Region, "dc": c.Datacenter, "build": server.Version,
			"port": port, "raft_vsn": "3", "id": id, "expect": strconv.Itoa(max(c.BootstrapExpect, 1))},
		ProtocolMin: 1, ProtocolMax: 5, ProtocolCur: 2, DelegateMin: 2, DelegateMax: 5, DelegateCur: 4,
	}, nil
}

// localMember is this server as /v1/agent/members lists it.
func (a *API) localMember() (*AgentMember, error) {
	c := a.srv.Config()
	if a.srv.Clustered() {
		return a.member(c.NodeName, a.srv.RPCAddr(), "alive")
	}
	return a.member(c.NodeName, a.advertise, "alive")
}

func (a *API) members(_ http.ResponseWriter, r *http.Request) (any, error) {
	c := a.srv.Config()
	name := c.NodeName + "." + c.Region
	out := &ServerMembers{ServerName: name, ServerRegion: c.Region, ServerDC: c.Datacenter}
	if !a.srv.Clustered() {
		m, err := a.localMember()
		if err != nil {
			return nil, err
		}
		out.Members = []*AgentMember{m}
		return out, nil
	}
	servers, err := a.srv.Members(r.Context(), memberProbeTimeout)
	if err != nil {
		return nil, err
	}
	for _, sv := range servers {
		status := "failed"
		if sv.Alive {
			status = "alive"
		}
		m, err := a.member(sv.ID, sv.Address, status)
		if err != nil {
			return nil, err
		}
		out.Members = append(out.Members, m)
	}
	return out, nil
}

// raftTransferLeadership answers PUT /v1/operator/raft/transfer-leadership
// (?id=NAME or ?address=HOST:PORT, as later Nomad versions and their
// client's RaftTransferLeadershipByID and ByAddress; any other voter
// without either), on the leader.
func (a *API) raftTransferLeadership(_ http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	id, addr := q.Get("id"), q.Get("address")
	if id != "" && addr != "" {
		return nil, errorf(http.StatusBadRequest, "give one of id and address")
	}
	return nil, a.srv.TransferLeadership(id, addr)
}

// raftRemovePeer answers DELETE /v1/operator/raft/peer?id=|address=
// (Nomad's `operator raft remove-peer`), on the leader.
func (a *API) raftRemovePeer(_ http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	id, addr := q.Get("id"), q.Get("address")
	if (id == "") == (addr == "") {
		return nil, errorf(http.StatusBadRequest, "give one of id and address")
	}
	return nil, a.srv.RemovePeer(id, addr)
}

// RaftConfigurationResponse answers /v1/operator/raft/configuration.
type RaftConfigurationResponse struct {
	Servers []server.RaftServer
	Index   uint64
}

func (a *API) raftConfiguration(http.ResponseWriter, *http.Request) (any, error) {
	servers, index, err := a.srv.RaftConfiguration()
	if err != nil {
		return nil, err
	}
	return &RaftConfigurationResponse{Servers: servers, Index: index}, nil
}

func (a *API) regions(http.ResponseWriter, *http.Request) (any, error) {
	return []string{a.srv.Config().Region}, nil
}

func (a *API) deploymentList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := listParams(r)
	if err != nil {
		return nil, err
	}
	return a.list(w, r, func(snap *state.Snapshot) (*listed, uint64, error) {
		var ds []*sdk.Deployment
		for _, d := range snap.Deployments() {
			if namespaced(r, d.Namespace) && len(d.ID) >= len(o.prefix) && d.ID[:len(o.prefix)] == o.prefix {
				ds = append(ds, d)
			}
		}
		out, next, err := page(o, ds, func(d *sdk.Deployment) string { return d.ID }, nil)
		if out == nil {
			out = []*sdk.Deployment{}
		}
		return &listed{out, next}, snap.TableIndex(state.TableDeployments), err
	})
}

func (a *API) deploymentRead(w http.ResponseWriter, r *http.Request) (any, error) {
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		d := snap.Deployment(r.PathValue("id"))
		if d == nil {
			return nil, snap.TableIndex(state.TableDeployments), errorf(http.StatusNotFound, "deployment %q not found", r.PathValue("id"))
		}
		return d, d.ModifyIndex, nil
	})
}

// GCResponse answers a forced garbage collection with the core eval it
// created.
type GCResponse struct {
	EvalID string
	Index  uint64
}

// reconcileSummaries answers PUT /v1/system/reconcile/summaries, which
// makes Nomad's servers recount their stored job summaries. Drover keeps
// none: it counts a job's allocations when the summary is read, so there
// is nothing to reconcile and the call succeeds at once.
func (a *API) reconcileSummaries(w http.ResponseWriter, _ *http.Request) (any, error) {
	setIndex(w, a.srv.Store().LatestIndex())
	return struct{}{}, nil
}

func (a *API) systemGC(w http.ResponseWriter, _ *http.Request) (any, error) {
	evalID, index, err := a.srv.ForceGC()
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &GCResponse{EvalID: evalID, Index: index}, nil
}

// metrics answers GET /v1/metrics: the agent's metrics as Nomad's agent
// reports them (the in-memory sink's latest interval), or with
// ?format=prometheus in Prometheus's text format, when the agent's
// telemetry block enables it.
func (a *API) metrics(w http.ResponseWriter, r *http.Request) (any, error) {
	t := a.srv.Telemetry()
	if r.URL.Query().Get("format") == "prometheus" {
		h := t.Prometheus()
		if h == nil {
			return nil, errorf(http.StatusBadRequest, "Prometheus is not enabled: set prometheus_metrics = true in the agent's telemetry block")
		}
		return written(func(w http.ResponseWriter) { h.ServeHTTP(w, r) }), nil
	}
	return t.Summary(), nil
}

// snapshotSave answers GET /v1/operator/snapshot with an operator snapshot
// of the whole state (host/snapshot's archive). The archive is written to a
// file first, so that the answer carries its length and, as Nomad's does,
// its checksum in a Digest header (Nomad's client requires it), and so that
// a failure is an error status rather than a cut-off archive.
func (a *API) snapshotSave(w http.ResponseWriter, r *http.Request) (any, error) {
	snap, err := a.srv.SaveSnapshot()
	if err != nil {
		return nil, err
	}
	dir := ""
	if c := a.srv.Config(); !c.Dev {
		dir = c.DataDir
	}
	f, err := os.CreateTemp(dir, "snapshot-save-*.snap")
	if err != nil {
		_ = snap.Close()
		return nil, err
	}
	// The file goes once the answer is written (after this returns).
	remove := func() {
		_ = f.Close()
		_ = os.Remove(f.Name())
	}
	h := sha256.New()
	err = snap.Write(io.MultiWriter(f, h))
	var size int64
	if err == nil {
		if size, err = f.Seek(0, io.SeekCurrent); err == nil {
			_, err = f.Seek(0, io.SeekStart)
		}
	}
	if err != nil {
		remove()
		return nil, err
	}
	return written(func(w http.ResponseWriter) {
		defer remove()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		w.Header().Set("Digest", "sha-256="+base64.StdEncoding.EncodeToString(h.Sum(nil)))
		w.Header().Set("X-Nomad-Index", strconv.FormatUint(snap.Meta.Index, 10))
		if _, err := io.Copy(w, f); err != nil {
			a.log.Warn().Err(err).Msg("snapshot save: the client went away")
		}
	}), nil
}

// snapshotRestore replaces the state with the snapshot in the request body
// (PUT /v1/operator/snapshot).
func (a *API) snapshotRestore(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.srv.RestoreSnapshot(r.Body); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// AgentSelf is the body of GET /v1/agent/self, in the shape of Nomad's:
// the agent's configuration (Version as Nomad's version object), this
// server as a member, and statistics by subsystem.
type AgentSelf struct {
	Config map[string]any               `json:"config"`
	Member *AgentMember                 `json:"member"`
	Stats  map[string]map[string]string `json:"stats"`
}

// VersionInfo is Nomad's version object, as in /v1/agent/self's Config.
type VersionInfo struct {
	Revision          string
	Version           string
	VersionMetadata   string
	VersionPrerelease string
}

// Version is Drover's version as Nomad's version object: "0.1.0-dev" is
// Version "0.1.0", VersionPrerelease "dev".
func Version() VersionInfo {
	v, pre, _ := strings.Cut(server.Version, "-")
	return VersionInfo{Version: v, VersionPrerelease: pre}
}

func (a *API) agentSelf(http.ResponseWriter, *http.Request) (any, error) {
	out := &AgentSelf{}
	if a.self != nil {
		if s := a.self(); s != nil {
			*out = *s
		}
	}
	if out.Config == nil {
		out.Config = map[string]any{}
	}
	out.Config["Version"] = Version()
	// An agent alone with no known API address has no member to show.
	out.Member, _ = a.localMember()
	return out, nil
}
