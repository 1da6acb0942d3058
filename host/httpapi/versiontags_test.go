package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Version tags through Nomad's client (Nomad 1.9's): a tagged version is
// read back with its tag, kept beyond the versions kept untagged, and
// diffed against; a name tags one version; untagged, a version past the
// kept ones goes.
func TestNomadClient_JobVersionTags(t *testing.T) {
	ts, _ := newAPI(t, 1)
	c := nomadClient(t, ts.URL)
	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: webHCL, Canonicalize: true})
	if err != nil {
		t.Fatal(err)
	}
	register := func(count int) {
		t.Helper()
		job.TaskGroups[0].Count = &count
		if _, _, err := c.Jobs().Register(job, nil); err != nil {
			t.Fatal(err)
		}
	}
	register(1) // version 0
	if _, err := c.Jobs().TagVersion("web", 0, "golden", "known good", nil); err != nil {
		t.Fatalf("tag: %v", err)
	}
	if j, _, err := c.Jobs().Info("web", nil); err != nil || j.VersionTag == nil || j.VersionTag.Name != "golden" ||
		j.VersionTag.Description != "known good" || j.VersionTag.TaggedTime == 0 {
		t.Fatalf("the tagged current version: %v %+v", err, j.VersionTag)
	}
	for count := 2; count <= 9; count++ { // versions 1-8
		register(count)
	}
	v0, _, err := c.Jobs().VersionByTag("web", "golden", nil)
	if err != nil || *v0.Version != 0 || *v0.TaskGroups[0].Count != 1 {
		t.Fatalf("version by tag: %v %+v", err, v0)
	}
	versions, _, _, _ := c.Jobs().Versions("web", false, nil)
	if len(versions) != 7 || *versions[6].Version != 0 || *versions[5].Version != 3 {
		t.Fatalf("%d versions kept, the oldest %d", len(versions), *versions[len(versions)-1].Version)
	}
	// Every version diffed against the tagged one.
	_, diffs, _, err := c.Jobs().VersionsOpts("web", &api.VersionsOptions{Diffs: true, DiffTag: "golden"}, nil)
	if err != nil || len(diffs) != 7 || diffs[0].Type != "Edited" || diffs[6].Type != "None" {
		t.Fatalf("diffs against the tag: %v %d", err, len(diffs))
	}
	// Without Diffs, as Nomad's, no diffs, and a tag not looked up.
	if _, diffs, _, err := c.Jobs().VersionsOpts("web", &api.VersionsOptions{DiffTag: "nope"}, nil); err != nil || len(diffs) != 0 {
		t.Fatalf("diff_tag without diffs: %v %d", err, len(diffs))
	}
	// The latest version, then a name on another version.
	if _, err := c.Jobs().TagVersionOpts("web", "latest", &api.TagVersionRequest{Latest: true}, nil); err != nil {
		t.Fatal(err)
	}
	if j, _, _ := c.Jobs().Info("web", nil); j.VersionTag == nil || j.VersionTag.Name != "latest" {
		t.Fatalf("the latest version's tag: %+v", j.VersionTag)
	}
	if _, err := c.Jobs().TagVersion("web", 5, "golden", "", nil); err == nil || !strings.Contains(err.Error(), "400") ||
		!strings.Contains(errText(err), `tag "golden" already exists on a different version of job "web"`) {
		t.Fatalf("a name on another version: %v", err)
	}
	if _, err := c.Jobs().TagVersion("web", 99, "nope", "", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a version not kept: %v", err)
	}
	// Untagged, version 0 is among the six kept untagged while version 8
	// is tagged; once 8 is untagged too, 0 is past them: gone.
	if _, err := c.Jobs().UntagVersion("web", "golden", nil); err != nil {
		t.Fatal(err)
	}
	if versions, _, _, _ = c.Jobs().Versions("web", false, nil); len(versions) != 7 || *versions[6].Version != 0 {
		t.Fatalf("after the first untag: %d versions", len(versions))
	}
	if _, err := c.Jobs().UntagVersion("web", "latest", nil); err != nil {
		t.Fatal(err)
	}
	if versions, _, _, _ = c.Jobs().Versions("web", false, nil); len(versions) != 6 || *versions[5].Version != 3 {
		t.Fatalf("after the second untag: %d versions", len(versions))
	}
	if _, err := c.Jobs().UntagVersion("web", "golden", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("untag again: %v", err)
	}
	if resp, body := do(t, "GET", ts.URL+"/v1/job/web/versions?diffs=true&diff_tag=nope", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("diff against a tag that does not exist: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "PUT", ts.URL+"/v1/job/web/versions/x/tag", `{"Version": 8, "Description": "`+strings.Repeat("d", 1001)+`"}`); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a long description: %d %s", resp.StatusCode, body)
	}
}

// A tag's write and its removal wake the blocking reads that show it: the
// job's read (its current version's tag) and the versions' read, whose
// index must not go back when the job's last tag is removed.
func TestNomadClient_JobVersionTags_WakeBlockingReads(t *testing.T) {
	ts, _ := newAPI(t, 1)
	c := nomadClient(t, ts.URL)
	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: webHCL, Canonicalize: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	_, before, err := c.Jobs().Info("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	wm, err := c.Jobs().TagVersionOpts("web", "golden", &api.TagVersionRequest{Latest: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	j, qm, err := c.Jobs().Info("web", &api.QueryOptions{WaitIndex: before.LastIndex, WaitTime: 5 * time.Second})
	if err != nil || j.VersionTag == nil || qm.LastIndex < wm.LastIndex {
		t.Fatalf("the job's read after the tag: %v %+v, index %d, the tag's %d", err, j.VersionTag, qm.LastIndex, wm.LastIndex)
	}
	_, _, tagged, err := c.Jobs().Versions("web", false, nil)
	if err != nil || tagged.LastIndex < wm.LastIndex {
		t.Fatalf("the versions' read after the tag: %v, index %d, the tag's %d", err, tagged.LastIndex, wm.LastIndex)
	}
	wm, err = c.Jobs().UntagVersion("web", "golden", nil)
	if err != nil {
		t.Fatal(err)
	}
	versions, _, qm, err := c.Jobs().Versions("web", false, &api.QueryOptions{WaitIndex: tagged.LastIndex, WaitTime: 5 * time.Second})
	if err != nil || versions[0].VersionTag != nil || qm.LastIndex < wm.LastIndex {
		t.Fatalf("the versions' read after the last tag's removal: %v, index %d, the removal's %d", err, qm.LastIndex, wm.LastIndex)
	}
	j, qm, err = c.Jobs().Info("web", &api.QueryOptions{WaitIndex: tagged.LastIndex, WaitTime: 5 * time.Second})
	if err != nil || j.VersionTag != nil || qm.LastIndex < wm.LastIndex {
		t.Fatalf("the job's read after the removal: %v, index %d, the removal's %d", err, qm.LastIndex, wm.LastIndex)
	}
}

// The tag route is the raw path's: a job whose escaped ID reads like a
// tag's path (Nomad's client escapes the ID, not the tag's name) is read,
// registered and summarised as any other, and a tag named "versions" or
// "tag" is a tag.
func TestNomadClient_JobVersionTags_Routing(t *testing.T) {
	ts, _ := newAPI(t, 1)
	c := nomadClient(t, ts.URL)
	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: webHCL, Canonicalize: true})
	if err != nil {
		t.Fatal(err)
	}
	id := "a/versions/b/tag"
	job.ID, job.Name = &id, &id
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("register %q: %v", id, err)
	}
	if j, _, err := c.Jobs().Info(id, nil); err != nil || *j.ID != id {
		t.Fatalf("read %q: %v", id, err)
	}
	if _, _, err := c.Jobs().Summary(id, nil); err != nil {
		t.Fatalf("summary of %q: %v", id, err)
	}
	for _, name := range []string{"versions", "tag"} {
		if _, err := c.Jobs().TagVersion(id, 0, name, "", nil); err != nil {
			t.Fatalf("tag %q: %v", name, err)
		}
		if v, _, err := c.Jobs().VersionByTag(id, name, nil); err != nil || *v.Version != 0 {
			t.Fatalf("version by tag %q: %v", name, err)
		}
		if _, err := c.Jobs().UntagVersion(id, name, nil); err != nil {
			t.Fatalf("untag %q: %v", name, err)
		}
	}
}
