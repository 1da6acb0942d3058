package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// EvalResponse is an eval with Drover's view of its quasi-statuses.
type EvalResponse struct {
	*sdk.Evaluation
	// History lists the phases (pending, queued, delayed, scheduling,
	// applying, blocked, complete, ...) this leader saw the eval go through.
	History []server.PhaseEvent `json:",omitempty"`
}

// EvalCountResponse answers /v1/evaluations/count.
type EvalCountResponse struct {
	Count int
	Index uint64
}

// evalsMatching returns the evals of the request's namespace that match
// ?prefix=, ?job= and ?status=, in creation order.
func evalsMatching(r *http.Request, snap *state.Snapshot, prefix string) []*sdk.Evaluation {
	q := r.URL.Query()
	job, status := q.Get("job"), q.Get("status")
	var out []*sdk.Evaluation
	for _, e := range snap.EvalsByPrefix(prefix) {
		if !namespaced(r, e.Namespace) || job != "" && e.JobID != job || status != "" && e.Status != status {
			continue
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *sdk.Evaluation) int {
		return strings.Compare(indexToken(a.CreateIndex, a.ID), indexToken(b.CreateIndex, b.ID))
	})
	return out
}

func (a *API) evalList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := listParams(r)
	if err != nil {
		return nil, err
	}
	if q := r.URL.Query(); o.filter != nil && (q.Get("job") != "" || q.Get("status") != "") {
		// Nomad's message (structs.ErrIncompatibleFiltering).
		return nil, errorf(http.StatusBadRequest, "Filter expression cannot be used with other filter parameters")
	}
	return a.list(w, r, func(snap *state.Snapshot) (*listed, uint64, error) {
		out, next, err := page(o, evalsMatching(r, snap, o.prefix), func(e *sdk.Evaluation) string {
			return indexToken(e.CreateIndex, e.ID)
		}, nil)
		if out == nil {
			out = []*sdk.Evaluation{}
		}
		return &listed{out, next}, snap.TableIndex(state.TableEvals), err
	})
}

func (a *API) evalCount(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := listParams(r)
	if err != nil {
		return nil, err
	}
	o.perPage, o.nextToken = 0, ""
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		out, _, err := page(o, evalsMatching(r, snap, o.prefix), func(e *sdk.Evaluation) string { return e.ID }, nil)
		index := snap.TableIndex(state.TableEvals)
		return &EvalCountResponse{Count: len(out), Index: index}, index, err
	})
}

func (a *API) evalRead(w http.ResponseWriter, r *http.Request) (any, error) {
	related, err := boolParam(r, "related")
	if err != nil {
		return nil, err
	}
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		e := snap.Eval(r.PathValue("id"))
		if e == nil {
			return nil, snap.TableIndex(state.TableEvals), errorf(http.StatusNotFound, "evaluation %q not found", r.PathValue("id"))
		}
		if related {
			e = e.Copy()
			// As Nomad's, an eval without related ones has `[]`.
			e.RelatedEvals = append([]*sdk.EvaluationStub{}, relatedEvals(snap, e)...)
		}
		return &EvalResponse{Evaluation: e, History: a.srv.EvalHistory(e.ID)}, e.ModifyIndex, nil
	})
}

// relatedEvals follows an eval's NextEval, PreviousEval and BlockedEval
// pointers (and theirs) to every eval in its chain.
func relatedEvals(snap *state.Snapshot, e *sdk.Evaluation) []*sdk.EvaluationStub {
	seen := map[string]bool{e.ID: true}
	queue := []*sdk.Evaluation{e}
	var out []*sdk.EvaluationStub
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, id := range []string{cur.NextEval, cur.PreviousEval, cur.BlockedEval} {
			if id == "" || seen[id] {
				continue
			}
			seen[id] = true
			if next := snap.Eval(id); next != nil {
				out = append(out, next.Stub())
				queue = append(queue, next)
			}
		}
	}
	// Evals that point at this chain (a follow-up names its PreviousEval).
	for _, other := range snap.EvalsByJob(e.Namespace, e.JobID) {
		if !seen[other.ID] && seen[other.PreviousEval] {
			seen[other.ID] = true
			out = append(out, other.Stub())
		}
	}
	return out
}

func (a *API) evalAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		out := []*sdk.AllocationListStub{}
		for _, al := range snap.AllocsByEval(r.PathValue("id")) {
			out = append(out, al.Stub())
		}
		return out, snap.TableIndex(state.TableAllocs), nil
	})
}

// EvalDeleteResponse answers DELETE /v1/evaluations, as Nomad's.
type EvalDeleteResponse struct {
	Count int
}

// evalDelete serves DELETE /v1/evaluations (Nomad's eval delete): the
// evaluations named in EvalIDs, or those the Filter expression matches,
// are deleted while the eval broker is paused.
func (a *API) evalDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	// Nomad's client sends its write options in the body too: unknown
	// fields are allowed here.
	var req struct {
		EvalIDs []string
		Filter  string
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes)).Decode(&req); err != nil {
		return nil, errorf(http.StatusBadRequest, "eval delete request: %v", err)
	}
	if (len(req.EvalIDs) == 0) == (req.Filter == "") {
		return nil, errorf(http.StatusBadRequest, "eval delete takes either EvalIDs or a Filter")
	}
	ids := req.EvalIDs
	if req.Filter != "" {
		ev, err := newFilter(req.Filter)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "invalid filter %q: %v", req.Filter, err)
		}
		// As Nomad's, a filter reads the evals of every namespace: its
		// eval delete takes no namespace (its client sends the one it is
		// configured with, which is ignored).
		snap := a.srv.Store().Snapshot()
		matched, _, err := page(&listOptions{filter: ev}, snap.EvalsByPrefix(""), func(e *sdk.Evaluation) string { return e.ID }, nil)
		if err != nil {
			return nil, err
		}
		for _, e := range matched {
			ids = append(ids, e.ID)
		}
	}
	index, err := a.srv.DeleteEvals(ids)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &EvalDeleteResponse{Count: len(ids)}, nil
}
