package httpapi

import (
	"net/http"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/sdk/abi"
)

// PluginStub describes a registered scheduler plugin.
type PluginStub struct {
	Name          string
	Types         []string
	Runtime       string
	ABIVersion    string
	PluginVersion string
	Path          string `json:",omitempty"`
	// MirrorEvals: the plugin asked for evaluations in its mirror.
	MirrorEvals bool
	// Config is what the plugin gets with every eval.
	Config map[string]string `json:",omitempty"`
	// MemoryMB, Timeout (ns) and EnforceDeadline are the plugin's limits.
	MemoryMB        int   `json:",omitempty"`
	TimeoutNanos    int64 `json:"Timeout"`
	EnforceDeadline bool
	// Stats count what the plugin's pool did since it was loaded.
	Stats PluginStats
}

// PluginStats count a plugin's evals, failures, recycled instances and
// state syncs.
type PluginStats struct {
	Evals, Failures, Recycled, FullSyncs, DeltaSyncs int64
}

func pluginStub(e *runtime.Entry) *PluginStub {
	info := e.Plugin.Info()
	st := e.Plugin.Stats()
	return &PluginStub{Name: info.Name, Types: info.Types, Runtime: e.Runtime,
		ABIVersion: abi.Version(info.ABI).String(), PluginVersion: info.PluginVersion, Path: e.Path,
		MirrorEvals: info.MirrorEvals, Config: e.Config, MemoryMB: e.MemoryMB, TimeoutNanos: int64(e.Timeout),
		EnforceDeadline: e.EnforceDeadline,
		Stats: PluginStats{Evals: st.Evals.Load(), Failures: st.Failures.Load(), Recycled: st.Recycled.Load(),
			FullSyncs: st.FullSyncs.Load(), DeltaSyncs: st.DeltaSyncs.Load()}}
}

func (a *API) pluginList(http.ResponseWriter, *http.Request) (any, error) {
	out := []*PluginStub{}
	for _, e := range a.srv.Plugins().List() {
		out = append(out, pluginStub(e))
	}
	return out, nil
}

func (a *API) pluginGet(_ http.ResponseWriter, r *http.Request) (any, error) {
	e, ok := a.srv.Plugins().Lookup(r.PathValue("name"))
	if !ok {
		return nil, errorf(http.StatusNotFound, "no scheduler plugin named %q", r.PathValue("name"))
	}
	return pluginStub(e), nil
}
