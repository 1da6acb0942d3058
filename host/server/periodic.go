package server

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	_ "time/tzdata" // periodic time zones must not depend on the host's zoneinfo

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/cronexpr"
)

// PeriodicLaunchSuffix joins a periodic job's ID and a launch's Unix time
// into the child job's ID, as Nomad does.
const PeriodicLaunchSuffix = "/periodic-"

// ErrNotPeriodic is returned when forcing a launch of a job that is not an
// active periodic job.
var ErrNotPeriodic = errors.New("server: job is not an active periodic job")

// NextLaunch returns the first launch of a periodic configuration strictly
// after after, or the zero time if its schedules have no further launch.
// Schedules are cron expressions (Spec and Specs; the earliest wins),
// evaluated in the configuration's time zone (UTC by default).
func NextLaunch(p *sdk.PeriodicConfig, after time.Time) (time.Time, error) {
	if p == nil {
		return time.Time{}, errors.New("no periodic configuration")
	}
	if p.SpecType != "" && p.SpecType != "cron" {
		return time.Time{}, fmt.Errorf("periodic spec type %q is not supported (only cron)", p.SpecType)
	}
	loc := time.UTC
	if p.TimeZone != "" {
		l, err := time.LoadLocation(p.TimeZone)
		if err != nil {
			return time.Time{}, fmt.Errorf("periodic time zone %q: %w", p.TimeZone, err)
		}
		loc = l
	}
	specs := p.Specs
	if p.Spec != "" {
		specs = append([]string{p.Spec}, specs...)
	}
	if len(specs) == 0 {
		return time.Time{}, errors.New("periodic job has no cron spec")
	}
	var best time.Time
	for _, spec := range specs {
		e, err := cronexpr.Parse(spec)
		if err != nil {
			return time.Time{}, fmt.Errorf("periodic cron spec %q: %w", spec, err)
		}
		n, err := cronNext(e, spec, after.In(loc))
		if err != nil {
			return time.Time{}, err
		}
		if !n.IsZero() && (best.IsZero() || n.Before(best)) {
			best = n
		}
	}
	return best, nil
}

// cronNext is e.Next with its panics turned into an error, as Nomad's
// CronParseNext: cronexpr panics on some specs it parses (a month range
// written backwards, DEC-JAN or 10-1, leaves no month; so can a minute or
// second range, from some times), and the launcher and the CLI must not
// crash on a job stored before validation refused them.
func cronNext(e *cronexpr.Expression, spec string, after time.Time) (next time.Time, err error) {
	defer func() {
		if r := recover(); r != nil {
			next, err = time.Time{}, fmt.Errorf("periodic cron spec %q cannot be evaluated (does a field match no value, as a range written backwards such as DEC-JAN?): %v", spec, r)
		}
	}()
	return e.Next(after), nil
}

// periodicActive reports whether a job launches children (the launcher
// tracks it): see sdk.Job.IsPeriodicActive. A job dispatched from a
// periodic parameterized job is one.
func periodicActive(j *sdk.Job) bool { return j != nil && j.IsPeriodicActive() }

// launchSchedule orders tracked periodic jobs by their next launch. It is
// pure: the launcher feeds it times.
type launchSchedule struct {
	h     launchHeap
	where map[sdk.NamespacedID]*launchItem
}

type launchItem struct {
	job   sdk.NamespacedID
	at    time.Time
	index int
}

func newLaunchSchedule() *launchSchedule {
	return &launchSchedule{where: map[sdk.NamespacedID]*launchItem{}}
}

// set schedules job's next launch at at (zero: none, the job is dropped).
func (l *launchSchedule) set(job sdk.NamespacedID, at time.Time) {
	if at.IsZero() {
		l.remove(job)
		return
	}
	if it, ok := l.where[job]; ok {
		it.at = at
		heap.Fix(&l.h, it.index)
		return
	}
	it := &launchItem{job: job, at: at}
	l.where[job] = it
	heap.Push(&l.h, it)
}

func (l *launchSchedule) remove(job sdk.NamespacedID) {
	if it, ok := l.where[job]; ok {
		heap.Remove(&l.h, it.index)
		delete(l.where, job)
	}
}

// next returns the earliest scheduled launch (zero if none).
func (l *launchSchedule) next() time.Time {
	if len(l.h) == 0 {
		return time.Time{}
	}
	return l.h[0].at
}

// popDue removes and returns the launches due at now, earliest first.
func (l *launchSchedule) popDue(now time.Time) []launchItem {
	var out []launchItem
	for len(l.h) > 0 && !l.h[0].at.After(now) {
		it := heap.Pop(&l.h).(*launchItem)
		delete(l.where, it.job)
		out = append(out, *it)
	}
	return out
}

type launchHeap []*launchItem

func (h launchHeap) Len() int { return len(h) }
func (h launchHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].job.String() < h[j].job.String()
}
func (h launchHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *launchHeap) Push(x any) {
	it := x.(*launchItem)
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *launchHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// periodicLauncher launches the children of periodic jobs on their cron
// schedules while this server leads, as Nomad's periodic dispatcher: each
// launch registers a child job "<parent>/periodic-<unix time>" with a
// periodic-job eval and records the launch in the state; with
// prohibit_overlap a launch is skipped while a child is still running. A new
// leader launches at once a job whose launch was missed while no one led,
// unless prohibit_overlap skips it.
type periodicLauncher struct {
	s     *Server
	mu    sync.Mutex
	dirty map[sdk.NamespacedID]bool
	wake  chan struct{}
	// passes counts the leaderships whose first pass over the jobs (the
	// missed launches made up) is done.
	passes atomic.Uint64
}

func newPeriodicLauncher(s *Server) *periodicLauncher {
	return &periodicLauncher{s: s, dirty: map[sdk.NamespacedID]bool{}, wake: make(chan struct{}, 1)}
}

// jobsChanged is told by the FSM which jobs changed; it must not block.
func (p *periodicLauncher) jobsChanged(ids []sdk.NamespacedID) {
	p.mu.Lock()
	for _, id := range ids {
		p.dirty[id] = true
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *periodicLauncher) takeDirty() []sdk.NamespacedID {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]sdk.NamespacedID, 0, len(p.dirty))
	for id := range p.dirty {
		out = append(out, id)
	}
	clear(p.dirty)
	return out
}

// run launches on schedule until ctx ends (the leader runs it).
func (p *periodicLauncher) run(ctx context.Context) {
	s := p.s
	p.takeDirty() // the snapshot below is newer than any of these
	sched := newLaunchSchedule()
	snap := s.store.Snapshot()
	now := s.now()
	for _, j := range snap.Jobs("") {
		if !periodicActive(j) {
			continue
		}
		id := j.NamespacedID()
		if l := snap.PeriodicLaunch(j.Namespace, j.ID); l != nil {
			if missed, err := NextLaunch(j.Periodic, time.Unix(0, l.Launch)); err == nil && !missed.IsZero() && missed.Before(now) {
				// prohibit_overlap holds for a made-up launch too, as in
				// Nomad's leader: the previous child may still run.
				s.log.Info().Str("job_id", j.ID).Time("missed", missed).Msg("launching a periodic job whose launch was missed")
				p.launch(id, now, true)
			}
		}
		p.schedule(sched, j, now)
	}
	p.passes.Add(1)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if ids := p.takeDirty(); len(ids) > 0 {
			snap := s.store.Snapshot()
			now := s.now()
			for _, id := range ids {
				if j := snap.Job(id.Namespace, id.ID); periodicActive(j) {
					p.schedule(sched, j, now)
				} else {
					sched.remove(id)
				}
			}
		}
		now := s.now()
		for _, due := range sched.popDue(now) {
			p.launch(due.job, due.at, true)
			if j := s.store.Snapshot().Job(due.job.Namespace, due.job.ID); periodicActive(j) {
				p.schedule(sched, j, due.at)
			}
		}
		wait := time.Hour
		if next := sched.next(); !next.IsZero() {
			wait = max(next.Sub(s.now()), time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-timer.C:
		}
	}
}

// schedule sets j's next launch after after.
func (p *periodicLauncher) schedule(sched *launchSchedule, j *sdk.Job, after time.Time) {
	next, err := NextLaunch(j.Periodic, after)
	if err != nil {
		p.s.log.Error().Err(err).Str("job_id", j.ID).Msg("periodic job cannot be scheduled")
	}
	sched.set(j.NamespacedID(), next)
}

// launch registers the child of a periodic job for the launch at at. With
// prohibit_overlap (when respected) the launch is skipped while a child
// runs. It returns the child's eval ID, "" if nothing was launched.
func (p *periodicLauncher) launch(id sdk.NamespacedID, at time.Time, respectOverlap bool) (string, uint64, error) {
	s := p.s
	snap := s.store.Snapshot()
	j := snap.Job(id.Namespace, id.ID)
	if !periodicActive(j) {
		return "", 0, fmt.Errorf("%w: %s", ErrNotPeriodic, id)
	}
	if respectOverlap && j.Periodic.ProhibitOverlap && runningChild(snap, j) {
		s.log.Info().Str("job_id", j.ID).Msg("periodic launch skipped: a previous launch is still running (prohibit_overlap)")
		return "", 0, nil
	}
	child := periodicChild(j, at)
	if snap.Job(child.Namespace, child.ID) != nil {
		return "", 0, nil // launched already (the same second, before a restart)
	}
	eval := s.newEval(child, sdk.EvalTriggerPeriodicJob)
	index, err := s.Apply(fsm.JobRegisterRequestType, &fsm.JobRegisterRequest{Job: child, Eval: eval, LaunchTime: at.UnixNano(), RefsMustExist: true})
	if err != nil {
		s.log.Error().Err(err).Str("job_id", j.ID).Msg("periodic launch failed")
		return "", 0, err
	}
	return eval.ID, index, nil
}

// periodicChild derives the child job a periodic job launches at at.
func periodicChild(parent *sdk.Job, at time.Time) *sdk.Job {
	c := *parent
	c.ID = parent.ID + PeriodicLaunchSuffix + strconv.FormatInt(at.Unix(), 10)
	c.Name = c.ID
	c.ParentID = parent.ID
	c.Periodic = nil
	c.Status, c.StatusDescription = "", ""
	c.Stable, c.Version = false, 0
	c.SubmitTime = at.UnixNano()
	c.CreateIndex, c.ModifyIndex, c.JobModifyIndex = 0, 0, 0
	return &c
}

// runningChild reports whether a child of a periodic job is not dead.
func runningChild(snap *state.Snapshot, parent *sdk.Job) bool {
	for _, c := range snap.JobsByIDPrefix(parent.Namespace, parent.ID+PeriodicLaunchSuffix) {
		if c.ParentID == parent.ID && c.Status != sdk.JobStatusDead {
			return true
		}
	}
	return false
}

// ForcePeriodicRun launches a periodic job's child now, whatever its
// schedule and prohibit_overlap, and returns the child's eval ID.
func (s *Server) ForcePeriodicRun(namespace, id string) (string, uint64, error) {
	j := s.store.Snapshot().Job(namespace, id)
	if j == nil {
		return "", 0, fmt.Errorf("%w: job %q", ErrNotFound, id)
	}
	if !periodicActive(j) {
		return "", 0, badRequest(fmt.Errorf("%w: %s", ErrNotPeriodic, id))
	}
	evalID, index, err := s.periodic.launch(j.NamespacedID(), s.now(), false)
	if err == nil && evalID == "" {
		err = badRequest(fmt.Errorf("job %s was launched this second already", id))
	}
	return evalID, index, err
}
