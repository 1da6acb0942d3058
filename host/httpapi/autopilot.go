package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/hashicorp/nomad/api"
	autopilot "github.com/hashicorp/raft-autopilot"
)

// The autopilot's endpoints, Nomad's: its configuration (stored through
// raft; the agent's autopilot block until an operator writes one) and the
// servers' health as the leader's autopilot sees them.

func (a *API) registerAutopilot() {
	a.on(http.MethodGet, "/v1/operator/autopilot/configuration", opRead, a.autopilotConfig)
	a.write("/v1/operator/autopilot/configuration", opWrite, a.autopilotSetConfig)
	a.on(http.MethodGet, "/v1/operator/autopilot/health", opRead, a.autopilotHealth)
}

func (a *API) autopilotConfig(w http.ResponseWriter, r *http.Request) (any, error) {
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		c := a.srv.AutopilotConfig(snap)
		return &api.AutopilotConfiguration{CleanupDeadServers: c.CleanupDeadServers,
			LastContactThreshold: time.Duration(c.LastContactThreshold), MaxTrailingLogs: c.MaxTrailingLogs, MinQuorum: c.MinQuorum,
			ServerStabilizationTime: time.Duration(c.ServerStabilizationTime), EnableRedundancyZones: c.EnableRedundancyZones,
			DisableUpgradeMigration: c.DisableUpgradeMigration, EnableCustomUpgrades: c.EnableCustomUpgrades,
			CreateIndex: c.CreateIndex, ModifyIndex: c.ModifyIndex}, snap.TableIndex(state.TableAutopilot), nil
	})
}

// autopilotSetConfig serves PUT /v1/operator/autopilot/configuration: the
// whole configuration, ?cas=N to write it only if it is still at modify
// index N; it answers true, or false for a check-and-set that lost, as
// Nomad's.
func (a *API) autopilotSetConfig(w http.ResponseWriter, r *http.Request) (any, error) {
	var in api.AutopilotConfiguration
	if err := decode(w, r, &in); err != nil {
		return nil, err
	}
	cas, index, err := casParam(r)
	if err != nil {
		return nil, err
	}
	c := &state.AutopilotConfig{CleanupDeadServers: in.CleanupDeadServers, LastContactThreshold: int64(in.LastContactThreshold),
		MaxTrailingLogs: in.MaxTrailingLogs, MinQuorum: in.MinQuorum, ServerStabilizationTime: int64(in.ServerStabilizationTime),
		EnableRedundancyZones: in.EnableRedundancyZones, DisableUpgradeMigration: in.DisableUpgradeMigration,
		EnableCustomUpgrades: in.EnableCustomUpgrades}
	ok, applied, err := a.srv.SetAutopilotConfig(c, cas, index)
	if err != nil {
		return nil, err
	}
	setIndex(w, applied)
	return ok, nil
}

// autopilotHealth serves GET /v1/operator/autopilot/health: each server's
// health as the leader's autopilot last saw it, in Nomad's JSON; a 429
// when the cluster is not healthy, as Nomad's.
func (a *API) autopilotHealth(w http.ResponseWriter, r *http.Request) (any, error) {
	st := a.srv.AutopilotState()
	if st == nil || st.Servers == nil {
		return nil, errorf(http.StatusInternalServerError, "the autopilot has not looked at the servers yet")
	}
	out := &api.OperatorHealthReply{Healthy: st.Healthy, FailureTolerance: st.FailureTolerance, Leader: string(st.Leader)}
	for _, id := range st.Voters {
		out.Voters = append(out.Voters, string(id))
	}
	for _, sv := range st.Servers {
		out.Servers = append(out.Servers, api.ServerHealth{ID: string(sv.Server.ID), Name: sv.Server.Name,
			Address: string(sv.Server.Address), SerfStatus: string(sv.Server.NodeStatus), Version: sv.Server.Version,
			Leader: sv.State == autopilot.RaftLeader, LastContact: sv.Stats.LastContact, LastTerm: sv.Stats.LastTerm,
			LastIndex: sv.Stats.LastIndex, Healthy: sv.Health.Healthy, Voter: sv.HasVotingRights(),
			StableSince: sv.Health.StableSince.Round(time.Second).UTC()})
	}
	slices.SortFunc(out.Servers, func(x, y api.ServerHealth) int { return strings.Compare(x.ID, y.ID) })
	code := http.StatusOK
	if !out.Healthy {
		code = http.StatusTooManyRequests
	}
	return written(func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(out)
	}), nil
}
