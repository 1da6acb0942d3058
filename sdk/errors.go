package sdk

import "errors"

// Errors the Planner returns. They cross the plugin boundary as codes
// (abi.Code), so errors.Is works in every runtime.
var (
	// ErrStaleToken: the eval is no longer outstanding with this worker (the
	// nack timeout fired, or the eval was canceled). The scheduler should
	// return; its work is discarded.
	ErrStaleToken = errors.New("sdk: evaluation token is no longer outstanding")
	// ErrPlanInvalid: the plan failed validation and nothing was applied.
	ErrPlanInvalid = errors.New("sdk: plan rejected as invalid")
	// ErrInvalidEval: an eval passed to the planner is malformed.
	ErrInvalidEval = errors.New("sdk: invalid evaluation")
	// ErrUnavailable: the host is shutting down or lost leadership.
	ErrUnavailable = errors.New("sdk: host unavailable")
	// ErrDeadline: the eval's deadline passed.
	ErrDeadline = errors.New("sdk: evaluation deadline exceeded")
)
