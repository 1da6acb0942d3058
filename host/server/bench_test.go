package server_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

// benchWorkers is how many workers the end-to-end benchmark runs
// (DROVER_BENCH_WORKERS, default 64): with raft on disk a worker spends
// most of an eval waiting for its update to commit, so throughput needs
// many workers, as Nomad's num_schedulers.
func benchWorkers() int {
	if n, err := strconv.Atoi(os.Getenv("DROVER_BENCH_WORKERS")); err == nil && n > 0 {
		return n
	}
	return 64
}

// BenchmarkEndToEnd_TrivialScheduler_RaftOnDisk measures evals per second
// through the whole host with raft on disk (BoltDB, fsync): b.N pending
// evals of distinct jobs are committed in entries of 1,000, and a trivial
// native scheduler concludes each (UpdateEval complete); the clock stops
// when the last conclusion is committed. Every eval goes through raft
// twice (created, concluded), the broker, a worker, the plugin runtime and
// the eval batcher.
//
//	go test ./host/server -run XXX -bench EndToEnd -benchtime 50000x
func BenchmarkEndToEnd_TrivialScheduler_RaftOnDisk(b *testing.B) {
	var done atomic.Int64
	trivial := sdk.SchedulerFunc(func(ctx *sdk.Context, e *sdk.Evaluation) error {
		c := e.Copy()
		c.Status = sdk.EvalStatusComplete
		if err := ctx.Planner.UpdateEval(c); err != nil {
			return err
		}
		done.Add(1)
		return nil
	})
	workers := benchWorkers()
	reg := servertest.Func(b, workers, trivial)
	cfg := servertest.Config()
	cfg.Dev = false
	cfg.DataDir = b.TempDir()
	cfg.NumWorkers = workers
	cfg.SnapshotThreshold = 1 << 20 // keep snapshots out of the measurement
	s, err := servertest.Start(b, cfg, reg)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	const batch = 1000
	for i := 0; i < b.N; i += batch {
		evals := make([]*sdk.Evaluation, 0, batch)
		for j := i; j < min(i+batch, b.N); j++ {
			evals = append(evals, &sdk.Evaluation{ID: fmt.Sprintf("bench-%08d", j), Namespace: "default",
				JobID: fmt.Sprintf("job-%08d", j), Type: sdk.JobTypeService, Priority: 50,
				TriggeredBy: sdk.EvalTriggerJobRegister, Status: sdk.EvalStatusPending})
		}
		if _, err := s.Apply(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: evals}); err != nil {
			b.Fatal(err)
		}
	}
	for done.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	secs := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N)/secs, "evals/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/eval")
	b.StopTimer()
	if n := len(s.Store().Snapshot().Evals()); n != b.N {
		b.Fatalf("%d evals in the state, want %d", n, b.N)
	}
}

// BenchmarkRestart_1MAllocs measures a durable server's restart with
// 1,000,000 allocations in its state (5,000 nodes, 1,000 jobs): from
// server.New on the data dir to leading, with every worker running. The
// state is restored from a raft snapshot, as after any long run.
//
//	go test ./host/server -run XXX -bench Restart_1MAllocs -benchtime 1x -timeout 30m
func BenchmarkRestart_1MAllocs(b *testing.B) {
	allocs := 1_000_000
	if n, err := strconv.Atoi(os.Getenv("DROVER_BENCH_ALLOCS")); err == nil && n > 0 {
		allocs = n
	}
	const nodes, jobs = 5000, 1000
	dir := b.TempDir()
	cfg := servertest.Config()
	cfg.Dev = false
	cfg.DataDir = dir
	cfg.SnapshotThreshold = 1 << 30
	reg := servertest.Func(b, 2, placer)
	s, err := servertest.Start(b, cfg, reg)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < nodes; i++ {
		n := servertest.Node(i, 1_000_000, 1_000_000)
		if _, err := s.Apply(fsm.NodeRegisterRequestType, &fsm.NodeRegisterRequest{Node: n}); err != nil {
			b.Fatal(err)
		}
	}
	perJob := allocs / jobs
	for j := 0; j < jobs; j++ {
		job := servertest.Job(fmt.Sprintf("job-%04d", j), "service", perJob, 10, 10)
		job.Namespace, job.Priority = "default", 50
		if _, err := s.Apply(fsm.JobRegisterRequestType, &fsm.JobRegisterRequest{Job: job}); err != nil {
			b.Fatal(err)
		}
		stored := s.Store().Snapshot().Job("default", job.ID)
		req := &fsm.ApplyPlanResultsRequest{Job: stored, EvalID: "seed"}
		for k := 0; k < perJob; k++ {
			req.AllocsUpdated = append(req.AllocsUpdated, &sdk.Allocation{
				ID: fmt.Sprintf("%04d-%06d", j, k), Namespace: "default", JobID: job.ID, TaskGroup: "g",
				Name: sdk.AllocName(job.ID, "g", k), NodeID: servertest.Node((j*perJob+k)%nodes, 0, 0).ID,
				DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning, EvalID: "seed",
				AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{
					"t": {Cpu: sdk.AllocatedCpuResources{CpuShares: 10}, Memory: sdk.AllocatedMemoryResources{MemoryMB: 10}}}}})
		}
		if _, err := s.Apply(fsm.ApplyPlanResultsRequestType, req); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Snapshot(); err != nil {
		b.Fatal(err)
	}
	if err := s.Shutdown(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start, cpu0 := time.Now(), cpuTime()
		s, err := server.New(cfg, reg, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		restored := time.Since(start)
		if err := s.WaitForLeader(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/restart")
		b.ReportMetric(restored.Seconds(), "s/restore")
		b.ReportMetric((cpuTime() - cpu0).Seconds(), "cpu-s/restart")
		b.StopTimer()
		if got := len(s.Store().Snapshot().Allocs()); got != perJob*jobs {
			b.Fatalf("%d allocations restored, want %d", got, perJob*jobs)
		}
		if err := s.Shutdown(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// cpuTime is the CPU time (user and system) the process used so far: on a
// shared machine it says more than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
