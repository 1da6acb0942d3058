package main

import (
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/cli"
)

// runAnswering runs a drover command as runACLCommand does, answering its
// questions with the lines of answers (read a byte at a time, so that each
// question reads one line).
func runAnswering(t *testing.T, addr, token, answers string, words ...string) (int, string, string) {
	t.Helper()
	setTokenEnv(t, nil)
	ui := cli.NewMockUi()
	ui.InputReader = iotest.OneByteReader(strings.NewReader(answers))
	cmd, args := commandFor(t, &meta{ui: ui, out: ui.OutputWriter, in: strings.NewReader(""), now: time.Now}, addr, token, words...)
	code := cmd.Run(args)
	return code, ui.OutputWriter.String(), ui.ErrorWriter.String()
}

// jobWithEval registers a two-allocation service job and waits for its
// evaluation to end; with no node to run on, it leaves a blocked one.
func jobWithEval(t *testing.T, s *server.Server, id string) *sdk.Evaluation {
	t.Helper()
	evalID, _, err := s.RegisterJob(servertest.Job(id, sdk.JobTypeService, 2, 100, 64))
	if err != nil {
		t.Fatal(err)
	}
	return servertest.WaitForEval(t, s, evalID)
}

// eval delete: by ID (or prefix) or by -filter, only while the eval broker
// is paused; -filter asks for confirmation unless -yes; Nomad's counts.
func TestEvalDeleteCommand(t *testing.T) {
	s, addr, root := nsAgent(t)
	var evals []*sdk.Evaluation
	for _, id := range []string{"a", "b", "c"} {
		evals = append(evals, jobWithEval(t, s, id))
	}
	_, errOut := mustRun(t, 1, addr, root, "eval", "delete")
	checkContains(t, "eval delete without an ID", errOut, "evaluation ID or filter flag required")
	_, errOut = mustRun(t, 1, addr, root, "eval", "delete", "-filter", `JobID == "a"`, evals[0].ID)
	checkContains(t, "eval delete with both", errOut, "evaluation ID or filter flag required")
	_, errOut = mustRun(t, 1, addr, root, "eval", "delete", "x", "y")
	checkContains(t, "eval delete with two IDs", errOut, "expected 1 argument, got 2")

	out, errOut := mustRun(t, 1, addr, root, "eval", "delete", evals[0].ID)
	checkContains(t, "eval delete with the broker running", errOut, "Eval broker is not paused")
	checkContains(t, "eval delete with the broker running", out, "drover operator scheduler set-config -pause-eval-broker=true")
	mustRun(t, 0, addr, root, "operator", "scheduler", "set-config", "-pause-eval-broker=true")

	out, _ = mustRun(t, 0, addr, root, "eval", "delete", evals[0].ID[:10])
	if out != "Successfully deleted 1 evaluation\n" {
		t.Errorf("eval delete by ID: %q", out)
	}
	if s.Store().Snapshot().Eval(evals[0].ID) != nil {
		t.Errorf("evaluation %s still there", evals[0].ID)
	}
	_, errOut = mustRun(t, 1, addr, root, "eval", "delete", evals[0].ID)
	checkContains(t, "eval delete of a deleted one", errOut, "Error deleting evaluations: finding evaluation", "404")

	filter := `JobID == "b" or JobID == "c"`
	n := 0
	for _, e := range s.Store().Snapshot().EvalsByPrefix("") {
		if e.JobID == "b" || e.JobID == "c" {
			n++
		}
	}
	for _, tc := range []struct {
		answer, out string
		code        int
	}{
		{"n\n", "Cancelling eval deletion\n\nNo evaluations were deleted\n", 0},
		{"\n", "Cancelling eval deletion\n\nNo evaluations were deleted\n", 0},
		{"yes\n", "For confirmation, an exact 'y' is required.\n\nNo evaluations were deleted\n", 0},
		{"sure\n", "No confirmation detected. For confirmation, an exact 'y' is required.\n\nNo evaluations were deleted\n", 1},
	} {
		code, out, errOut := runAnswering(t, addr, root, tc.answer, "eval", "delete", "-filter", filter)
		want := "Are you sure you want to delete " + strconv.Itoa(n) + " evals? [y/N]" + tc.out
		if code != tc.code || out != want {
			t.Errorf("answer %q: exit %d, output:\n%s\nwant exit %d:\n%s\n%s", tc.answer, code, out, tc.code, want, errOut)
		}
	}
	if got := len(s.Store().Snapshot().EvalsByPrefix("")); got < n {
		t.Fatalf("%d evaluations left after cancelled deletions, want at least %d", got, n)
	}
	code, out, _ := runAnswering(t, addr, root, "y\n", "eval", "delete", "-filter", filter)
	if want := "Are you sure you want to delete " + strconv.Itoa(n) + " evals? [y/N]\nSuccessfully deleted " + strconv.Itoa(n) + " evaluations\n"; code != 0 || out != want {
		t.Errorf("confirmed: exit %d\n%s\nwant:\n%s", code, out, want)
	}
	for _, e := range s.Store().Snapshot().EvalsByPrefix("") {
		if e.JobID == "b" || e.JobID == "c" {
			t.Errorf("evaluation %s of job %s left", e.ID, e.JobID)
		}
	}
	out, _ = mustRun(t, 0, addr, root, "eval", "delete", "-yes", "-filter", `JobID == "none"`)
	if out != "No evaluations were deleted\n" {
		t.Errorf("-yes, nothing matching: %q", out)
	}
	_, errOut = mustRun(t, 1, addr, root, "eval", "delete", "-yes", "-filter", `JobID ==`)
	checkContains(t, "a bad filter", errOut, "Error deleting evaluations: API error (400)")
}
