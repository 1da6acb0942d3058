package abi

import (
	"errors"
	"fmt"

	"github.com/drover-sched/drover/sdk"
)

// Op is a planner operation a plugin calls on the host.
type Op uint32

// Operations. Each is a wasm host import of the same name in module
// "drover" and a method of the go-plugin Host service.
const (
	OpSubmitPlan  Op = 1 // PlanRequest -> PlanResponse
	OpUpdateEval  Op = 2 // EvalRequest -> Status
	OpCreateEval  Op = 3 // EvalRequest -> Status
	OpReblockEval Op = 4 // EvalRequest -> Status
	OpLog         Op = 5 // LogRecord -> nothing
	// OpGarbageCollect (ABI 1.1) is offered to core evaluations only.
	OpGarbageCollect Op = 6 // GCRequest -> Status
)

var opNames = map[Op]string{
	OpSubmitPlan: "submit_plan", OpUpdateEval: "update_eval", OpCreateEval: "create_eval",
	OpReblockEval: "reblock_eval", OpLog: "log", OpGarbageCollect: "garbage_collect",
}

// String returns the op's import name.
func (o Op) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	return fmt.Sprintf("op(%d)", uint32(o))
}

// Ops lists every operation of this ABI version.
func Ops() []Op {
	return []Op{OpSubmitPlan, OpUpdateEval, OpCreateEval, OpReblockEval, OpLog, OpGarbageCollect}
}

// Code is an error code carried across the boundary in place of an error
// string, so that callers can test it.
type Code int32

// Codes.
const (
	CodeOK          Code = 0
	CodeStaleToken  Code = 1  // sdk.ErrStaleToken
	CodePlanInvalid Code = 2  // sdk.ErrPlanInvalid
	CodeInvalidEval Code = 3  // sdk.ErrInvalidEval
	CodeUnavailable Code = 4  // sdk.ErrUnavailable
	CodeDeadline    Code = 5  // sdk.ErrDeadline
	CodeDecode      Code = 6  // a message could not be decoded
	CodeUnknownOp   Code = 7  // the host does not know the operation
	CodeScheduler   Code = 8  // the scheduler returned an error
	CodeInternal    Code = 9  // anything else
	CodeOutOfSync   Code = 10 // a delta did not start at the mirror's index; send a full sync
	// CodeConfigRefused (ABI 1.7) answers a ConfigRequest whose
	// configuration the plugin does not accept; the message says why.
	CodeConfigRefused Code = 11
)

var codeErrs = map[Code]error{
	CodeStaleToken: sdk.ErrStaleToken, CodePlanInvalid: sdk.ErrPlanInvalid,
	CodeInvalidEval: sdk.ErrInvalidEval, CodeUnavailable: sdk.ErrUnavailable,
	CodeDeadline: sdk.ErrDeadline,
}

// Error is an error that crossed the boundary.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the sdk sentinel the code stands for, if any.
func (e *Error) Unwrap() error { return codeErrs[e.Code] }

// Err returns nil for CodeOK and an *Error otherwise.
func Err(c Code, msg string) error {
	if c == CodeOK {
		return nil
	}
	if msg == "" {
		msg = fmt.Sprintf("abi: code %d", c)
	}
	return &Error{Code: c, Message: msg}
}

// CodeOf returns the code that carries err across the boundary.
func CodeOf(err error) Code {
	if err == nil {
		return CodeOK
	}
	var ae *Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	for c, s := range codeErrs {
		if errors.Is(err, s) {
			return c
		}
	}
	return CodeInternal
}
