package httpapi

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

// An event stream whose token may read none of a busy cluster's events
// still gets its heartbeats: the events left out do not put them off.
func TestEventStream_HeartbeatsWhileEventsAreLeftOut(t *testing.T) {
	s := servertest.New(t, nil, func(c *server.Config) { c.ACLEnabled = true })
	if _, err := s.UpsertACLPolicies([]*state.ACLPolicy{{Name: "dev", Rules: `namespace "dev" { policy = "read" }`}}); err != nil {
		t.Fatal(err)
	}
	tok, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLClientToken, Policies: []string{"dev"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	a := New(s, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), nil)
	a.heartbeat = 300 * time.Millisecond
	ts := httptest.NewServer(a.Handler())
	t.Cleanup(ts.Close)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/event/stream?topic=Job&namespace=*", nil)
	req.Header.Set("X-Nomad-Token", tok.SecretID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if first := <-lines; first != "{}" {
		t.Fatalf("first line %q, want {}", first)
	}
	// Jobs of namespace default, which the token may not read, are
	// registered more often than the heartbeat is due.
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			_, _, _ = s.RegisterJob(servertest.Job("web-"+string(rune('a'+i%26))+time.Now().Format("150405.000"), sdk.JobTypeBatch, 1, 10, 16))
			time.Sleep(50 * time.Millisecond)
		}
	}()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended")
			}
			if strings.TrimSpace(l) == "{}" {
				return // a heartbeat
			}
			t.Fatalf("the token was sent %s", l)
		case <-deadline:
			t.Fatal("no heartbeat while the stream's events were all left out")
		}
	}
}
