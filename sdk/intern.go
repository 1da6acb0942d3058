package sdk

import "github.com/tinylib/msgp/msgp"

// readString decodes a string as msgp.ReadStringBytes does, but returns
// the program's own copy of the few values most decoded strings take
// (statuses, the default namespace and pool, scorer names) instead of
// allocating another: a decoded placement held about ten of them.
// model_gen.go calls it in place of msgp.ReadStringBytes
// (internal/msgprewrite -intern rewrites the generated code).
func readString(b []byte) (string, []byte, error) {
	v, o, err := msgp.ReadStringZC(b)
	return intern(v), o, err
}

// intern returns v as a string, without allocating when it is one of the
// common values. The switch compares v in place.
func intern(v []byte) string {
	switch string(v) {
	case "":
		return ""
	case DefaultNamespace: // also DefaultNodePool
		return DefaultNamespace
	case AllocDesiredStatusRun:
		return AllocDesiredStatusRun
	case AllocDesiredStatusStop:
		return AllocDesiredStatusStop
	case AllocDesiredStatusEvict:
		return AllocDesiredStatusEvict
	case AllocClientStatusPending: // also the pending job, eval and deployment statuses
		return AllocClientStatusPending
	case AllocClientStatusRunning:
		return AllocClientStatusRunning
	case AllocClientStatusComplete:
		return AllocClientStatusComplete
	case AllocClientStatusFailed:
		return AllocClientStatusFailed
	case AllocClientStatusLost:
		return AllocClientStatusLost
	case AllocClientStatusUnknown:
		return AllocClientStatusUnknown
	case NodeStatusReady:
		return NodeStatusReady
	case NodeSchedulingEligible:
		return NodeSchedulingEligible
	case JobTypeService:
		return JobTypeService
	case JobTypeBatch:
		return JobTypeBatch
	case JobTypeSystem:
		return JobTypeSystem
	case JobTypeSysBatch:
		return JobTypeSysBatch
	case EvalTriggerJobRegister:
		return EvalTriggerJobRegister
	// The scorer names of every placement's metric (sdk/rank).
	case "binpack":
		return "binpack"
	case "job-anti-affinity":
		return "job-anti-affinity"
	case "node-reschedule-penalty":
		return "node-reschedule-penalty"
	case "node-affinity":
		return "node-affinity"
	case "allocation-spread":
		return "allocation-spread"
	case "normalized-score":
		return "normalized-score"
	}
	return string(v)
}
