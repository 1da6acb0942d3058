package sdktest

import (
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk/abi"
)

// WantConfig fails tb unless err is the answer want describes to a
// configuration check (Harness.CheckConfig): want "" for an accepted
// configuration, otherwise text the refusal (abi.CodeConfigRefused) must
// contain.
func WantConfig(tb testing.TB, err error, want string) {
	tb.Helper()
	if want == "" {
		if err != nil {
			tb.Fatalf("refused: %v", err)
		}
		return
	}
	if abi.CodeOf(err) != abi.CodeConfigRefused || !strings.Contains(err.Error(), want) {
		tb.Fatalf("err = %v (code %d), want a refusal saying %q", err, abi.CodeOf(err), want)
	}
}
