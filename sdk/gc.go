package sdk

import (
	"fmt"
	"time"
)

// Core evaluations: the host's timers create them (TriggeredBy "scheduled",
// Type JobTypeCore) and the core scheduler plugin processes them. Their
// JobID names the kind of collection, in CoreJobNamespace.
const (
	// CoreJobNamespace is the namespace of core evaluations, Nomad's "-":
	// no job can be registered in it, so a user's job named like a kind of
	// collection ("eval-gc") neither shares its evals with the collector's
	// nor waits behind them in the broker.
	CoreJobNamespace = "-"

	CoreJobEvalGC       = "eval-gc"
	CoreJobJobGC        = "job-gc"
	CoreJobNodeGC       = "node-gc"
	CoreJobDeploymentGC = "deployment-gc"
	// CoreJobForceGC collects everything terminal, whatever its age.
	CoreJobForceGC = "force-gc"
)

// Core scheduler configuration keys. The host fills them from its own
// configuration (Go duration strings) unless the core plugin's config sets
// them.
const (
	ConfigEvalGCThreshold       = "eval_gc_threshold"
	ConfigBatchEvalGCThreshold  = "batch_eval_gc_threshold"
	ConfigJobGCThreshold        = "job_gc_threshold"
	ConfigNodeGCThreshold       = "node_gc_threshold"
	ConfigDeploymentGCThreshold = "deployment_gc_threshold"
)

// GCThresholds are how long ago objects must have last changed to be
// collected. BatchEval holds the evals of batch jobs (and their
// allocations) in eval GC; job GC holds a job's evals and allocations to
// Job. A forced collection has none (all zero).
type GCThresholds struct {
	Eval, BatchEval, Job, Node, Deployment time.Duration
}

// DefaultGCThresholds are Nomad's defaults, which the host's
// configuration starts from: evals 1h (those of batch jobs 24h), jobs 4h,
// nodes 24h, deployments 1h.
func DefaultGCThresholds() GCThresholds {
	return GCThresholds{Eval: time.Hour, BatchEval: 24 * time.Hour, Job: 4 * time.Hour, Node: 24 * time.Hour, Deployment: time.Hour}
}

// GCThresholdsFrom reads the thresholds from a core scheduler's
// configuration: the Config*GCThreshold keys, as Go durations. A key the
// configuration lacks keeps its DefaultGCThresholds value: a host older
// than a key (batch_eval_gc_threshold came later than the others) does
// not set it, and a core plugin newer than its host must still collect.
func GCThresholdsFrom(config map[string]string) (GCThresholds, error) {
	th := DefaultGCThresholds()
	for _, f := range []struct {
		key string
		dst *time.Duration
	}{
		{ConfigEvalGCThreshold, &th.Eval}, {ConfigBatchEvalGCThreshold, &th.BatchEval}, {ConfigJobGCThreshold, &th.Job},
		{ConfigNodeGCThreshold, &th.Node}, {ConfigDeploymentGCThreshold, &th.Deployment},
	} {
		v, ok := config[f.key]
		if !ok {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return th, fmt.Errorf("%s = %q is not a duration", f.key, v)
		}
		*f.dst = d
	}
	return th, nil
}

// GCRequest asks the host to delete objects a core scheduler found old
// enough. The host deletes only what is safe to delete (terminal evals and
// allocations, stopped jobs with nothing live, down nodes with nothing
// live, finished deployments) and rejects the whole request otherwise.
type GCRequest struct {
	Evals       []string
	Allocs      []string
	Jobs        []NamespacedID
	Nodes       []string
	Deployments []string
}

// Empty reports whether the request deletes nothing.
func (r *GCRequest) Empty() bool {
	return r == nil || len(r.Evals)+len(r.Allocs)+len(r.Jobs)+len(r.Nodes)+len(r.Deployments) == 0
}

// Collector is the planner capability of the core scheduler: the host
// offers it (ctx.Planner implements it) only for core evaluations.
type Collector interface {
	GarbageCollect(req *GCRequest) error
}

// EvalState is implemented by a State that mirrors evaluations, which a
// plugin asks for (plugin.Info.MirrorEvals). The core scheduler needs it.
type EvalState interface {
	// Evals returns every evaluation, ordered by ID.
	Evals() []*Evaluation
	Eval(id string) *Evaluation
}

// JobGCEligible reports whether a job is over, so that job GC may collect
// it once it and its evals and allocations are old enough, as Nomad's
// jobs-by-GC index (state.jobIsGCable) has it: periodic and parameterized
// templates when stopped; other jobs when dead and stopped, or dead batch
// and sysbatch jobs, which end on their own.
func JobGCEligible(j *Job) bool {
	// As jobIsGCable, a periodic block counts only when enabled (a job
	// with a disabled one is running, as any periodic job, until stopped).
	if (j.IsPeriodic() && j.Periodic.Enabled) || j.IsParameterized() {
		return j.Stop
	}
	return j.Status == JobStatusDead && (j.Stop || j.Type == JobTypeBatch || j.Type == JobTypeSysBatch)
}
