package httpapi

import (
	"cmp"
	"encoding/json"
	"iter"
	"net/http"
	"slices"
	"strings"

	"github.com/drover-sched/drover/host/acl"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// FuzzyMatch is one match of a fuzzy search, as Nomad's: the object's name
// (its ID, in the contexts matched by ID prefix) and, as Scope, the IDs
// that find it, from its namespace down to its parent: [namespace, job]
// for a job or a group, [namespace, job, group] for a task or a group's
// service, [namespace, job, group, task] for a task's service or its
// image, command or class; [node ID] for a node, [pool] for a node pool,
// [namespace, allocation ID] for an allocation; none for a namespace.
type FuzzyMatch struct {
	ID    string
	Scope []string `json:",omitempty"`
}

// FuzzySearchResponse answers /v1/search/fuzzy as Nomad's: the matches per
// context, best first, and whether a context's are incomplete.
type FuzzySearchResponse struct {
	Matches     map[string][]FuzzyMatch
	Truncations map[string]bool
}

// fuzzyContexts are the contexts Nomad's fuzzy search knows, in the order
// "all" searches them. Drover has no plugins or volumes: those match
// nothing.
var fuzzyContexts = []string{"allocs", "jobs", "nodes", "node_pools", "evals", "deployment", "plugins", "volumes",
	"scaling_policy", "vars", "namespaces"}

// jobContexts are what a job's name and parts match in: a search of jobs
// answers in each.
var jobContexts = []string{"jobs", "groups", "services", "tasks", "images", "commands", "classes"}

// fuzzySearch serves PUT/POST /v1/search/fuzzy, Nomad's fuzzy search (what
// Nomad's web UI's search box asks): {"Text", "Context"}, Context "all" or
// one of fuzzyContexts, in the request's namespace (?namespace=, else the
// body's Namespace, as the web UI sends "*"; "*": all). The objects named
// by a UUID alone (evaluations, deployments, scaling policies) are matched
// by ID prefix, as the prefix search matches them (at most 20, case
// counts); the others by name, case-insensitively anywhere in it: jobs by
// their name and the names of their groups, tasks and services and their
// tasks' image, command or class, allocations, nodes, node pools and
// namespaces by name. Each context's matches are sorted as Nomad sorts
// them: the match nearest the start first, then the shortest name (an
// exact match first of all), then by name.
func (a *API) fuzzySearch(w http.ResponseWriter, r *http.Request) (any, error) {
	// Nomad's client sends its query options in the body too: unknown
	// fields are allowed here.
	var req struct {
		Text, Context, Namespace string
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes)).Decode(&req); err != nil {
		return nil, errorf(http.StatusBadRequest, "fuzzy search request: %v", err)
	}
	ns := r.URL.Query().Get("namespace")
	if ns == "" {
		ns = cmp.Or(req.Namespace, sdk.DefaultNamespace)
	}
	// As Nomad's: a context named outright, in one namespace, that the
	// token may not search there is refused; "all" leaves such contexts
	// out; with "*" each object is checked instead.
	if req.Context != "all" && ns != "*" && !fuzzySearchable(r, ns, req.Context) {
		return nil, errPermissionDenied
	}
	cfg := a.srv.Config().Search
	if !cfg.FuzzyEnabled {
		return nil, errorf(http.StatusNotFound, "fuzzy search is not enabled")
	}
	if n := len(req.Text); n < cfg.MinTermLength {
		return nil, errorf(http.StatusBadRequest, "fuzzy search query must be at least %d characters, got %d", cfg.MinTermLength, n)
	}
	want := fuzzyContexts
	switch {
	case req.Context == "all":
	case slices.Contains(fuzzyContexts, req.Context):
		want = []string{req.Context}
	default:
		return nil, errorf(http.StatusBadRequest, "context must be one of %v or 'all' for all contexts; got %q", fuzzyContexts, req.Context)
	}

	snap := a.srv.Store().Snapshot()
	resp := &FuzzySearchResponse{Matches: map[string][]FuzzyMatch{}, Truncations: map[string]bool{}}
	f := &fuzzyMatcher{text: strings.ToLower(req.Text), cfg: cfg, found: map[string][]scoredMatch{}, truncated: resp.Truncations}
	for _, c := range want {
		if ns != "*" && !fuzzySearchable(r, ns, c) {
			continue
		}
		switch c {
		case "evals", "deployment", "scaling_policy", "volumes":
			ids, truncated := prefixMatches(r, snap, ns, c, req.Text)
			matches := make([]FuzzyMatch, 0, len(ids))
			for _, id := range ids {
				matches = append(matches, FuzzyMatch{ID: id})
			}
			resp.Matches[c], resp.Truncations[c] = matches, truncated
			continue
		}
		// As Nomad's: a context searched by name says whether it was
		// truncated even when nothing matched (of a job's parts, only
		// jobs does).
		resp.Truncations[c] = false
		switch c {
		case "jobs":
			examine(f, snap.EachJob(ns), func(j *sdk.Job) bool {
				return allowedIn(r, j.Namespace, acl.NamespaceCapabilityReadJob)
			}, f.job, jobContexts...)
		case "allocs":
			examine(f, snap.EachAlloc(), func(al *sdk.Allocation) bool {
				return (ns == "*" || al.Namespace == ns) && allowedIn(r, al.Namespace, acl.NamespaceCapabilityReadJob)
			}, func(al *sdk.Allocation) { f.match(c, al.Name, al.Namespace, al.ID) }, c)
		case "nodes":
			if allowed(r, (*acl.ACL).AllowNodeRead) {
				examine(f, snap.EachNode(), func(*sdk.Node) bool { return true }, func(n *sdk.Node) { f.match(c, n.Name, n.ID) }, c)
			}
		case "node_pools":
			examine(f, slices.Values(snap.NodePools()), func(p *state.NodePool) bool { return poolReadable(r, p.Name) },
				func(p *state.NodePool) { f.match(c, p.Name, p.Name) }, c)
		case "namespaces":
			examine(f, slices.Values(snap.Namespaces()), func(ns *state.Namespace) bool { return namespaceVisible(r, ns.Name) },
				func(ns *state.Namespace) { f.match(c, ns.Name) }, c)
		case "vars":
			examine(f, slices.Values(snap.Variables(ns, "")), func(v *state.Variable) bool {
				return allowVariable(r, v.Namespace, v.Path, acl.VariablesCapabilityList)
			}, func(v *state.Variable) { f.match(c, v.Path, v.Namespace, v.Path) }, c)
		}
	}
	for c, matches := range f.found {
		resp.Matches[c] = f.best(c, matches)
	}
	setIndex(w, snap.Index())
	return resp, nil
}

// fuzzySearchable reports whether the request's token may search context
// c in namespace ns (a namespace's name, not "*") at all, as Nomad's
// search asks before it looks: the objects found are still checked one by
// one.
func fuzzySearchable(r *http.Request, ns, c string) bool {
	in := func(capabilities ...string) bool {
		return slices.ContainsFunc(capabilities, func(capability string) bool { return allowedIn(r, ns, capability) })
	}
	switch c {
	case "nodes":
		return allowed(r, (*acl.ACL).AllowNodeRead)
	case "node_pools":
		return allowed(r, (*acl.ACL).AllowNodePoolSearch)
	case "namespaces":
		return namespaceVisible(r, ns)
	case "jobs", "allocs", "evals", "deployment":
		return in(acl.NamespaceCapabilityReadJob)
	case "scaling_policy":
		return in(acl.NamespaceCapabilityReadJob, acl.NamespaceCapabilityListScalingPolicies)
	case "volumes":
		return in(acl.NamespaceCapabilityReadJob, acl.NamespaceCapabilityListJobs, acl.NamespaceCapabilityCSIListVolume,
			acl.NamespaceCapabilityCSIReadVolume)
	case "plugins":
		return allowed(r, (*acl.ACL).AllowPluginList)
	}
	return true // vars: each path is checked as it is found; an unknown context is refused later
}

// fuzzyMatcher gathers one fuzzy search's matches by name, per context.
type fuzzyMatcher struct {
	text      string // lower-cased
	cfg       server.SearchConfig
	found     map[string][]scoredMatch
	truncated map[string]bool
}

// scoredMatch is a match and where in its name the text starts.
type scoredMatch struct {
	FuzzyMatch
	at int
}

// examine visits the objects of seq that keep lets the request see, at
// most limit_query of them. With more left, the contexts they feed are
// marked truncated: matches may have been left out. (Nomad marks a context
// only when the last object examined matched in it.)
func examine[T any](f *fuzzyMatcher, seq iter.Seq[T], keep func(T) bool, visit func(T), feeds ...string) {
	n := 0
	for o := range seq {
		if !keep(o) {
			continue
		}
		if n == f.cfg.LimitQuery {
			for _, c := range feeds {
				f.truncated[c] = true
			}
			return
		}
		visit(o)
		n++
	}
}

// match adds name to context c's matches if it holds the text, ignoring
// case (Nomad's strings.Contains of the lower-cased name).
func (f *fuzzyMatcher) match(c, name string, scope ...string) {
	if at := strings.Index(strings.ToLower(name), f.text); at >= 0 {
		f.found[c] = append(f.found[c], scoredMatch{FuzzyMatch{ID: name, Scope: scope}, at})
	}
}

// job matches a job's name (its ID if it has none, which Nomad's API
// would have named it by) and the names of its groups, tasks, services
// and its tasks' image (docker), command (exec, raw_exec) or class
// (java), as Nomad's.
func (f *fuzzyMatcher) job(j *sdk.Job) {
	ns, id := j.Namespace, j.ID
	f.match("jobs", cmp.Or(j.Name, j.ID), ns, id)
	for _, g := range j.TaskGroups {
		f.match("groups", g.Name, ns, id)
		for _, s := range g.Services {
			f.match("services", s.Str("Name"), ns, id, g.Name)
		}
		for _, t := range g.Tasks {
			f.match("tasks", t.Name, ns, id, g.Name)
			for _, s := range t.Services {
				f.match("services", s.Str("Name"), ns, id, g.Name, t.Name)
			}
			switch t.Driver {
			case "docker":
				f.match("images", t.Config.Str("image"), ns, id, g.Name, t.Name)
			case "exec", "raw_exec":
				f.match("commands", t.Config.Str("command"), ns, id, g.Name, t.Name)
			case "java":
				f.match("classes", t.Config.Str("class"), ns, id, g.Name, t.Name)
			}
		}
	}
}

// best sorts context c's matches as Nomad does, and keeps limit_results of
// them, marking c truncated if there were more. Nomad keeps the first it
// found and sorts those; keeping the best, an exact match is never the one
// left out.
func (f *fuzzyMatcher) best(c string, matches []scoredMatch) []FuzzyMatch {
	slices.SortFunc(matches, func(a, b scoredMatch) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(len(a.ID), len(b.ID)), strings.Compare(a.ID, b.ID),
			slices.Compare(a.Scope, b.Scope))
	})
	if len(matches) > f.cfg.LimitResults {
		matches, f.truncated[c] = matches[:f.cfg.LimitResults], true
	}
	out := make([]FuzzyMatch, len(matches))
	for i, m := range matches {
		out[i] = m.FuzzyMatch
	}
	return out
}
