//go:build unix

package goplugin

import (
	"context"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/goplugin/goplugintest"
	"github.com/drover-sched/drover/runtime/runtimetest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/rs/zerolog"
)

// TestGoPlugin_EvalsTakeTheEvalSocketFromABI16: a plugin that declares 1.6
// gets its evals on the eval socket; one that declares less (here the same
// binary, its declaration lowered) gets them over gRPC. Both place.
func TestGoPlugin_EvalsTakeTheEvalSocketFromABI16(t *testing.T) {
	path := goplugintest.Build(t, "./plugins/service")
	for _, tc := range []struct {
		name   string
		abi    abi.Version
		socket bool
	}{
		{"1.6", abi.Current, true},
		{"1.5", abi.Version(1<<16 | 5), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Load(context.Background(), path, DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if abi.Version(f.info.ABI) != abi.Current {
				t.Fatalf("plugin declares %s, want %s", abi.Version(f.info.ABI), abi.Current)
			}
			f.info.ABI = uint32(tc.abi)
			var used []bool
			p := runtime.NewPlugin(&spy{Factory: f, used: &used}, runtime.DefaultPoolConfig(1), zerolog.Nop())
			defer p.Close(context.Background())
			h := sdktest.New()
			h.UpsertNode(sdktest.Node("n1", 4000, 8192))
			job := sdktest.Job("web", 2)
			h.UpsertJob(job)
			if err := runtimetest.Process(p, h, h.RegisterEval(job), 30*time.Second); err != nil {
				t.Fatal(err)
			}
			if len(h.Updated) != 1 || h.Updated[0].Status != sdk.EvalStatusComplete || len(h.AllocsByJob(job.Namespace, job.ID)) != 2 {
				t.Fatalf("updates %+v, %d allocations", h.Updated, len(h.AllocsByJob(job.Namespace, job.ID)))
			}
			if len(used) != 1 || used[0] != tc.socket {
				t.Fatalf("eval socket used %v, want %v", used, tc.socket)
			}
		})
	}
}

// spy records, for each instance it starts, whether its evals take the
// eval socket.
type spy struct {
	*Factory
	used *[]bool
}

func (s *spy) NewInstance(ctx context.Context) (runtime.Instance, error) {
	inst, err := s.Factory.NewInstance(ctx)
	if err == nil {
		*s.used = append(*s.used, inst.(*instance).takesEvalSocket())
	}
	return inst, err
}
