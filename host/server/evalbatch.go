package server

import (
	"context"
	"errors"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/sdk"
)

// Eval update coalescing. Every worker ends each eval with an eval update
// (complete, blocked, a follow-up eval); one raft entry each would make the
// raft log, not the schedulers, the limit. Updates from all workers are
// gathered into one EvalUpdateRequest while the previous ones commit, so a
// busy leader writes few, large entries and an idle one writes at once.
const (
	// evalBatchMax bounds the evals in one entry.
	evalBatchMax = 1024
	// evalBatchInflight is how many coalesced entries may be committing at
	// once; raft writes concurrent entries with one fsync.
	evalBatchInflight = 4
)

// errBatcherStopped is returned for updates submitted after leadership
// ended.
var errBatcherStopped = errors.New("server: eval updates are not accepted (leadership ended)")

type evalUpdate struct {
	evals []*sdk.Evaluation
	done  chan error
}

// evalBatcher coalesces eval updates into raft entries.
type evalBatcher struct {
	s    *Server
	reqs chan *evalUpdate
}

func newEvalBatcher(s *Server) *evalBatcher {
	return &evalBatcher{s: s, reqs: make(chan *evalUpdate, evalBatchMax)}
}

// apply commits evals, coalesced with other workers' updates, and returns
// once they are committed (or failed).
func (b *evalBatcher) apply(ctx context.Context, evals []*sdk.Evaluation) error {
	u := &evalUpdate{evals: evals, done: make(chan error, 1)}
	select {
	case b.reqs <- u:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-u.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run commits coalesced entries until ctx ends; the leader runs
// evalBatchInflight of them.
func (b *evalBatcher) run(ctx context.Context) {
	for {
		var first *evalUpdate
		select {
		case <-ctx.Done():
			b.drain()
			return
		case first = <-b.reqs:
		}
		batch := []*evalUpdate{first}
		n := len(first.evals)
	gather:
		for n < evalBatchMax {
			select {
			case u := <-b.reqs:
				batch = append(batch, u)
				n += len(u.evals)
			default:
				break gather
			}
		}
		evals := make([]*sdk.Evaluation, 0, n)
		for _, u := range batch {
			evals = append(evals, u.evals...)
		}
		_, err := b.s.Apply(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: evals})
		for _, u := range batch {
			u.done <- err
		}
	}
}

// drain fails what is left when leadership ends.
func (b *evalBatcher) drain() {
	for {
		select {
		case u := <-b.reqs:
			u.done <- errBatcherStopped
		default:
			return
		}
	}
}
