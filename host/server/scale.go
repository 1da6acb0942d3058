package server

import (
	"fmt"

	"github.com/drover-sched/drover/sdk"
)

// ScaleJob sets the count of one of a job's groups, as `nomad job scale`
// does: a new job version, evaluated by a job-scaling eval. A group with a
// scaling block must stay within its min and max.
func (s *Server) ScaleJob(namespace, jobID, group string, count int) (evalID string, index uint64, err error) {
	cur := s.store.Snapshot().Job(namespace, jobID)
	if cur == nil {
		return "", 0, fmt.Errorf("%w: job %q", ErrNotFound, jobID)
	}
	if cur.Stop {
		return "", 0, badRequest(fmt.Errorf("job %q is stopped and cannot be scaled", jobID))
	}
	if cur.Type == sdk.JobTypeSystem || cur.Type == sdk.JobTypeSysBatch {
		return "", 0, badRequest(fmt.Errorf("%s job %q has no count to scale", cur.Type, jobID))
	}
	if count < 0 {
		return "", 0, badRequest(fmt.Errorf("count must not be negative, got %d", count))
	}
	job := cur.Copy()
	tg := job.LookupTaskGroup(group)
	if tg == nil {
		return "", 0, fmt.Errorf("%w: group %q in job %q", ErrNotFound, group, jobID)
	}
	if p := tg.Scaling; p != nil && p.Enabled {
		if int64(count) < p.Min || (p.Max > 0 && int64(count) > p.Max) {
			return "", 0, badRequest(fmt.Errorf("group %q: count %d is outside the scaling policy's range [%d, %d]", group, count, p.Min, p.Max))
		}
	}
	tg.Count = count
	return s.RegisterJobOpts(job, RegisterOptions{trigger: sdk.EvalTriggerScaling})
}
