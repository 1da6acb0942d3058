package state

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// Tagged versions are kept beyond the JobTrackedVersions newest untagged
// ones, with their submissions; an untagged version goes as soon as it is
// no longer among those; a name tags one version, a version has one tag;
// a purge takes the tags with the job (Nomad 1.9's version tags).
func TestJobVersionTags_KeepTaggedVersions(t *testing.T) {
	s, _ := NewStore()
	write := writer(t, s)
	count := 0
	register := func(n int) {
		t.Helper()
		for range n {
			count++
			write(func(tx *Txn) error {
				if err := tx.UpsertJob(&sdk.Job{Namespace: "default", ID: "web", Type: "service",
					TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: count}}}); err != nil {
					return err
				}
				return tx.UpsertJobSubmission("default", "web", &JobSubmission{Source: fmt.Sprint(count)})
			})
		}
	}
	tag := func(version uint64, name string) error {
		var err error
		write(func(tx *Txn) error {
			err = tx.TagJobVersion("default", "web", &JobVersionTag{Name: name, Version: version, Description: "d"})
			return nil
		})
		return err
	}
	untag := func(name string) {
		t.Helper()
		write(func(tx *Txn) error { return tx.UntagJobVersion("default", "web", name) })
	}
	versions := func() []uint64 {
		var out []uint64
		for _, v := range s.Snapshot().JobVersions("default", "web") {
			out = append(out, v.Version)
		}
		return out
	}
	want := func(vs ...uint64) {
		t.Helper()
		if got := versions(); !slices.Equal(got, vs) {
			t.Fatalf("versions %v, want %v", got, vs)
		}
		for _, v := range vs {
			if s.Snapshot().JobSubmission("default", "web", v) == nil {
				t.Fatalf("version %d kept without its submission", v)
			}
		}
	}

	register(3) // 0-2
	for _, v := range []uint64{1, 2} {
		if err := tag(v, fmt.Sprintf("v%d", v)); err != nil {
			t.Fatal(err)
		}
	}
	register(5) // 3-7: 8 versions, 6 untagged
	want(7, 6, 5, 4, 3, 2, 1, 0)
	register(10) // 8-17
	want(17, 16, 15, 14, 13, 12, 2, 1)
	if got := s.Snapshot().JobVersionTags("default", "web").Of(2); got == nil || got.Name != "v2" {
		t.Fatalf("version 2's tag %+v", got)
	}

	// A name on another version is refused; the same version takes a new
	// name in place of its old one.
	if err := tag(17, "v2"); !errors.Is(err, ErrInUse) {
		t.Fatalf("a name in use: %v", err)
	}
	if err := tag(99, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a version not kept: %v", err)
	}
	if err := tag(2, "two"); err != nil {
		t.Fatal(err)
	}
	if ts := s.Snapshot().JobVersionTags("default", "web"); ts.Named("v2") != nil || ts.Of(2).Name != "two" || len(ts.Tags) != 2 {
		t.Fatalf("tags after renaming version 2: %+v", ts.Tags)
	}

	// Untagged past the untagged ones kept: gone at once.
	untag("v1")
	want(17, 16, 15, 14, 13, 12, 2)
	var err error
	write(func(tx *Txn) error { err = tx.UntagJobVersion("default", "web", "v1"); return nil })
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("untag again: %v", err)
	}

	write(func(tx *Txn) error { return tx.DeleteJob("default", "web") })
	if s.Snapshot().JobVersionTags("default", "web") != nil {
		t.Fatal("a purged job's tags are left")
	}
}
