package server

import (
	"fmt"
	"strings"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// RevertJob registers a kept version of a job again, as `nomad job
// revert` does: the job's spec becomes that version's (a new version),
// evaluated by a job-register eval. With enforcePrior set, the revert
// happens only while the job's current version is *enforcePrior.
func (s *Server) RevertJob(namespace, jobID string, version uint64, enforcePrior *uint64) (evalID string, index uint64, err error) {
	snap := s.store.Snapshot()
	cur := snap.Job(namespace, jobID)
	if cur == nil {
		return "", 0, fmt.Errorf("%w: job %q", ErrNotFound, jobID)
	}
	if enforcePrior != nil && cur.Version != *enforcePrior {
		return "", 0, fmt.Errorf("%w: job %q is at version %d, not %d", ErrConflict, jobID, cur.Version, *enforcePrior)
	}
	if version == cur.Version {
		return "", 0, badRequest(fmt.Errorf("job %q is at version %d already", jobID, version))
	}
	v := snap.JobVersion(namespace, jobID, version)
	if v == nil {
		var kept []uint64
		for _, k := range snap.JobVersions(namespace, jobID) {
			kept = append(kept, k.Version)
		}
		return "", 0, fmt.Errorf("%w: version %d of job %q (kept versions: %v)", ErrNotFound, version, jobID, kept)
	}
	// The prior version is enforced when the revert applies, not only here.
	// It keeps that version's source, as Nomad's revert does.
	opts := RegisterOptions{trigger: sdk.EvalTriggerJobRegister, Submission: snap.JobSubmission(namespace, jobID, version)}
	if enforcePrior != nil {
		opts.EnforceIndex, opts.JobModifyIndex = true, cur.JobModifyIndex
	}
	return s.RegisterJobOpts(manualRevert(v), opts)
}

// manualRevert returns the job a revert to kept version v registers: the
// version as it was, Stop included, as Nomad's Job.Revert copies it (a
// revert to a stopped version stops the job). Unlike an auto-revert
// (revertTo), which goes back to a version that ran, a revert is the
// user's choice of spec, and Stop is part of it. Stable is not copied:
// the new version is not stable until its own deployment succeeds, as
// for an auto-revert (docs/api.md, "Differences from Nomad").
func manualRevert(v *sdk.Job) *sdk.Job {
	j := v.Copy()
	j.Stable = false
	return j
}

// SetJobStability marks a kept version of a job stable or not, as Nomad's
// PUT /v1/job/:id/stable: a stable version is what a failed deployment
// with auto_revert goes back to.
func (s *Server) SetJobStability(namespace, jobID string, version uint64, stable bool) (uint64, error) {
	snap := s.store.Snapshot()
	if snap.Job(namespace, jobID) == nil {
		return 0, fmt.Errorf("%w: job %q", ErrNotFound, jobID)
	}
	if snap.JobVersion(namespace, jobID, version) == nil {
		return 0, fmt.Errorf("%w: version %d of job %q", ErrNotFound, version, jobID)
	}
	return s.Apply(fsm.JobStabilityRequestType, &fsm.JobStabilityRequest{Namespace: namespace, JobID: jobID,
		Version: version, Stable: stable})
}

// maxVersionTagDescription bounds a version tag's description.
const maxVersionTagDescription = 1000

// TagJobVersion tags a kept version of a job with name (latest: its
// current version), as Nomad 1.9's version tags: a tagged version is kept
// whatever the number of versions after it, until untagged. A name tags
// one version of the job (a 400 for another's); tagging a tagged version
// replaces its tag. It returns the tag as stored and the write's index.
func (s *Server) TagJobVersion(namespace, jobID, name string, version uint64, latest bool, description string) (*state.JobVersionTag, uint64, error) {
	if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "/") {
		return nil, 0, badRequest(fmt.Errorf("invalid tag name %q: it must be non-empty, without a slash", name))
	}
	if len(description) > maxVersionTagDescription {
		return nil, 0, badRequest(fmt.Errorf("tag description longer than %d", maxVersionTagDescription))
	}
	if latest {
		cur := s.store.Snapshot().Job(namespace, jobID)
		if cur == nil {
			return nil, 0, fmt.Errorf("%w: job %q", ErrNotFound, jobID)
		}
		version = cur.Version
	}
	tag := &state.JobVersionTag{Name: name, Description: description, TaggedTime: s.now().UnixNano(), Version: version}
	index, err := s.Apply(fsm.JobVersionTagRequestType, &fsm.JobVersionTagRequest{Namespace: namespace, JobID: jobID, Name: name, Tag: tag})
	return tag, index, err
}

// UntagJobVersion removes a job's version tag; the version it tagged goes
// if it is no longer among the versions kept untagged.
func (s *Server) UntagJobVersion(namespace, jobID, name string) (uint64, error) {
	return s.Apply(fsm.JobVersionTagRequestType, &fsm.JobVersionTagRequest{Namespace: namespace, JobID: jobID, Name: name})
}
