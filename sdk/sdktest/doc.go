// Package sdktest is a test harness for scheduler plugin authors, in the
// spirit of Nomad's scheduler Harness: an in-memory cluster that a
// scheduler reads, and a planner that commits plans into it and records
// every plan and eval the scheduler submits.
//
// The harness runs the scheduler through the plugin ABI in-process: every
// eval is encoded, the scheduler's state mirror is kept by the same
// full and delta syncs the host sends, and every planner call crosses the
// same codec. What passes here behaves the same in wasm and as a go-plugin.
//
// Plans and eval operations meet the host's own checks (package verify):
// a plan the host would refuse is refused here with the same reason, a
// node the host's applier would reject (over-committed, not ready, not
// eligible) is rejected here, and an eval update, new eval or reblock the
// host would refuse fails the same way. The eval being processed is in the
// cluster while it is processed, as on the host, and the planner calls are
// its own: a plan for, an update or reblock of, or a new eval following
// another eval is refused.
//
//	h := sdktest.New()
//	h.UpsertNode(sdktest.Node("n1", 4000, 8192))
//	job := sdktest.Job("web", 3)
//	h.UpsertJob(job)
//	if err := h.Process(&myScheduler{}, h.RegisterEval(job)); err != nil { ... }
//	// h.Plans, h.Updated, h.Created hold what the scheduler did.
//
// To exercise the refresh path, make the harness reject nodes of the next
// plans (RejectNodes) or every plan (RejectAll): rejected parts are not
// committed and the result carries a RefreshIndex, as the host's plan
// applier does on a partial commit.
package sdktest
