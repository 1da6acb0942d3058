package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/drover-sched/drover/host/acl"
	"github.com/drover-sched/drover/host/state"
)

// searchLimit is how many matches a context lists at most, as Nomad's.
const searchLimit = 20

// SearchResponse answers /v1/search as Nomad's: the IDs matching the
// prefix per context, and whether a context had more than the limit.
type SearchResponse struct {
	Matches     map[string][]string
	Truncations map[string]bool
}

// searchContexts are the contexts Drover has objects for. Nomad's others
// (plugins, volumes, ...) are accepted and match nothing.
var searchContexts = []string{"jobs", "evals", "allocs", "nodes", "deployment", "namespaces", "node_pools", "scaling_policy", "vars"}

// search serves PUT/POST /v1/search (Nomad's prefix search, which Nomad's
// CLI uses to find what an ID prefix names): {"Prefix", "Context"} with
// Context "all" or one of searchContexts, in the request's namespace
// ("*": all) for namespaced objects.
func (a *API) search(w http.ResponseWriter, r *http.Request) (any, error) {
	// Nomad's client sends its query options in the body too: unknown
	// fields are allowed here.
	var req struct {
		Prefix  string
		Context string
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes)).Decode(&req); err != nil {
		return nil, errorf(http.StatusBadRequest, "search request: %v", err)
	}
	want := searchContexts
	switch {
	case req.Context == "" || req.Context == "all":
	case slices.Contains(searchContexts, req.Context):
		want = []string{req.Context}
	default:
		want = nil // a context of Nomad's with no objects here
	}
	ns := requestNamespace(r)
	snap := a.srv.Store().Snapshot()
	resp := &SearchResponse{Matches: map[string][]string{}, Truncations: map[string]bool{}}
	for _, c := range want {
		resp.Matches[c], resp.Truncations[c] = prefixMatches(r, snap, ns, c, req.Prefix)
	}
	setIndex(w, snap.Index())
	return resp, nil
}

// prefixMatches are the IDs (names, for namespaces and node pools) of
// context c that start with prefix, in namespace ns ("*": all) for
// namespaced objects, sorted; at most searchLimit, and whether there
// were more. Each context lists what the request's token may see of it,
// as Nomad's search does.
func prefixMatches(r *http.Request, snap *state.Snapshot, ns, c, prefix string) (ids []string, truncated bool) {
	visibleIn := func(n, capability string) bool { return (ns == "*" || n == ns) && allowedIn(r, n, capability) }
	switch c {
	case "jobs":
		if ns == "*" {
			for _, j := range snap.Jobs("*") {
				if strings.HasPrefix(j.ID, prefix) && visibleIn(j.Namespace, acl.NamespaceCapabilityListJobs) {
					ids = append(ids, j.ID)
				}
			}
		} else {
			for _, j := range snap.JobsByIDPrefix(ns, prefix) {
				if visibleIn(j.Namespace, acl.NamespaceCapabilityListJobs) {
					ids = append(ids, j.ID)
				}
			}
		}
	case "evals":
		for _, e := range snap.EvalsByPrefix(prefix) {
			if visibleIn(e.Namespace, acl.NamespaceCapabilityReadJob) {
				ids = append(ids, e.ID)
			}
		}
	case "allocs":
		for _, al := range snap.AllocsByPrefix(prefix) {
			if visibleIn(al.Namespace, acl.NamespaceCapabilityReadJob) {
				ids = append(ids, al.ID)
			}
		}
	case "nodes":
		if !allowed(r, (*acl.ACL).AllowNodeRead) {
			break
		}
		for _, n := range snap.NodesByPrefix(prefix) {
			ids = append(ids, n.ID)
		}
	case "deployment":
		for _, d := range snap.Deployments() {
			if visibleIn(d.Namespace, acl.NamespaceCapabilityReadJob) && strings.HasPrefix(d.ID, prefix) {
				ids = append(ids, d.ID)
			}
		}
	case "namespaces":
		for _, ns := range snap.Namespaces() {
			if strings.HasPrefix(ns.Name, prefix) && namespaceVisible(r, ns.Name) {
				ids = append(ids, ns.Name)
			}
		}
	case "node_pools":
		for _, p := range snap.NodePools() {
			if strings.HasPrefix(p.Name, prefix) && poolReadable(r, p.Name) {
				ids = append(ids, p.Name)
			}
		}
	case "vars":
		// Each path the token may list (Nomad's lets any variables
		// capability in the namespace find every path there).
		for _, v := range snap.Variables(ns, prefix) {
			if allowVariable(r, v.Namespace, v.Path, acl.VariablesCapabilityList) {
				ids = append(ids, v.Path)
			}
		}
	case "scaling_policy":
		for _, p := range snap.ScalingPolicies(ns) {
			if strings.HasPrefix(p.ID, prefix) && allowedIn(r, p.Target["Namespace"], acl.NamespaceCapabilityListScalingPolicies) {
				ids = append(ids, p.ID)
			}
		}
	}
	sort.Strings(ids)
	if len(ids) > searchLimit {
		return ids[:searchLimit], true
	}
	return ids, false
}
