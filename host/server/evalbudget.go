package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/verify"
	"golang.org/x/time/rate"
)

// Plugins create evals (blocked evals, follow-ups, the next eval of a
// staggered update), and one delivery may create verify.MaxCreatedEvals.
// That bounds one generation, not a lineage: a plugin whose every eval
// creates evals of its job grows without end, a thousand-fold per
// generation, or by hundreds a second even one eval at a time. So each
// job's plugins also draw on a budget for the pending evals they create:
// createdEvalBurst at once, then createdEvalRate a second. Legitimate
// lineages stay far below: a staggered update creates one eval per
// stagger, a reconciler one follow-up per time window of its reschedules.
// Blocked evals are not charged (one per job is kept, the others
// canceled). A draw for an eval whose write then fails is not given back:
// the budget errs on the side of the state.
const (
	createdEvalBurst = verify.MaxCreatedEvals
	createdEvalRate  = rate.Limit(1)
	// evalBudgetSweep is how many jobs' budgets are tracked before full
	// ones (as good as none) are dropped.
	evalBudgetSweep = 1024
)

// evalBudget holds the budget of each job whose plugins created evals
// lately. It is the server's own: each server's workers draw on their
// own, so a cluster of n servers allows up to n times the rate.
type evalBudget struct {
	mu   sync.Mutex
	jobs map[sdk.NamespacedID]*rate.Limiter
}

func newEvalBudget() *evalBudget {
	return &evalBudget{jobs: map[sdk.NamespacedID]*rate.Limiter{}}
}

// take draws one created eval of job at now, or says why it may not.
func (b *evalBudget) take(job sdk.NamespacedID, now time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.jobs[job]
	if l == nil {
		if len(b.jobs) >= evalBudgetSweep {
			// O(jobs tracked), once per new job past the sweep size.
			for id, o := range b.jobs {
				if o.TokensAt(now) >= createdEvalBurst {
					delete(b.jobs, id)
				}
			}
		}
		l = rate.NewLimiter(createdEvalRate, createdEvalBurst)
		b.jobs[job] = l
	}
	if !l.AllowN(now, 1) {
		return fmt.Errorf("%w: the plugins of job %q created evals faster than %d at once and then %v a second",
			sdk.ErrInvalidEval, job.ID, createdEvalBurst, float64(createdEvalRate))
	}
	return nil
}
