package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/hashicorp/raft"
)

// A server with an RPC address (Config.RPCAddr) can be one of several: raft
// replicates the state to every server over the network, one of them leads
// (runs the broker, the workers, the plan applier and the timers), and the
// others forward what they cannot answer to it. The servers find each other
// through Config.RetryJoin; a new cluster forms once BootstrapExpect
// servers know each other, and a server that finds an existing cluster
// asks its leader to add it.

// ErrNoLeader is returned when a request needs the cluster's leader and
// there is none (an election is under way, or the cluster has not formed).
var ErrNoLeader = errors.New("server: no cluster leader")

// Joins the leader refuses: under the name of a member that still runs
// elsewhere, or from a server of another cluster.
var (
	errDuplicateServer = errors.New("a server of that name is in the cluster")
	errOtherCluster    = errors.New("a server of another cluster")
)

// Paths of the cluster's internal endpoints, served on the RPC address
// only.
const (
	clusterInfoPath = "/internal/cluster/info"
	clusterJoinPath = "/internal/cluster/join"
)

// ForwardedHeader names the server that forwarded a request, for whoever
// inspects it; nothing trusts it: what marks a forwarded request is the
// address it came in on (Forwarded).
const ForwardedHeader = "X-Drover-Forwarded-By"

// PeerInfo is what a server says about itself to the others.
type PeerInfo struct {
	ID      string
	Address string
	Region  string
	// Servers is how many servers its raft configuration holds: 0 until
	// it is part of a cluster; Members are their IDs.
	Servers int
	Members []string `json:",omitempty"`
	// Leader is the RPC address of the leader it follows ("" if none).
	Leader          string
	BootstrapExpect int
	// ClusterID is the cluster it belongs to ("" until it knows one).
	ClusterID string `json:",omitempty"`
	// Applies is the newest log entry type it applies (fsm's
	// LastMessageType); servers of versions that do not say apply up to
	// fsm.ClusterMetaRequestType (gate.go).
	Applies fsm.MessageType `json:",omitempty"`
	// Version is the Drover version it runs; LastIndex and LastTerm are
	// its raft log's last entry, LastContact how long ago it last heard
	// from the leader (0 on the leader): what the leader's autopilot
	// watches.
	Version     string        `json:",omitempty"`
	LastIndex   uint64        `json:",omitempty"`
	LastTerm    uint64        `json:",omitempty"`
	LastContact time.Duration `json:",omitempty"`
}

// JoinRequest asks the leader to add a server (as a non-voter, which its
// autopilot promotes).
type JoinRequest struct {
	ID      string
	Address string
	Region  string
}

// Clustered reports whether the server talks to other servers over the
// network (it has an RPC address).
func (s *Server) Clustered() bool { return s.rpc != nil }

// RPCAddr is the server's advertised RPC address ("" without one).
func (s *Server) RPCAddr() string {
	if s.rpc == nil {
		return ""
	}
	return s.rpc.advertise.String()
}

// LastContact is how long ago this server last heard from the leader: 0 on
// the leader (or a server alone).
func (s *Server) LastContact() time.Duration {
	if s.IsLeader() {
		return 0
	}
	// Never heard from one: time.Since saturates, as "very long ago".
	return time.Since(s.raftLayer.raft.LastContact())
}

// viaRPCKey marks the requests that came in on the RPC address: another
// server forwarded them.
type viaRPCKey struct{}

// Forwarded reports whether r was forwarded by another server (it came in
// on this server's RPC address, which only servers use).
func Forwarded(r *http.Request) bool {
	v, _ := r.Context().Value(viaRPCKey{}).(bool)
	return v
}

// SetForwardedHandler sets what answers the API requests other servers
// forward to this one over its RPC address (the agent's HTTP API).
func (s *Server) SetForwardedHandler(h http.Handler) { s.forwarded.Store(&h) }

// DialLeader opens a connection to the leader's RPC address that speaks
// HTTP/1.1 (the requests sent on it reach the leader's API). addr is the
// leader's address, as Leader returns it.
func (s *Server) DialLeader(ctx context.Context, addr string) (net.Conn, error) {
	if s.rpc == nil || addr == "" {
		return nil, ErrNoLeader
	}
	return s.rpcClient().dial(ctx, addr, rpcHTTP)
}

// startRPC serves the cluster's internal endpoints and forwarded requests
// on the mux's HTTP side.
func (s *Server) startRPC() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+clusterInfoPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.peerInfo())
	})
	mux.HandleFunc("PUT "+clusterJoinPath, s.serveJoin)
	mux.HandleFunc("POST "+evalPathPrefix, s.serveEval)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if h := s.forwarded.Load(); h != nil {
			(*h).ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viaRPCKey{}, true)))
			return
		}
		http.Error(w, "no API on this server", http.StatusServiceUnavailable)
	})
	s.rpcHTTP = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.rpcHTTP.Serve(s.rpc.http) }()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) peerInfo() PeerInfo {
	info := PeerInfo{ID: s.cfg.NodeName, Address: s.RPCAddr(), Region: s.cfg.Region,
		Leader: s.Leader(), BootstrapExpect: s.cfg.BootstrapExpect, ClusterID: s.ClusterID(),
		Applies: fsm.MessageType(s.applies.Load()), Version: Version}
	info.LastIndex, info.LastTerm, info.LastContact = s.raftStats()
	if f := s.raftLayer.raft.GetConfiguration(); f.Error() == nil {
		info.Servers = len(f.Configuration().Servers)
		for _, sv := range f.Configuration().Servers {
			info.Members = append(info.Members, string(sv.ID))
		}
	}
	return info
}

// serveJoin adds the server a JoinRequest names as a voter; only the
// leader can.
func (s *Server) serveJoin(w http.ResponseWriter, r *http.Request) {
	var req JoinRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil || req.ID == "" || req.Address == "" {
		http.Error(w, "join: a server ID and address are required", http.StatusBadRequest)
		return
	}
	if req.Region != s.cfg.Region {
		http.Error(w, fmt.Sprintf("join: server %s is in region %q, this cluster in %q", req.ID, req.Region, s.cfg.Region),
			http.StatusBadRequest)
		return
	}
	if !s.IsLeader() {
		http.Error(w, "join: not the leader; the leader is at "+s.Leader(), http.StatusConflict)
		return
	}
	if err := s.addVoter(r.Context(), req); err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, errDuplicateServer) || errors.Is(err, errOtherCluster) {
			code = http.StatusConflict
			s.log.Warn().Str("server", req.ID).Str("address", req.Address).Err(err).Msg("refused a server's join")
		}
		http.Error(w, "join: "+err.Error(), code)
		return
	}
	s.log.Info().Str("server", req.ID).Str("address", req.Address).Msg("server joined the cluster")
	w.WriteHeader(http.StatusOK)
}

// addVoter adds the server req names to the raft configuration: a new one
// as a non-voter, which the leader's autopilot promotes to a voter once it
// has caught up and stayed healthy for server_stabilization_time (as
// Nomad's servers join), so that a server still copying the state does
// not count against the quorum. It first checks that the server answers at
// the address it gave; a server already there under another name (a
// replacement) is removed first; one already present as given is left; a
// voter restarted at another address stays a voter there.
func (s *Server) addVoter(ctx context.Context, req JoinRequest) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tr := s.rpcTransport()
	defer tr.CloseIdleConnections()
	info, err := fetchPeerInfo(ctx, &http.Client{Transport: tr}, req.Address)
	if err != nil {
		return fmt.Errorf("server %s does not answer at its address: %w", req.ID, err)
	}
	if info.ID != req.ID {
		return fmt.Errorf("the server at %s is %s, not %s", req.Address, info.ID, req.ID)
	}
	if mine := s.ClusterID(); !sameCluster(mine, info.ClusterID) {
		return fmt.Errorf("%w: server %s belongs to cluster %s, this is cluster %s (its data dir is another cluster's)",
			errOtherCluster, req.ID, info.ClusterID, mine)
	}
	f := s.raftLayer.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	voter := false
	for _, sv := range f.Configuration().Servers {
		switch {
		case string(sv.ID) == req.ID && string(sv.Address) == req.Address:
			return nil
		case string(sv.ID) == req.ID:
			voter = sv.Suffrage == raft.Voter
			// A member restarted at another address, or a second server
			// under a member's name: the member must not answer at its
			// address any more. Taking its place would cut it off while
			// it runs.
			if old, err := fetchPeerInfo(ctx, &http.Client{Transport: tr}, string(sv.Address)); err == nil && old.ID == req.ID {
				return fmt.Errorf("%w: %s already runs at %s; server names must be unique (or stop it before it moves)",
					errDuplicateServer, req.ID, sv.Address)
			}
		case string(sv.ID) != req.ID && string(sv.Address) == req.Address:
			if err := s.raftLayer.raft.RemoveServer(sv.ID, 0, s.cfg.RaftApplyTimeout).Error(); err != nil {
				return fmt.Errorf("remove %s, replaced by %s at %s: %w", sv.ID, req.ID, req.Address, err)
			}
			s.log.Info().Str("server", string(sv.ID)).Str("by", req.ID).Msg("server replaced")
		}
	}
	// AddVoter and AddNonvoter also update the address of a server
	// already in the configuration (one restarted at another address).
	id, addr := raft.ServerID(req.ID), raft.ServerAddress(req.Address)
	if voter {
		return s.raftLayer.raft.AddVoter(id, addr, 0, s.cfg.RaftApplyTimeout).Error()
	}
	return s.raftLayer.raft.AddNonvoter(id, addr, 0, s.cfg.RaftApplyTimeout).Error()
}

// rpcClient says how this server connects to the others: over TLS when
// its RPC port speaks it.
func (s *Server) rpcClient() rpcClient { return rpcClient{tls: s.cfg.TLS} }

// rpcTransport is an HTTP transport over connections to servers' RPC
// addresses.
func (s *Server) rpcTransport() *http.Transport {
	rc := s.rpcClient()
	return &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		return rc.dial(ctx, addr, rpcHTTP)
	}}
}

// RemovePeer removes a server from the raft configuration by ID or
// address (operator raft remove-peer); only the leader can.
func (s *Server) RemovePeer(id, address string) error {
	if !s.IsLeader() {
		return ErrNotLeader
	}
	f := s.raftLayer.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	for _, sv := range f.Configuration().Servers {
		if (id != "" && string(sv.ID) == id) || (id == "" && address != "" && string(sv.Address) == address) {
			err := s.raftLayer.raft.RemoveServer(sv.ID, 0, s.cfg.RaftApplyTimeout).Error()
			if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
				return fmt.Errorf("%w: %v", ErrNotLeader, err)
			}
			return err
		}
	}
	return fmt.Errorf("%w: no server %q in the raft configuration", ErrNotFound, id+address)
}

// transferLeadership hands the lead to another server before this one
// stops, so the cluster need not wait for an election timeout.
func (s *Server) transferLeadership() {
	if s.rpc == nil || !s.IsLeader() {
		return
	}
	f := s.raftLayer.raft.GetConfiguration()
	if f.Error() != nil || len(f.Configuration().Servers) < 2 {
		return
	}
	if err := s.raftLayer.raft.LeadershipTransfer().Error(); err != nil {
		s.log.Warn().Err(err).Msg("could not hand the lead over before stopping")
		return
	}
	ev := s.log.Info()
	if leader := s.Leader(); leader != "" {
		ev = ev.Str("leader", leader)
	}
	ev.Msg("handed the lead over before stopping")
}

// TransferLeadership hands the lead to the server with the given ID, or
// else at the given raft address (any other voter if both are empty); only
// the leader can.
func (s *Server) TransferLeadership(id, address string) error {
	if !s.IsLeader() {
		return ErrNotLeader
	}
	var f raft.Future
	if id == "" && address == "" {
		f = s.raftLayer.raft.LeadershipTransfer()
	} else {
		servers, _, err := s.RaftConfiguration()
		if err != nil {
			return err
		}
		i := slices.IndexFunc(servers, func(sv RaftServer) bool {
			return (id != "" && sv.ID == id) || (id == "" && sv.Address == address)
		})
		if i < 0 {
			return fmt.Errorf("%w: no server %q in the raft configuration", ErrNotFound, id+address)
		}
		if servers[i].ID == s.cfg.NodeName {
			return nil
		}
		f = s.raftLayer.raft.LeadershipTransferToServer(raft.ServerID(servers[i].ID), raft.ServerAddress(servers[i].Address))
	}
	if err := f.Error(); err != nil {
		return fmt.Errorf("server: leadership transfer: %w", err)
	}
	return nil
}

// inCluster reports whether this server is in its own raft configuration
// at its address (it bootstrapped, or a leader added it). A server
// restarted at another address is not, until the leader updates it.
func (s *Server) inCluster() bool {
	f := s.raftLayer.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, sv := range f.Configuration().Servers {
		if sv.ID == raft.ServerID(s.cfg.NodeName) {
			return string(sv.Address) == s.RPCAddr()
		}
	}
	return false
}

// Alone reports whether this server is the only one of its raft
// configuration: it leads as soon as raft starts.
func (s *Server) Alone() bool {
	f := s.raftLayer.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	servers := f.Configuration().Servers
	return len(servers) == 1 && servers[0].ID == raft.ServerID(s.cfg.NodeName)
}

// joinCluster runs until the server is part of a cluster: each round (at
// once, then every RetryInterval) it asks the RetryJoin servers who they
// are, asks the leader of an existing cluster to add it, or, when
// BootstrapExpect servers not yet in any cluster know each other,
// bootstraps them together. Every one of them bootstraps the same
// configuration (the servers sorted by ID), which raft allows.
func (s *Server) joinCluster(ctx context.Context) {
	defer s.done.Done()
	client := &http.Client{Timeout: 5 * time.Second, Transport: s.rpcTransport()}
	defer client.CloseIdleConnections()
	for {
		if s.inCluster() {
			// Its data dir holds the cluster's state from now on.
			if err := s.markDataDirInitialized(); err != nil {
				s.log.Error().Err(err).Msg("could not mark the data dir initialized")
			}
			s.watchMembership(ctx, client)
			return
		}
		if err := s.joinRound(ctx, client); err != nil {
			s.log.Warn().Err(err).Dur("retry_in", s.cfg.RetryInterval).Msg("not part of a cluster yet")
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.cfg.RetryInterval):
		}
	}
}

// watchMembership runs while the server is in a cluster: every
// Config.AutopilotFailedAfter, a server that does not lead asks the leader
// whether it is in the leader's configuration, and if it is not, to add it
// again. The cluster may have removed it while it was away (the leader's
// autopilot, or an operator): a server removed while down never hears of
// it, and would wait for a leader that no longer counts it.
func (s *Server) watchMembership(ctx context.Context, client *http.Client) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.cfg.AutopilotFailedAfter):
		}
		if s.IsLeader() {
			continue
		}
		leader, err := s.findLeader(ctx, client)
		switch {
		case err != nil:
			s.log.Warn().Err(err).Dur("last_contact", s.LastContact()).Msg("no cluster leader found")
		case !slices.Contains(leader.Members, s.cfg.NodeName):
			s.log.Warn().Str("leader", leader.Address).Msg("this server is not in the leader's raft configuration: asking to be added again")
			if err := s.askToJoin(ctx, client, leader.Address); err != nil {
				s.log.Warn().Err(err).Msg("could not rejoin the cluster")
			}
		}
	}
}

// findLeader asks the leader this server follows, else the one a RetryJoin
// server follows, who it is.
func (s *Server) findLeader(ctx context.Context, client *http.Client) (PeerInfo, error) {
	self := s.peerInfo()
	tried := map[string]bool{self.Address: true}
	ask := func(addr string) (PeerInfo, bool) {
		if addr == "" || tried[addr] {
			return PeerInfo{}, false
		}
		tried[addr] = true
		info, err := fetchPeerInfo(ctx, client, addr)
		if err != nil || !sameCluster(self.ClusterID, info.ClusterID) {
			return PeerInfo{}, false
		}
		return info, true
	}
	for _, addr := range append([]string{self.Leader}, s.cfg.RetryJoin...) {
		info, ok := ask(addr)
		if ok && info.Leader != "" && info.Leader != info.Address {
			info, ok = ask(info.Leader)
		}
		if ok && info.Leader != "" && info.Leader == info.Address {
			return info, nil
		}
	}
	return PeerInfo{}, errors.New("no server this one knows of knows a leader")
}

func (s *Server) joinRound(ctx context.Context, client *http.Client) error {
	self := s.peerInfo()
	known := []PeerInfo{self}
	var errs []error
	// clustered says that some server already belongs to a cluster: then
	// this one joins it (through its leader, once there is one) and never
	// bootstraps another, which would split the servers in two.
	clustered := false
	for _, addr := range s.cfg.RetryJoin {
		if addr == self.Address {
			continue
		}
		info, err := fetchPeerInfo(ctx, client, addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch {
		case info.ID == self.ID:
			if info.Address != self.Address {
				errs = append(errs, fmt.Errorf("server %s at %s has this server's name: server names must be unique", info.ID, addr))
			}
			continue
		case info.Region != self.Region:
			errs = append(errs, fmt.Errorf("server %s at %s is in region %q, not %q", info.ID, addr, info.Region, self.Region))
			continue
		case !sameCluster(self.ClusterID, info.ClusterID):
			errs = append(errs, fmt.Errorf("server %s at %s belongs to cluster %s, this server to %s: one of their data dirs is another cluster's",
				info.ID, addr, info.ClusterID, self.ClusterID))
			continue
		case info.Servers > 0:
			clustered = true
			if info.Leader != "" {
				return s.askToJoin(ctx, client, info.Leader)
			}
			errs = append(errs, fmt.Errorf("server %s at %s is in a cluster without a leader: waiting for one to join through", info.ID, addr))
			continue
		case info.BootstrapExpect != self.BootstrapExpect && self.BootstrapExpect > 0:
			errs = append(errs, fmt.Errorf("server %s at %s expects %d servers, this one %d: bootstrap_expect must be the same on every server",
				info.ID, addr, info.BootstrapExpect, self.BootstrapExpect))
			continue
		}
		if !slices.ContainsFunc(known, func(p PeerInfo) bool { return p.ID == info.ID }) {
			known = append(known, info)
		}
	}
	switch {
	case clustered:
		return errors.Join(errs...)
	case s.cfg.BootstrapExpect == 0:
		errs = append(errs, errors.New("no cluster found to join (this server bootstraps none: bootstrap_expect is not set)"))
		return errors.Join(errs...)
	case len(known) < s.cfg.BootstrapExpect:
		errs = append(errs, fmt.Errorf("%d of the %d servers expected know each other", len(known), s.cfg.BootstrapExpect))
		return errors.Join(errs...)
	case len(known) > s.cfg.BootstrapExpect:
		// Servers that each see a different subset would bootstrap
		// different clusters.
		errs = append(errs, fmt.Errorf("%d servers in no cluster found, more than the %d expected: set bootstrap_expect to the number of servers",
			len(known), s.cfg.BootstrapExpect))
		return errors.Join(errs...)
	}
	slices.SortFunc(known, func(a, b PeerInfo) int { return strings.Compare(a.ID, b.ID) })
	var cfg raft.Configuration
	for _, p := range known {
		cfg.Servers = append(cfg.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Address)})
	}
	if err := s.raftLayer.raft.BootstrapCluster(cfg).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("bootstrap: %w", err)
	}
	s.log.Info().Int("servers", len(cfg.Servers)).Msg("cluster bootstrapped")
	return nil
}

func fetchPeerInfo(ctx context.Context, client *http.Client, addr string) (PeerInfo, error) {
	var info PeerInfo
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+clusterInfoPath, nil)
	if err != nil {
		return info, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return info, fmt.Errorf("server at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return info, fmt.Errorf("server at %s: %s", addr, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&info); err != nil {
		return info, fmt.Errorf("server at %s: %w", addr, err)
	}
	return info, nil
}

func (s *Server) askToJoin(ctx context.Context, client *http.Client, leader string) error {
	body, _ := json.Marshal(JoinRequest{ID: s.cfg.NodeName, Address: s.RPCAddr(), Region: s.cfg.Region})
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+leader+clusterJoinPath, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("join through the leader at %s: %w", leader, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<12))
		return fmt.Errorf("join through the leader at %s: %s: %s", leader, resp.Status, strings.TrimSpace(string(msg)))
	}
	s.log.Info().Str("leader", leader).Msg("joined the cluster")
	return nil
}

// Member is a server of the raft configuration and whether it answered.
type Member struct {
	RaftServer
	Alive bool
	// Region is what the server reported ("" if it did not answer).
	Region string
}

// Members lists the servers of the raft configuration, asking each (but
// this one) who it is, at most timeout long.
func (s *Server) Members(ctx context.Context, timeout time.Duration) ([]Member, error) {
	servers, _, err := s.RaftConfiguration()
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(servers, func(sv RaftServer) bool { return sv.ID == s.cfg.NodeName }) {
		// Not in a cluster yet (or removed from it): still a member.
		servers = append([]RaftServer{{ID: s.cfg.NodeName, Node: s.cfg.NodeName, Address: s.RPCAddr(), RaftProtocol: "3"}}, servers...)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tr := s.rpcTransport()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	out := make([]Member, len(servers))
	var wg sync.WaitGroup
	for i, sv := range servers {
		out[i] = Member{RaftServer: sv}
		if sv.Address == s.RPCAddr() {
			out[i].Alive, out[i].Region = true, s.cfg.Region
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if info, err := fetchPeerInfo(ctx, client, sv.Address); err == nil && info.ID == sv.ID {
				out[i].Alive, out[i].Region = true, info.Region
			}
		}()
	}
	wg.Wait()
	return out, nil
}
