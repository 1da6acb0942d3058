package abi

import "fmt"

// The ABI version this package speaks. Minor versions only add: a host that
// knows major M accepts any minor of M.
//
// 1.1 added OpGarbageCollect, Info.MirrorEvals and evaluations in
// StateSync. 1.2 added PlanResponse.Whole and StateSync.Kept: a plugin
// keeps the allocations of a wholly committed plan, so that neither the
// plan's result nor the next sync carries them back. 1.3 added
// StateSync.JobStatuses: a job whose specification the plugin holds comes
// back without it (StateSync.CompactJobs). 1.4 added
// ProcessRequest.HostABI and ProcessResponse.UpdateEval: the eval's final
// update rides the response instead of a call of its own. 1.5 added the
// optional wasm export drover_idle, which a host that declares 1.5 calls
// between evals, off their path: a guest may leave its housekeeping (a
// garbage collection) to it. 1.6 added the go-plugin eval socket: a host
// hands a go-plugin process one end of a socket pair (grpcwire,
// EvalSocketEnv) and sends the evals of a plugin that declares 1.6 there
// instead of over gRPC. 1.7 added the configuration check: a host asks a
// plugin that declares 1.7, as it loads it, whether it accepts its
// configuration (ConfigRequest, answered by a Status whose code is
// CodeConfigRefused when it does not), through the optional wasm export
// drover_check_config or the go-plugin method CheckConfig. 1.8 added
// PlanRequest.Shared and Placed: a plugin whose host declares 1.8 may send
// its plan's new allocations as templates and the fields each has of its
// own. 1.9 added AllocatedResources.TaskLifecycles: an allocation uses its
// tasks folded by when they run (sdk.TaskPhases), not their sum. 1.10
// added PlanRequest.NodesAvailable: a plugin whose host declares 1.10 may
// send the NodesAvailable its placements share once per plan. 1.11 added
// StateSync.CSIVolumes and DeletedCSIVolumes: a host that declares 1.11
// sends the CSI volumes, with their claims, to a plugin that does.
const (
	Major = 1
	Minor = 11
)

// Version is a packed ABI version: major in the high 16 bits, minor in the
// low 16. It is what a wasm plugin's drover_abi_version export returns.
type Version uint32

// Current is the version this package speaks.
const Current = Version(Major<<16 | Minor)

// MakeVersion packs a version.
func MakeVersion(major, minor uint16) Version { return Version(uint32(major)<<16 | uint32(minor)) }

// Major returns the major version.
func (v Version) Major() uint16 { return uint16(v >> 16) }

// Minor returns the minor version.
func (v Version) Minor() uint16 { return uint16(v) }

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major(), v.Minor()) }

// KeepsPlans reports whether a plugin that declares v keeps its wholly
// committed plans (PlanResponse.Whole, StateSync.Kept).
func (v Version) KeepsPlans() bool { return v.Major() == 1 && v.Minor() >= 2 }

// TakesJobStatuses reports whether a plugin that declares v understands
// StateSync.JobStatuses.
func (v Version) TakesJobStatuses() bool { return v.Major() == 1 && v.Minor() >= 3 }

// TakesDeferredUpdates reports whether a host that declares v applies
// ProcessResponse.UpdateEval.
func (v Version) TakesDeferredUpdates() bool { return v.Major() == 1 && v.Minor() >= 4 }

// CallsIdle reports whether a host that declares v calls a wasm plugin's
// drover_idle export after each drover_process, before the next.
func (v Version) CallsIdle() bool { return v.Major() == 1 && v.Minor() >= 5 }

// TakesEvalSocket reports whether a go-plugin plugin that declares v
// serves its evals on the eval socket its host hands it.
func (v Version) TakesEvalSocket() bool { return v.Major() == 1 && v.Minor() >= 6 }

// ChecksConfig reports whether a plugin that declares v can be asked to
// check its configuration when it is loaded (ConfigRequest). A host must
// not ask an older plugin, which has no way to answer.
func (v Version) ChecksConfig() bool { return v.Major() == 1 && v.Minor() >= 7 }

// TakesPlaced reports whether a host that declares v expands
// PlanRequest.Placed.
func (v Version) TakesPlaced() bool { return v.Major() == 1 && v.Minor() >= 8 }

// TakesNodesAvailable reports whether a host that declares v fills the
// metrics of PlanRequest.Placed from PlanRequest.NodesAvailable.
func (v Version) TakesNodesAvailable() bool { return v.Major() == 1 && v.Minor() >= 10 }

// TakesCSIVolumes reports whether a plugin of version v mirrors CSI
// volumes (StateSync.CSIVolumes).
func (v Version) TakesCSIVolumes() bool { return v.Major() == 1 && v.Minor() >= 11 }

// SupportedMajors are the majors a host built from this package runs.
var SupportedMajors = []uint16{1}

// CheckVersion returns nil if a host built from this package can run a
// plugin that declares v, and an error that says why not otherwise.
func CheckVersion(v Version) error {
	for _, m := range SupportedMajors {
		if v.Major() == m {
			return nil
		}
	}
	return fmt.Errorf("abi: plugin declares ABI %s; this host supports major version(s) %v", v, SupportedMajors)
}
