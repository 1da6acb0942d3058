package httpapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/go-bexpr"
)

// Blocking query limits, as Nomad's (structs.DefaultBlockingRPCQueryTime
// and MaxBlockingRPCQueryTime). Nomad adds up to 1/16 of random jitter to
// a wait; Drover does not.
const (
	defaultWait = 5 * time.Minute
	maxWait     = 5 * time.Minute
)

// readFn computes an answer from one snapshot, with the index the answer
// reflects (a table's index, or an object's ModifyIndex).
type readFn func(snap *state.Snapshot) (out any, index uint64, err error)

// read answers a blocking query: with ?index=N it waits (at most ?wait=,
// 5 minutes by default and at most) until the answer's index passes N,
// then answers from one snapshot. Without index it answers at once.
func (a *API) read(w http.ResponseWriter, r *http.Request, fn readFn) (any, error) {
	q := r.URL.Query()
	var minIndex uint64
	if raw := q.Get("index"); raw != "" {
		var err error
		if minIndex, err = strconv.ParseUint(raw, 10, 64); err != nil {
			return nil, errorf(http.StatusBadRequest, "invalid index %q: not an unsigned integer", raw)
		}
	}
	wait := defaultWait
	if raw := q.Get("wait"); raw != "" {
		var err error
		if wait, err = parseWait(raw); err != nil {
			return nil, errorf(http.StatusBadRequest, "invalid wait %q: %v", raw, err)
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	store := a.srv.Store()
	for {
		snap := store.Snapshot()
		if objectDenied(snap, r) {
			return nil, errPermissionDenied
		}
		out, index, err := fn(snap)
		if err != nil {
			// As in Nomad, a blocking read of what does not exist waits
			// until its table passes the index asked for (a table never
			// written has index 0), or the wait runs out, and then
			// answers 404 with that index.
			if toError(err).Code != http.StatusNotFound {
				return nil, err
			}
			if minIndex == 0 || index > minIndex || ctx.Err() != nil {
				setIndex(w, index)
				return nil, err
			}
			_, _ = store.WaitForIndex(ctx, snap.Index()+1)
			continue
		}
		if minIndex == 0 || index > minIndex || ctx.Err() != nil {
			setIndex(w, index)
			return out, nil
		}
		// Wait for the next commit, then look again; on timeout the loop
		// answers with what there is.
		_, _ = store.WaitForIndex(ctx, snap.Index()+1)
	}
}

// parseWait reads a wait: a Go duration ("10s", "500ms") or milliseconds.
// As in Nomad, a wait of zero or less is the default one, and a longer one
// than maxWait is maxWait.
func parseWait(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		ms, msErr := strconv.ParseUint(s, 10, 64)
		if msErr != nil {
			return 0, errors.New(`not a duration ("30s", "5m") or a number of milliseconds`)
		}
		d = time.Duration(min(ms, uint64(maxWait/time.Millisecond))) * time.Millisecond
	}
	if d <= 0 {
		d = defaultWait
	}
	return min(d, maxWait), nil
}

// listOptions are a list query's parameters.
type listOptions struct {
	prefix    string
	filter    *bexpr.Evaluator
	perPage   int
	nextToken string
	reverse   bool
}

// newFilter compiles a filter expression (go-bexpr, as Nomad's). An
// optional value left unset (a nil pointer to a boolean, number or
// string, such as DesiredTransition.Migrate) reads as its zero value, so
// that `DesiredTransition.Migrate == true` selects instead of failing on
// the first object without it.
func newFilter(expr string) (*bexpr.Evaluator, error) {
	return bexpr.CreateEvaluator(expr, bexpr.WithHookFn(func(v reflect.Value) reflect.Value {
		if v.Kind() != reflect.Pointer || !v.IsNil() {
			return v
		}
		switch v.Type().Elem().Kind() {
		case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			return reflect.Zero(v.Type().Elem())
		}
		return v
	}))
}

func listParams(r *http.Request) (*listOptions, error) {
	q := r.URL.Query()
	o := &listOptions{prefix: q.Get("prefix"), nextToken: q.Get("next_token")}
	if f := q.Get("filter"); f != "" {
		ev, err := newFilter(f)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "invalid filter %q: %v", f, err)
		}
		o.filter = ev
	}
	var err error
	if o.perPage, err = intParam(r, "per_page"); err != nil {
		return nil, err
	}
	if o.perPage < 0 {
		return nil, errorf(http.StatusBadRequest, "invalid per_page %d: must not be negative", o.perPage)
	}
	if o.reverse, err = boolParam(r, "reverse"); err != nil {
		return nil, err
	}
	return o, nil
}

// page filters items (in the list's order, ascending), orders them and
// cuts out one page: the items from next_token on, per_page of them. When
// more remain, next is the token of the next page's first item (for the
// X-Nomad-NextToken header).
//
// As in Nomad's paginator, the filter reads the stored objects themselves
// (a job, not its list stub): callers page those and build the stubs of
// the page afterwards. token gives an item's paging token; seek compares
// an item with a next_token in the list's order. A nil seek compares the
// tokens as strings, for tokens that sort as the list does.
func page[T any](o *listOptions, items []T, token func(T) string, seek func(it T, token string) int) (out []T, next string, err error) {
	if seek == nil {
		seek = func(it T, tok string) int { return strings.Compare(token(it), tok) }
	}
	out = make([]T, 0, len(items))
	for _, it := range items {
		if o.filter != nil {
			ok, err := o.filter.Evaluate(it)
			if err != nil {
				return nil, "", errorf(http.StatusBadRequest, "filter: %v", err)
			}
			if !ok {
				continue
			}
		}
		out = append(out, it)
	}
	if o.reverse {
		slices.Reverse(out)
	}
	if o.nextToken != "" {
		i := slices.IndexFunc(out, func(it T) bool {
			if o.reverse {
				return seek(it, o.nextToken) <= 0
			}
			return seek(it, o.nextToken) >= 0
		})
		if i < 0 {
			i = len(out)
		}
		out = out[i:]
	}
	if o.perPage > 0 && len(out) > o.perPage {
		next = token(out[o.perPage])
		out = out[:o.perPage]
	}
	return out, next, nil
}

// stubsOf maps a page of stored objects to their list stubs.
func stubsOf[T, S any](items []T, stub func(T) S) []S {
	out := make([]S, 0, len(items))
	for _, it := range items {
		out = append(out, stub(it))
	}
	return out
}

// listed is a page of a list and the token of the next page.
type listed struct {
	items any
	next  string
}

// list answers a blocking list query whose fn returns a page (listed);
// it sets X-Nomad-NextToken when there is a next page.
func (a *API) list(w http.ResponseWriter, r *http.Request, fn func(snap *state.Snapshot) (*listed, uint64, error)) (any, error) {
	out, err := a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) { return fn(snap) })
	if err != nil {
		return nil, err
	}
	l := out.(*listed)
	if l.next != "" {
		w.Header().Set("X-Nomad-NextToken", l.next)
	}
	return l.items, nil
}

// indexToken is the paging token of objects listed in creation order: the
// create index (zero-padded so tokens sort as numbers) and the ID.
func indexToken(createIndex uint64, id string) string {
	return fmt.Sprintf("%020d.%s", createIndex, id)
}

// Objects listed by namespace and ID (jobs) have the token "ns.id", as
// Nomad's, but do not seek by comparing tokens as strings: the list is
// ordered by namespace, then ID, and with namespaces "a" and "a-b" the
// string "a-b.x" sorts before "a.y" ('-' < '.'), so paging would go back
// to namespace "a" forever. nsIDSeek compares the token's namespace and
// ID in the list's order instead; a '.' (and '%') in the namespace is
// escaped so that the token splits at its first '.'.

// nsIDToken is the paging token of an object listed by namespace and ID.
func nsIDToken(ns, id string) string {
	return strings.NewReplacer("%", "%25", ".", "%2E").Replace(ns) + "." + id
}

// nsIDSeek compares an object's namespace and ID with a token's, in the
// list's order (an unreadable token reads as a namespace alone).
func nsIDSeek(ns, id, token string) int {
	tokNS, tokID, _ := strings.Cut(token, ".")
	if unescaped, err := url.PathUnescape(tokNS); err == nil {
		tokNS = unescaped
	}
	return cmp.Or(strings.Compare(ns, tokNS), strings.Compare(id, tokID))
}

// namespaced reports whether an object in namespace ns is in the
// request's namespace (?namespace=, "default" when absent, "*" for all)
// and, with ACLs, in one where the token holds the capability the route
// lists by.
func namespaced(r *http.Request, ns string) bool {
	want := requestNamespace(r)
	return (want == "*" || want == ns) && listable(r, ns)
}

func requestNamespace(r *http.Request) string {
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	return sdk.DefaultNamespace
}
