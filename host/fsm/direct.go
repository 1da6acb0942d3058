package fsm

import "github.com/tinylib/msgp/msgp"

// ApplyDecoded applies a request message (an *ApplyPlanResultsRequest, an
// *EvalUpdateRequest, ...) at index in one transaction, exactly as Apply
// does for its encoded log entry, but without encoding one. It is for tools
// that own their store and need no replication: the scheduler benchmark
// compares against Nomad's in-memory harness, which writes its state store
// directly.
func (f *FSM) ApplyDecoded(index uint64, msg msgp.Unmarshaler) error {
	if err := checkShape(msg); err != nil {
		return err
	}
	return f.commit(index, msg)
}
