package verify

import (
	"errors"
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// An eval a plugin writes, created, updated or reblocked, is refused over
// MaxEvalBytes, and kept just under it.
func TestEval_SizeIsBounded(t *testing.T) {
	proc := &sdk.Evaluation{ID: "e1", Namespace: "default", JobID: "web", Status: sdk.EvalStatusPending}
	sized := func(id, status string, pad int) *sdk.Evaluation {
		return &sdk.Evaluation{ID: id, Namespace: "default", JobID: "web", Status: status, TriggeredBy: sdk.EvalTriggerQueuedAllocs,
			PreviousEval: "e1", StatusDescription: strings.Repeat("x", pad)}
	}
	calls := map[string]func(pad int) error{
		"update": func(pad int) error {
			_, err := EvalUpdate(proc, sized("e1", sdk.EvalStatusComplete, pad), nil)
			return err
		},
		"create": func(pad int) error {
			_, err := NewEval(proc, sized("e2", sdk.EvalStatusBlocked, pad))
			return err
		},
		"reblock": func(pad int) error {
			blocked := &sdk.Evaluation{ID: "e1", Namespace: "default", JobID: "web", Status: sdk.EvalStatusBlocked}
			_, err := Reblock(blocked, blocked, sized("e1", sdk.EvalStatusBlocked, pad))
			return err
		},
	}
	for name, call := range calls {
		if err := call(MaxEvalBytes - 1024); err != nil {
			t.Errorf("%s under the limit: %v", name, err)
		}
		if err := call(MaxEvalBytes); !errors.Is(err, sdk.ErrInvalidEval) || !strings.Contains(err.Error(), "over the limit") {
			t.Errorf("%s over the limit: %v", name, err)
		}
	}
}
