package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/plan"
	"github.com/drover-sched/drover/sdk"
)

// hostErr gives plugins the SDK's sentinels, each named once in the
// message: an invalid plan's error already is sdk.ErrPlanInvalid.
func TestHostErr_NamesEachSentinelOnce(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want error
	}{
		{fmt.Errorf("%w: unknown node n1", sdk.ErrPlanInvalid), sdk.ErrPlanInvalid},
		{fmt.Errorf("%w: eval e1", plan.ErrStaleToken), sdk.ErrStaleToken},
		{fmt.Errorf("apply: %w", context.DeadlineExceeded), sdk.ErrDeadline},
		{ErrNotLeader, sdk.ErrUnavailable},
	} {
		got := hostErr(tc.err)
		if !errors.Is(got, tc.want) || strings.Count(got.Error(), tc.want.Error()) != 1 {
			t.Errorf("hostErr(%v) = %v, want %v named once", tc.err, got, tc.want)
		}
	}
}
