// Package runtime is the host side of Drover's plugin ABI. A Plugin is a
// pool of instances of one scheduler plugin; every transport (wasm,
// go-plugin, native) supplies instances that move encoded abi messages,
// and this package does the rest the same way for all of them: it keeps
// each instance's state mirror in step with deltas, answers the plugin's
// planner calls, and recycles instances that trap or grow.
package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/rs/zerolog"
)

// Errors.
var (
	// ErrPluginFailed: the plugin could not process the eval (its scheduler
	// returned an error, it trapped, or it broke the protocol).
	ErrPluginFailed = errors.New("runtime: plugin failed")
	// ErrClosed: the plugin was closed.
	ErrClosed = errors.New("runtime: plugin closed")
	// ErrConfigRefused: the plugin does not accept the configuration it
	// was to be loaded with (CheckConfig, ABI 1.7); the error's text
	// carries the plugin's reason.
	ErrConfigRefused = errors.New("runtime: plugin refused its configuration")
)

// Instance is one running instance of a plugin. Process is never called
// concurrently on one instance.
type Instance interface {
	// Process sends one encoded abi.ProcessRequest and returns the encoded
	// abi.ProcessResponse. host answers the plugin's planner calls. An
	// error means the instance is broken and must be closed.
	Process(ctx context.Context, req []byte, host plugin.HostFunc) ([]byte, error)
	Close(ctx context.Context) error
}

// Sizer is implemented by instances that can report their memory use, so
// the pool can recycle those past a high-water mark.
type Sizer interface {
	MemoryBytes() uint64
}

// Prober is implemented by instances that can end on their own between
// evals (a plugin process killed or crashed while idle): the pool starts a
// new instance rather than hand an eval to one that is gone.
type Prober interface {
	Alive() bool
}

// Idler is implemented by instances that have work to do between evals (a
// garbage-collected guest's collection). The pool calls Idle once an eval's
// answer is in, before the instance's next eval and off the eval's path;
// an error means the instance is broken and must be closed.
type Idler interface {
	Idle(ctx context.Context) error
}

// Factory makes instances of one plugin.
type Factory interface {
	Info() abi.Info
	NewInstance(ctx context.Context) (Instance, error)
	Close(ctx context.Context) error
}

// StateSource is a state snapshot that can bring a mirror to its index.
type StateSource interface {
	Index() uint64
	// Sync returns the sync from a mirror at index from (0: empty) to
	// Index; evals says whether the mirror holds evaluations.
	Sync(from uint64, evals bool) *abi.StateSync
}

// Planner is the host side of the planner operations for one evaluation.
type Planner interface {
	// SubmitPlan commits a plan. When only part of it was committed it
	// also returns a state at or past result.RefreshIndex.
	SubmitPlan(ctx context.Context, plan *sdk.Plan) (*sdk.PlanResult, StateSource, error)
	UpdateEval(ctx context.Context, eval *sdk.Evaluation) error
	CreateEval(ctx context.Context, eval *sdk.Evaluation) error
	ReblockEval(ctx context.Context, eval *sdk.Evaluation) error
}

// Collector is the host side of OpGarbageCollect, offered by planners of
// core evaluations.
type Collector interface {
	GarbageCollect(ctx context.Context, req *sdk.GCRequest) error
}

// Call is one evaluation handed to a plugin.
type Call struct {
	Eval    *sdk.Evaluation
	Token   string
	Now     time.Time
	State   StateSource
	Planner Planner
	Config  map[string]string
	Log     zerolog.Logger
	// Scratch marks a hypothetical state (a job plan's dry run): the
	// instance's mirror is not reused afterwards; its next call gets a full
	// sync.
	Scratch bool
}
