package httpapi

import (
	"net/http"
	"strconv"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// SchedulerConfigurationResponse answers GET
// /v1/operator/scheduler/configuration.
type SchedulerConfigurationResponse struct {
	SchedulerConfig *sdk.SchedulerConfiguration
	Index           uint64
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
		return &SchedulerConfigurationResponse{SchedulerConfig: c, Index: c.ModifyIndex}, c.ModifyIndex, nil
	})
}

func (a *API) schedulerSetConfig(w http.ResponseWriter, r *http.Request) (any, error) {
	var c sdk.SchedulerConfiguration
	if err := decode(w, r, &c); err != nil {
		return nil, err
	}
	if raw := r.URL.Query().Get("cas"); raw != "" {
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

func (a *API) statusLeader(http.ResponseWriter, *http.Request) (any, error) {
	return a.srv.Leader(), nil
}

func (a *API) statusPeers(http.ResponseWriter, *http.Request) (any, error) {
	if l := a.srv.Leader(); l != "" {
		return []string{l}, nil
	}
	return []string{}, nil
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
		out, next, err := page(o, ds, func(d *sdk.Deployment) string { return d.ID })
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
			return nil, 0, errorf(http.StatusNotFound, "deployment %q not found", r.PathValue("id"))
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
// of the whole state (host/snapshot's archive), streamed as it is written.
func (a *API) snapshotSave(w http.ResponseWriter, r *http.Request) (any, error) {
	snap, err := a.srv.SaveSnapshot()
	if err != nil {
		return nil, err
	}
	return written(func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("X-Nomad-Index", strconv.FormatUint(snap.Meta.Index, 10))
		if err := snap.Write(w); err != nil {
			// The archive is cut short: its checksums keep it from
			// being restored.
			a.log.Error().Err(err).Msg("snapshot save failed")
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
