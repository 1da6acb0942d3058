//go:build !unix

package goplugin

import (
	"os"
	"os/exec"

	"github.com/drover-sched/drover/sdk/plugin/grpcwire"
)

// offerEvalSocket offers nothing here: evals go over gRPC.
func offerEvalSocket(*exec.Cmd) (*grpcwire.EvalSocket, *os.File, error) { return nil, nil, nil }
