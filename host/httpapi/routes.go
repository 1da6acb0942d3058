package httpapi

import "net/http"

// register adds every endpoint. PUT and POST are interchangeable for
// writes, as in Nomad.
func (a *API) register() {
	write := func(pattern string, h handler) {
		a.on(http.MethodPut, pattern, h)
		a.on(http.MethodPost, pattern, h)
	}

	a.on(http.MethodGet, "/v1/jobs", a.jobList)
	write("/v1/jobs", a.jobRegister)
	write("/v1/jobs/parse", a.jobParse)
	write("/v1/validate/job", a.jobValidate)
	// /v1/job/:id and its sub-paths: see jobPaths.
	a.mux.HandleFunc("/v1/job/", a.jobPaths)

	a.on(http.MethodGet, "/v1/evaluations", a.evalList)
	a.on(http.MethodGet, "/v1/evaluations/count", a.evalCount)
	a.on(http.MethodDelete, "/v1/evaluations", a.evalDelete)
	a.on(http.MethodGet, "/v1/evaluation/{id}", a.evalRead)
	a.on(http.MethodGet, "/v1/evaluation/{id}/allocations", a.evalAllocations)

	a.on(http.MethodGet, "/v1/allocations", a.allocList)
	a.on(http.MethodPut, "/v1/allocations/status", a.allocsStatus)
	a.on(http.MethodGet, "/v1/allocation/{id}", a.allocRead)
	write("/v1/allocation/{id}/stop", a.allocStop)

	a.on(http.MethodGet, "/v1/nodes", a.nodeList)
	a.on(http.MethodPut, "/v1/nodes", a.nodeRegister)
	a.on(http.MethodGet, "/v1/node/{id}", a.nodeRead)
	a.on(http.MethodGet, "/v1/node/{id}/allocations", a.nodeAllocations)
	a.on(http.MethodPut, "/v1/node/{id}/heartbeat", a.nodeHeartbeat)
	write("/v1/node/{id}/eligibility", a.nodeEligibility)
	write("/v1/node/{id}/purge", a.nodePurge)
	write("/v1/node/{id}/evaluate", a.nodeEvaluate)
	write("/v1/node/{id}/drain", a.nodeDrain)

	a.on(http.MethodGet, "/v1/deployments", a.deploymentList)
	a.on(http.MethodGet, "/v1/deployment/{id}", a.deploymentRead)
	a.on(http.MethodGet, "/v1/deployment/allocations/{id}", a.deploymentAllocations)
	write("/v1/deployment/promote/{id}", a.deploymentPromote)
	write("/v1/deployment/fail/{id}", a.deploymentFail)
	write("/v1/deployment/pause/{id}", a.deploymentPause)
	write("/v1/deployment/allocation-health/{id}", a.deploymentAllocHealth)

	a.on(http.MethodGet, "/v1/scaling/policies", a.scalingPolicyList)
	a.on(http.MethodGet, "/v1/scaling/policy/{id}", a.scalingPolicyRead)

	write("/v1/system/gc", a.systemGC)
	write("/v1/system/reconcile/summaries", a.reconcileSummaries)

	a.on(http.MethodGet, "/v1/namespaces", a.namespaceList)
	a.on(http.MethodGet, "/v1/namespace/{name}", a.namespaceRead)
	write("/v1/namespace", implicit("namespace"))
	write("/v1/namespace/{name}", implicit("namespace"))
	a.on(http.MethodDelete, "/v1/namespace/{name}", implicit("namespace"))
	a.on(http.MethodGet, "/v1/node/pools", a.nodePoolList)
	write("/v1/node/pools", implicit("node pool"))
	// /v1/node/pool/:name and its sub-paths: see poolRoutes.

	a.on(http.MethodGet, "/v1/operator/scheduler/configuration", a.schedulerConfig)
	write("/v1/operator/scheduler/configuration", a.schedulerSetConfig)

	a.on(http.MethodGet, "/v1/plugins/schedulers", a.pluginList)
	a.on(http.MethodGet, "/v1/plugins/refused", a.pluginRefusedList)
	a.on(http.MethodGet, "/v1/plugin/scheduler/{name}", a.pluginGet)
	a.on(http.MethodGet, "/v1/status/leader", a.statusLeader)
	a.on(http.MethodGet, "/v1/status/peers", a.statusPeers)
	a.on(http.MethodGet, "/v1/agent/members", a.members)
	a.on(http.MethodGet, "/v1/agent/health", a.agentHealth)
	a.on(http.MethodGet, "/v1/operator/raft/configuration", a.raftConfiguration)
	a.on(http.MethodDelete, "/v1/operator/raft/peer", a.raftRemovePeer)
	write("/v1/operator/raft/transfer-leadership", a.raftTransferLeadership)
	a.on(http.MethodGet, "/v1/regions", a.regions)
	a.on(http.MethodGet, "/v1/operator/snapshot", a.snapshotSave)
	write("/v1/operator/snapshot", a.snapshotRestore)
	write("/v1/search", a.search)
	a.on(http.MethodGet, "/v1/metrics", a.metrics)
	a.on(http.MethodGet, "/v1/agent/monitor", a.monitor)
	a.on(http.MethodGet, "/v1/event/stream", a.eventStream)
	a.on(http.MethodGet, "/v1/agent/self", a.agentSelf)

	// Variables are not served. Nomad's client reads a 404 from
	// /v1/var/:path as a variable that does not exist (nomad var get says
	// "Variable not found", Variables().Peek answers nil without an
	// error), so every variables path answers 501 instead.
	varsNotServed := func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(http.StatusNotImplemented, "variables are not served by Drover (%s %s)", r.Method, r.URL.Path))
	}
	a.mux.HandleFunc("/v1/var/", varsNotServed)
	a.mux.HandleFunc("/v1/vars", varsNotServed)
}

// poolRoutes are the paths under /v1/node/pool/, served by a mux of their
// own: as patterns of the main one, /v1/node/pool/{name} would conflict
// with /v1/node/{id}/allocations and the like.
func (a *API) poolRoutes() *http.ServeMux {
	mux := http.NewServeMux()
	routes := map[string]map[string]handler{
		"/v1/node/pool/{name}": {http.MethodGet: a.nodePoolRead, http.MethodPut: implicit("node pool"),
			http.MethodPost: implicit("node pool"), http.MethodDelete: implicit("node pool")},
		"/v1/node/pool/{name}/nodes": {http.MethodGet: a.nodePoolNodes},
		"/v1/node/pool/{name}/jobs":  {http.MethodGet: a.nodePoolJobs},
	}
	for pattern, byMethod := range routes {
		mux.HandleFunc(pattern, a.dispatch(byMethod))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(http.StatusNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
	})
	return mux
}
