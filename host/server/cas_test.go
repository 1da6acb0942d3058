package server_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
)

// Registrations that enforce the same job modify index race: exactly one
// is applied, the others are refused as conflicts.
func TestRegisterJob_EnforcedIndexAdmitsOneOfConcurrentRegistrations(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if _, _, err := s.RegisterJob(servertest.Job("web", sdk.JobTypeService, 1, 100, 64)); err != nil {
		t.Fatal(err)
	}
	base := s.Store().Snapshot().Job("default", "web").JobModifyIndex
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = s.RegisterJobOpts(servertest.Job("web", sdk.JobTypeService, 1, 200+i, 64),
				server.RegisterOptions{EnforceIndex: true, JobModifyIndex: base})
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, server.ErrConflict):
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d registrations enforcing index %d were applied, want 1", won, n, base)
	}
	if v := s.Store().Snapshot().Job("default", "web").Version; v != 1 {
		t.Fatalf("job version %d, want 1", v)
	}
}

// Scaling requests and registrations that race all take effect: a count
// change is built again on the version a registration made instead of
// undoing it.
func TestScaleJob_KeepsConcurrentRegistrations(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if _, _, err := s.RegisterJob(servertest.Job("web", sdk.JobTypeService, 1, 100, 64)); err != nil {
		t.Fatal(err)
	}
	const rounds, each = 10, 4
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, 2*each)
		for i := range each {
			wg.Add(2)
			go func() {
				defer wg.Done()
				// Registrations keep the group's count (as an autoscaled
				// job's deploys do) and change its CPU.
				cpu := 1000 + round*each + i
				_, _, err := s.RegisterJobOpts(servertest.Job("web", sdk.JobTypeService, 1, cpu, 64),
					server.RegisterOptions{PreserveCounts: true})
				errs <- err
			}()
			go func() {
				defer wg.Done()
				count := int64(2 + i)
				_, err := s.ScaleJob(server.ScaleRequest{Namespace: "default", JobID: "web", Group: "g", Count: &count})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		// A registration changes only the CPU and a scale only the count,
		// so each version differs from the one before in one of them; a
		// request built on a replaced version would change both back.
		versions := s.Store().Snapshot().JobVersions("default", "web")
		for i := 1; i < len(versions); i++ {
			v, prev := versions[i-1], versions[i] // newest first
			cpu, prevCPU := v.TaskGroups[0].Tasks[0].Resources.CPU, prev.TaskGroups[0].Tasks[0].Resources.CPU
			count, prevCount := v.TaskGroups[0].Count, prev.TaskGroups[0].Count
			if cpu != prevCPU && count != prevCount {
				t.Fatalf("round %d: version %d (cpu %d, count %d) after version %d (cpu %d, count %d): one request undid another",
					round, v.Version, cpu, count, prev.Version, prevCPU, prevCount)
			}
		}
	}
}

// Plain registrations of one job, however many race, all apply: only a
// registration that enforces an index or preserves what it read may be
// refused as a conflict.
func TestRegisterJob_ConcurrentPlainRegistrationsAllApply(t *testing.T) {
	s := servertest.New(t, nil, nil)
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := s.RegisterJob(servertest.Job("web", sdk.JobTypeService, 1, 200+i, 64))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a plain registration failed: %v", err)
		}
	}
}
