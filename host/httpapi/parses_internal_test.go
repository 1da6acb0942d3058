package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/rs/zerolog"
)

const parseBody = `{"JobHCL": "job \"x\" {\n group \"g\" {\n task \"t\" {\n driver = \"exec\"\n }\n }\n}"}`

func parseRequest(ctx context.Context, t *testing.T, url string) (int, string, http.Header) {
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/jobs/parse", strings.NewReader(parseBody))
	if err != nil {
		t.Error(err)
		return 0, "", nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error(), nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestJobParse_Bounded: parses beyond the bound wait for a slot, and are
// refused with a 503 once they have waited as long as they may, rather
// than all running at once. The slots are taken by the test, so nothing
// depends on how fast a parse runs.
func TestJobParse_Bounded(t *testing.T) {
	a := New(servertest.New(t, nil, nil), zerolog.New(zerolog.NewTestWriter(t)), nil)
	ts := httptest.NewServer(a.Handler())
	t.Cleanup(ts.Close)
	const n = 2
	a.LimitParses(n, time.Hour)
	for range n {
		a.parses.slots <- struct{}{} // parses in progress
	}

	// Beyond the bound, requests wait, however many.
	type result struct {
		code int
		body string
	}
	done := make(chan result, 3)
	for range 3 {
		go func() {
			code, body, _ := parseRequest(context.Background(), t, ts.URL)
			done <- result{code, body}
		}()
	}
	for a.parses.waiting.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	select {
	case r := <-done:
		t.Fatalf("a parse ran with every slot taken: %d %s", r.code, r.body)
	default:
	}
	// Each runs once a slot frees, and no more than the bound at once.
	<-a.parses.slots
	<-a.parses.slots
	for range 3 {
		if r := <-done; r.code != http.StatusOK {
			t.Fatalf("%d %s", r.code, r.body)
		}
	}
	if len(a.parses.slots) != 0 {
		t.Fatalf("%d slots still taken", len(a.parses.slots))
	}

	// A request whose client gives up stops waiting.
	a.parses.slots <- struct{}{}
	a.parses.slots <- struct{}{}
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan struct{})
	go func() {
		parseRequest(ctx, t, ts.URL)
		close(gone)
	}()
	for a.parses.waiting.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-gone
	for a.parses.waiting.Load() != 0 {
		time.Sleep(time.Millisecond)
	}

	// Past its wait, a request is refused with a 503 that says why.
	a.LimitParses(1, 0)
	a.parses.slots <- struct{}{}
	code, body, h := parseRequest(context.Background(), t, ts.URL)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "too many jobspecs are being parsed") ||
		h.Get("Retry-After") == "" {
		t.Fatalf("%d %s (Retry-After %q)", code, body, h.Get("Retry-After"))
	}
}
