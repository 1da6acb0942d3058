package state

import (
	"fmt"
	"slices"
	"strings"
)

// TagJobVersion tags kept version v of job ns/id (Nomad 1.9's version
// tags). A version has one tag at most: tagging it again replaces its
// tag. A name already tagging another version of the job is refused
// (ErrInUse); a version not kept, or a job that does not exist, is
// ErrNotFound.
func (t *Txn) TagJobVersion(ns, id string, tag *JobVersionTag) error {
	if t.JobVersion(ns, id, tag.Version) == nil {
		return fmt.Errorf("%w: job %q version %d not found", ErrNotFound, id, tag.Version)
	}
	old := t.JobVersionTags(ns, id)
	if other := old.Named(tag.Name); other != nil && other.Version != tag.Version {
		return Refuse(ErrInUse, "tag %q already exists on a different version of job %q", tag.Name, id)
	}
	next := &JobVersionTags{Namespace: ns, JobID: id, ModifyIndex: t.index}
	if old != nil {
		for _, o := range old.Tags {
			if o.Version != tag.Version {
				next.Tags = append(next.Tags, o)
			}
		}
	}
	c := *tag
	next.Tags = append(next.Tags, &c)
	slices.SortFunc(next.Tags, func(a, b *JobVersionTag) int { return strings.Compare(a.Name, b.Name) })
	return t.insert(TableVersionTags, next)
}

// UntagJobVersion removes the tag named name from job ns/id
// (ErrNotFound if there is none). The version it tagged is then kept only
// if it is among the versions kept untagged.
func (t *Txn) UntagJobVersion(ns, id, name string) error {
	old := t.JobVersionTags(ns, id)
	if old.Named(name) == nil {
		return fmt.Errorf("%w: tag %q of job %q", ErrNotFound, name, id)
	}
	next := &JobVersionTags{Namespace: ns, JobID: id, ModifyIndex: t.index}
	for _, o := range old.Tags {
		if o.Name != name {
			next.Tags = append(next.Tags, o)
		}
	}
	// Kept without tags rather than deleted: its ModifyIndex is the index
	// a blocking read of the job's versions answers with, which must not
	// go back when the last tag goes (the purge deletes it).
	if err := t.insert(TableVersionTags, next); err != nil {
		return err
	}
	return t.pruneJobVersions(ns, id)
}

// RestoreJobVersionTags inserts a job's version tags as a snapshot holds
// them.
func (t *Txn) RestoreJobVersionTags(ts *JobVersionTags) error { return t.insert(TableVersionTags, ts) }

// pruneJobVersions deletes the versions of job ns/id, and their
// submissions, past the JobTrackedVersions newest untagged ones; tagged
// versions are kept.
func (t *Txn) pruneJobVersions(ns, id string) error {
	tags := t.JobVersionTags(ns, id)
	untagged := 0
	for _, v := range t.JobVersions(ns, id) {
		if tags.Of(v.Version) != nil {
			continue
		}
		if untagged++; untagged <= JobTrackedVersions {
			continue
		}
		if err := t.delete(TableJobVersions, v); err != nil {
			return err
		}
		if sub := t.JobSubmission(v.Namespace, v.ID, v.Version); sub != nil {
			if err := t.delete(TableSubmissions, sub); err != nil {
				return err
			}
		}
	}
	return nil
}

// JobVersionTags returns the version tags of job ns/id, nil if it was
// never tagged (empty once its tags are removed).
func (r reader) JobVersionTags(ns, id string) *JobVersionTags {
	return first[JobVersionTags](r, TableVersionTags, "id", ns, id)
}

// AllJobVersionTags returns every job's version tags.
func (r reader) AllJobVersionTags() []*JobVersionTags {
	return all[JobVersionTags](r, TableVersionTags, "id")
}
