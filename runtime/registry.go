package runtime

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/drover-sched/drover/sdk"
)

// Entry is a registered plugin and how it runs.
type Entry struct {
	Plugin *Plugin
	// Runtime is "wasm", "goplugin" or "native".
	Runtime string
	// Path is the plugin's file, if any.
	Path string
	// Config is handed to the plugin with every eval.
	Config map[string]string
	// Timeout bounds one eval in the plugin (0: the host's default).
	Timeout time.Duration
	// MemoryMB is a wasm plugin's memory limit (0: not limited here).
	MemoryMB int
	// EnforceDeadline says whether a plugin that overruns Timeout is
	// stopped (always for go-plugin; a per-plugin choice for wasm).
	EnforceDeadline bool
}

// Registry maps plugin names, and the job types they serve, to plugins.
// It is a value the agent builds and passes around; it rejects duplicate
// names and types served twice. It also keeps the plugin files the agent
// refused since it started, so that operators see them without the log.
type Registry struct {
	mu      sync.RWMutex
	byName  map[string]*Entry
	byType  map[string]string
	refused map[string]Refusal
}

// Refusal is a plugin file the agent found but does not run as it is: it
// failed to load, or declares a name or job type another file serves. A
// replacement refused leaves the running version of the plugin in place.
type Refusal struct {
	Path  string
	Error string
	Time  time.Time
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]*Entry{}, byType: map[string]string{}, refused: map[string]Refusal{}}
}

// Refuse records that the file at path was refused, and why.
func (r *Registry) Refuse(path string, err error, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused[path] = Refusal{Path: path, Error: err.Error(), Time: at}
}

// ClearRefusal forgets the refusal of the file at path: it loaded since,
// or is gone.
func (r *Registry) ClearRefusal(path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.refused, path)
}

// Refused returns the refused plugin files, by path.
func (r *Registry) Refused() []Refusal {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Refusal, 0, len(r.refused))
	for _, f := range r.refused {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Refusal) int { return cmpString(a.Path, b.Path) })
	return out
}

// Refusal returns the refusal of the file at path, if it was refused.
func (r *Registry) Refusal(path string) (Refusal, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.refused[path]
	return f, ok
}

// Register adds a plugin. Its name must be new, and no other plugin may
// serve one of its types.
func (r *Registry) Register(e *Entry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	info := e.Plugin.Info()
	if _, ok := r.byName[info.Name]; ok {
		return fmt.Errorf("runtime: plugin %q is already registered", info.Name)
	}
	for _, t := range info.Types {
		if owner, ok := r.byType[t]; ok {
			return fmt.Errorf("runtime: plugin %q serves job type %q, already served by %q", info.Name, t, owner)
		}
	}
	r.byName[info.Name] = e
	for _, t := range info.Types {
		r.byType[t] = info.Name
	}
	return nil
}

// Replace swaps the plugin registered under e's name for e and returns the
// old entry (for the caller to close once its evals finish). The new
// plugin must serve the same types as the old, or types no one else serves.
func (r *Registry) Replace(e *Entry) (*Entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	info := e.Plugin.Info()
	old, ok := r.byName[info.Name]
	if !ok {
		return nil, fmt.Errorf("runtime: plugin %q is not registered", info.Name)
	}
	for _, t := range info.Types {
		if owner, ok := r.byType[t]; ok && owner != info.Name {
			return nil, fmt.Errorf("runtime: plugin %q serves job type %q, already served by %q", info.Name, t, owner)
		}
	}
	for _, t := range old.Plugin.Info().Types {
		delete(r.byType, t)
	}
	r.byName[info.Name] = e
	for _, t := range info.Types {
		r.byType[t] = info.Name
	}
	return old, nil
}

// Lookup returns the plugin registered under name.
func (r *Registry) Lookup(name string) (*Entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.byName[name]
	return e, ok
}

// ForEval returns the plugin that schedules an eval: the one the job names,
// or the one serving the eval's type.
func (r *Registry) ForEval(eval *sdk.Evaluation, job *sdk.Job) (*Entry, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if job != nil && job.Scheduler != "" {
		e, ok := r.byName[job.Scheduler]
		if !ok {
			return nil, fmt.Errorf("runtime: job %s names scheduler %q, which is not registered", job.ID, job.Scheduler)
		}
		return e, nil
	}
	name, ok := r.byType[eval.Type]
	if !ok {
		return nil, fmt.Errorf("runtime: no plugin serves job type %q", eval.Type)
	}
	return r.byName[name], nil
}

// Types returns every job type some plugin serves.
func (r *Registry) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.byType))
	for t := range r.byType {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// List returns every entry, by name.
func (r *Registry) List() []*Entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Entry, 0, len(r.byName))
	for _, e := range r.byName {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *Entry) int {
		return cmpString(a.Plugin.Info().Name, b.Plugin.Info().Name)
	})
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
