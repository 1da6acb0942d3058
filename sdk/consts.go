package sdk

// Job types. A job's type picks the built-in scheduler that handles it,
// unless Job.Scheduler names a plugin explicitly.
const (
	JobTypeService  = "service"
	JobTypeBatch    = "batch"
	JobTypeSystem   = "system"
	JobTypeSysBatch = "sysbatch"
	JobTypeCore     = "_core"
)

// Job statuses.
const (
	JobStatusPending = "pending"
	JobStatusRunning = "running"
	JobStatusDead    = "dead"
)

// Payload requirements of a parameterized job (ParameterizedJobConfig.
// Payload; optional when empty).
const (
	DispatchPayloadOptional  = "optional"
	DispatchPayloadRequired  = "required"
	DispatchPayloadForbidden = "forbidden"
)

// DefaultNamespace is the namespace of objects that name none.
const DefaultNamespace = "default"

// DefaultNodePool is the node pool of nodes and jobs that name none;
// AllNodePool matches every pool.
const (
	DefaultNodePool = "default"
	AllNodePool     = "all"
)

// Job priority bounds.
const (
	JobMinPriority     = 1
	JobDefaultPriority = 50
	JobMaxPriority     = 100
	// CoreJobPriority is above every user job.
	CoreJobPriority = JobMaxPriority * 2
)

// Node statuses.
const (
	NodeStatusInit         = "initializing"
	NodeStatusReady        = "ready"
	NodeStatusDown         = "down"
	NodeStatusDisconnected = "disconnected"
)

// Node scheduling eligibility.
const (
	NodeSchedulingEligible   = "eligible"
	NodeSchedulingIneligible = "ineligible"
)

// Allocation desired statuses: what the server wants.
const (
	AllocDesiredStatusRun   = "run"
	AllocDesiredStatusStop  = "stop"
	AllocDesiredStatusEvict = "evict"
)

// Allocation client statuses: what the node reports.
const (
	AllocClientStatusPending  = "pending"
	AllocClientStatusRunning  = "running"
	AllocClientStatusComplete = "complete"
	AllocClientStatusFailed   = "failed"
	AllocClientStatusLost     = "lost"
	AllocClientStatusUnknown  = "unknown"
)

// Evaluation statuses, Nomad's. The quasi-statuses queued, delayed,
// scheduling and applying are not stored in Status; an eval's History in the
// HTTP API (GET /v1/evaluation/:id) shows them.
const (
	EvalStatusPending  = "pending"
	EvalStatusBlocked  = "blocked"
	EvalStatusComplete = "complete"
	EvalStatusFailed   = "failed"
	EvalStatusCanceled = "canceled"
)

// Evaluation quasi-statuses, observable in the evaluation's History in the
// HTTP API.
const (
	EvalPhaseQueued     = "queued"
	EvalPhaseDelayed    = "delayed"
	EvalPhaseScheduling = "scheduling"
	EvalPhaseApplying   = "applying"
)

// Evaluation triggers, Nomad's: the TriggeredBy values.
const (
	EvalTriggerJobRegister          = "job-register"
	EvalTriggerJobDeregister        = "job-deregister"
	EvalTriggerPeriodicJob          = "periodic-job"
	EvalTriggerNodeDrain            = "node-drain"
	EvalTriggerNodeUpdate           = "node-update"
	EvalTriggerAllocStop            = "alloc-stop"
	EvalTriggerScheduled            = "scheduled"
	EvalTriggerRollingUpdate        = "rolling-update"
	EvalTriggerDeploymentWatcher    = "deployment-watcher"
	EvalTriggerFailedFollowUp       = "failed-follow-up"
	EvalTriggerMaxPlans             = "max-plan-attempts"
	EvalTriggerRetryFailedAlloc     = "alloc-failure"
	EvalTriggerQueuedAllocs         = "queued-allocs"
	EvalTriggerPreemption           = "preemption"
	EvalTriggerScaling              = "job-scaling"
	EvalTriggerMaxDisconnectTimeout = "max-disconnect-timeout"
	EvalTriggerReconnect            = "reconnect"
)

// Deployment statuses.
const (
	DeploymentStatusRunning    = "running"
	DeploymentStatusPaused     = "paused"
	DeploymentStatusFailed     = "failed"
	DeploymentStatusSuccessful = "successful"
	DeploymentStatusCancelled  = "cancelled"
	DeploymentStatusPending    = "pending"
	DeploymentStatusBlocked    = "blocked"
	DeploymentStatusUnblocking = "unblocking"
)

// Constraint operands.
const (
	ConstraintEqual             = "="
	ConstraintNotEqual          = "!="
	ConstraintGreater           = ">"
	ConstraintGreaterEqual      = ">="
	ConstraintLess              = "<"
	ConstraintLessEqual         = "<="
	ConstraintRegex             = "regexp"
	ConstraintVersion           = "version"
	ConstraintSemver            = "semver"
	ConstraintSetContains       = "set_contains"
	ConstraintSetContainsAll    = "set_contains_all"
	ConstraintSetContainsAny    = "set_contains_any"
	ConstraintAttributeIsSet    = "is_set"
	ConstraintAttributeIsNotSet = "is_not_set"
	ConstraintDistinctHosts     = "distinct_hosts"
	ConstraintDistinctProperty  = "distinct_property"
)

// Scheduler algorithms (SchedulerConfiguration.SchedulerAlgorithm).
const (
	SchedulerAlgorithmBinpack = "binpack"
	SchedulerAlgorithmSpread  = "spread"
)

// Deployment status descriptions, as Nomad words them.
const (
	DeploymentDescriptionRunning               = "Deployment is running"
	DeploymentDescriptionRunningNeedsPromotion = "Deployment is running but requires manual promotion"
	DeploymentDescriptionRunningAutoPromotion  = "Deployment is running pending automatic promotion"
	DeploymentDescriptionPaused                = "Deployment is paused"
	DeploymentDescriptionSuccessful            = "Deployment completed successfully"
	DeploymentDescriptionStoppedJob            = "Cancelled because job is stopped"
	DeploymentDescriptionNewerJob              = "Cancelled due to newer version of job"
	DeploymentDescriptionFailedAllocations     = "Failed due to unhealthy allocations"
	DeploymentDescriptionProgressDeadline      = "Failed due to progress deadline"
	DeploymentDescriptionFailedByUser          = "Deployment marked as failed"
)

// What a group's disconnect.reconcile keeps when a disconnected node comes
// back with an allocation that was replaced meanwhile.
const (
	ReconcileBestScore       = "best_score"
	ReconcileKeepOriginal    = "keep_original"
	ReconcileKeepReplacement = "keep_replacement"
	ReconcileLongestRunning  = "longest_running"
)
