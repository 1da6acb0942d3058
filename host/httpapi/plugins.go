package httpapi

import (
	"net/http"
	"time"

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
	// ReloadError says why the agent refused the last replacement of the
	// plugin's file: the version described still runs.
	ReloadError string `json:",omitempty"`
}

// RefusedPlugin is a plugin file the agent found but does not run as it
// is (it failed to load, or a name or job type it declares is served from
// another file), and why.
type RefusedPlugin struct {
	Path  string
	Error string
	Time  time.Time
}

// PluginStats count a plugin's evals, failures, recycled instances and
// state syncs.
type PluginStats struct {
	Evals, Failures, Recycled, FullSyncs, DeltaSyncs int64
}

func pluginStub(reg *runtime.Registry, e *runtime.Entry) *PluginStub {
	info := e.Plugin.Info()
	st := e.Plugin.Stats()
	var reloadErr string
	if f, ok := reg.Refusal(e.Path); ok && e.Path != "" {
		reloadErr = f.Error
	}
	return &PluginStub{ReloadError: reloadErr, Name: info.Name, Types: info.Types, Runtime: e.Runtime,
		ABIVersion: abi.Version(info.ABI).String(), PluginVersion: info.PluginVersion, Path: e.Path,
		MirrorEvals: info.MirrorEvals, Config: e.Config, MemoryMB: e.MemoryMB, TimeoutNanos: int64(e.Timeout),
		EnforceDeadline: e.EnforceDeadline,
		Stats: PluginStats{Evals: st.Evals.Load(), Failures: st.Failures.Load(), Recycled: st.Recycled.Load(),
			FullSyncs: st.FullSyncs.Load(), DeltaSyncs: st.DeltaSyncs.Load()}}
}

func (a *API) pluginList(http.ResponseWriter, *http.Request) (any, error) {
	out := []*PluginStub{}
	reg := a.srv.Plugins()
	for _, e := range reg.List() {
		out = append(out, pluginStub(reg, e))
	}
	return out, nil
}

func (a *API) pluginRefusedList(http.ResponseWriter, *http.Request) (any, error) {
	out := []*RefusedPlugin{}
	for _, f := range a.srv.Plugins().Refused() {
		out = append(out, &RefusedPlugin{Path: f.Path, Error: f.Error, Time: f.Time})
	}
	return out, nil
}

func (a *API) pluginGet(_ http.ResponseWriter, r *http.Request) (any, error) {
	reg := a.srv.Plugins()
	e, ok := reg.Lookup(r.PathValue("name"))
	if !ok {
		return nil, errorf(http.StatusNotFound, "no scheduler plugin named %q", r.PathValue("name"))
	}
	return pluginStub(reg, e), nil
}
