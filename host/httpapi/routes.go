package httpapi

import (
	"net/http"

	"github.com/drover-sched/drover/host/acl"
)

// register adds every endpoint.
func (a *API) register() {
	write := a.write

	a.on(http.MethodGet, "/v1/jobs", listIn(acl.NamespaceCapabilityListJobs), a.jobList)
	write("/v1/jobs", inBody(acl.NamespaceCapabilitySubmitJob), a.jobRegister)
	// As Nomad's: parse-job, or submit-job.
	write("/v1/jobs/parse", inNSEither(acl.NamespaceCapabilityParseJob, acl.NamespaceCapabilitySubmitJob), a.jobParse)
	write("/v1/validate/job", inBody(acl.NamespaceCapabilityReadJob), a.jobValidate)
	// /v1/job/:id and its sub-paths: see jobPaths.
	a.mux.HandleFunc("/v1/job/", a.jobPaths)

	a.on(http.MethodGet, "/v1/evaluations", listIn(acl.NamespaceCapabilityReadJob), a.evalList)
	a.on(http.MethodGet, "/v1/evaluations/count", listIn(acl.NamespaceCapabilityReadJob), a.evalCount)
	a.on(http.MethodDelete, "/v1/evaluations", management, a.evalDelete)
	a.on(http.MethodGet, "/v1/evaluation/{id}", ofEval(acl.NamespaceCapabilityReadJob), a.evalRead)
	a.on(http.MethodGet, "/v1/evaluation/{id}/allocations", ofEval(acl.NamespaceCapabilityReadJob), a.evalAllocations)

	a.on(http.MethodGet, "/v1/allocations", listIn(acl.NamespaceCapabilityReadJob), a.allocList)
	a.on(http.MethodPut, "/v1/allocations/status", nodeWrite, a.allocsStatus)
	a.on(http.MethodGet, "/v1/allocation/{id}", ofAlloc(acl.NamespaceCapabilityReadJob), a.allocRead)
	write("/v1/allocation/{id}/stop", ofAlloc(acl.NamespaceCapabilityAllocLifecycle), a.allocStop)

	a.on(http.MethodGet, "/v1/nodes", nodeRead, a.nodeList)
	a.on(http.MethodPut, "/v1/nodes", nodeWrite, a.nodeRegister)
	a.on(http.MethodGet, "/v1/node/{id}", nodeRead, a.nodeRead)
	a.on(http.MethodGet, "/v1/node/{id}/allocations", nodeReadListing(acl.NamespaceCapabilityReadJob), a.nodeAllocations)
	a.on(http.MethodPut, "/v1/node/{id}/heartbeat", nodeWrite, a.nodeHeartbeat)
	write("/v1/node/{id}/eligibility", nodeWrite, a.nodeEligibility)
	write("/v1/node/{id}/purge", nodeWrite, a.nodePurge)
	write("/v1/node/{id}/evaluate", nodeWrite, a.nodeEvaluate)
	write("/v1/node/{id}/drain", nodeWrite, a.nodeDrain)

	a.on(http.MethodGet, "/v1/deployments", listIn(acl.NamespaceCapabilityReadJob), a.deploymentList)
	a.on(http.MethodGet, "/v1/deployment/{id}", ofDeployment(acl.NamespaceCapabilityReadJob), a.deploymentRead)
	a.on(http.MethodGet, "/v1/deployment/allocations/{id}", ofDeployment(acl.NamespaceCapabilityReadJob), a.deploymentAllocations)
	write("/v1/deployment/promote/{id}", ofDeployment(acl.NamespaceCapabilitySubmitJob), a.deploymentPromote)
	write("/v1/deployment/fail/{id}", ofDeployment(acl.NamespaceCapabilitySubmitJob), a.deploymentFail)
	write("/v1/deployment/pause/{id}", ofDeployment(acl.NamespaceCapabilitySubmitJob), a.deploymentPause)
	write("/v1/deployment/allocation-health/{id}", ofDeployment(acl.NamespaceCapabilitySubmitJob), a.deploymentAllocHealth)

	a.on(http.MethodGet, "/v1/scaling/policies", listIn(acl.NamespaceCapabilityListScalingPolicies), a.scalingPolicyList)
	a.on(http.MethodGet, "/v1/scaling/policy/{id}", ofScalingPolicy(acl.NamespaceCapabilityReadScalingPolicy), a.scalingPolicyRead)

	write("/v1/system/gc", management, a.systemGC)
	write("/v1/system/reconcile/summaries", management, a.reconcileSummaries)

	a.on(http.MethodGet, "/v1/namespaces", anyToken, a.namespaceList)
	a.on(http.MethodGet, "/v1/namespace/{name}", anyToken, a.namespaceRead)
	write("/v1/namespace", management, a.namespaceWrite)
	write("/v1/namespace/{name}", management, a.namespaceWrite)
	a.on(http.MethodDelete, "/v1/namespace/{name}", management, a.namespaceDelete)
	a.on(http.MethodGet, "/v1/node/pools", anyToken, a.nodePoolList)
	write("/v1/node/pools", anyToken, a.nodePoolWrite) // node pool write, checked by the handler
	// /v1/node/pool/:name and its sub-paths: see poolRoutes.

	a.on(http.MethodGet, "/v1/operator/scheduler/configuration", opRead, a.schedulerConfig)
	write("/v1/operator/scheduler/configuration", opWrite, a.schedulerSetConfig)

	a.on(http.MethodGet, "/v1/plugins/schedulers", needs((*acl.ACL).AllowPluginList), a.pluginList)
	a.on(http.MethodGet, "/v1/plugins/refused", needs((*acl.ACL).AllowPluginList), a.pluginRefusedList)
	a.on(http.MethodGet, "/v1/plugin/scheduler/{name}", needs((*acl.ACL).AllowPluginRead), a.pluginGet)
	a.on(http.MethodGet, "/v1/status/leader", open, a.statusLeader)
	a.on(http.MethodGet, "/v1/status/peers", open, a.statusPeers)
	a.on(http.MethodGet, "/v1/agent/members", nodeRead, a.members)
	a.on(http.MethodGet, "/v1/agent/health", open, a.agentHealth)
	a.on(http.MethodGet, "/v1/operator/raft/configuration", opRead, a.raftConfiguration)
	a.on(http.MethodDelete, "/v1/operator/raft/peer", opWrite, a.raftRemovePeer)
	write("/v1/operator/raft/transfer-leadership", opWrite, a.raftTransferLeadership)
	a.on(http.MethodGet, "/v1/regions", open, a.regions)
	a.on(http.MethodGet, "/v1/operator/snapshot", management, a.snapshotSave)
	write("/v1/operator/snapshot", management, a.snapshotRestore)
	write("/v1/search", anyToken, a.search)
	write("/v1/search/fuzzy", anyToken, a.fuzzySearch)
	a.on(http.MethodGet, "/v1/metrics", open, a.metrics)
	a.on(http.MethodGet, "/v1/agent/monitor", agentRead, a.atServer(a.monitor))
	a.on(http.MethodGet, "/v1/event/stream", anyToken, a.eventStream)
	a.on(http.MethodGet, "/v1/agent/self", agentRead, a.atServer(a.agentSelf))
	a.registerACL()
	a.registerACLSSO()

	a.registerVariables()
	a.registerCSI()
	a.registerServices()
	a.registerAutopilot()
	a.registerPprof()
}

// write adds a write endpoint: PUT and POST are interchangeable, as in
// Nomad.
func (a *API) write(pattern string, acc access, h handler) {
	a.on(http.MethodPut, pattern, acc, h)
	a.on(http.MethodPost, pattern, acc, h)
}

// poolRoutes are the paths under /v1/node/pool/, served by a mux of their
// own: as patterns of the main one, /v1/node/pool/{name} would conflict
// with /v1/node/{id}/allocations and the like.
func (a *API) poolRoutes() *http.ServeMux {
	mux := http.NewServeMux()
	routes := map[string]map[string]route{
		"/v1/node/pool/{name}": {http.MethodGet: {anyToken, a.nodePoolRead}, http.MethodPut: {anyToken, a.nodePoolWrite},
			http.MethodPost: {anyToken, a.nodePoolWrite}, http.MethodDelete: {anyToken, a.nodePoolDelete}},
		"/v1/node/pool/{name}/nodes": {http.MethodGet: {nodeRead, a.nodePoolNodes}},
		"/v1/node/pool/{name}/jobs":  {http.MethodGet: {listIn(acl.NamespaceCapabilityListJobs), a.nodePoolJobs}},
	}
	for pattern, byMethod := range routes {
		mux.HandleFunc(pattern, a.dispatch(byMethod))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(http.StatusNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
	})
	return mux
}
