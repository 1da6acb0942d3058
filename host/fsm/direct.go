package fsm

import (
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// ApplyPlanResults commits plan results at index in one transaction, as
// Apply does for an ApplyPlanResultsRequest entry, without encoding a log
// entry. It is for tools that own their store and need no replication
// (benchmarks comparing against Nomad's in-memory harness).
func (f *FSM) ApplyPlanResults(index uint64, req *ApplyPlanResultsRequest) error {
	var fx effects
	if err := f.store.Write(index, func(tx *state.Txn) error { return applyPlanResults(tx, req, &fx) }); err != nil {
		return err
	}
	f.notifyEffects(&fx, index)
	return nil
}

// ApplyEvals upserts evaluations at index in one transaction, as Apply does
// for an EvalUpdateRequest entry, without encoding a log entry.
func (f *FSM) ApplyEvals(index uint64, evals []*sdk.Evaluation) error {
	var fx effects
	if err := f.store.Write(index, func(tx *state.Txn) error { return upsertEvals(tx, evals, &fx) }); err != nil {
		return err
	}
	f.notifyEffects(&fx, index)
	return nil
}

func (f *FSM) notifyEffects(fx *effects, index uint64) {
	if f.notify == nil {
		return
	}
	if len(fx.evals) > 0 {
		f.notify.EvalsCommitted(fx.evals)
	}
	for class := range fx.classes {
		f.notify.CapacityChanged(class, index)
	}
}
