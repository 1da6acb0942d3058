package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

// BenchmarkACL_JobList is what ACLs add to a request: GET /v1/jobs of
// 100 jobs, served in process, with ACLs off and with a client token
// whose policy grants the namespace by glob. Compare the two in one run.
func BenchmarkACL_JobList(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "acl=off"
		if on {
			name = "acl=on"
		}
		b.Run(name, func(b *testing.B) {
			s := servertest.New(b, nil, func(c *server.Config) { c.ACLEnabled = on })
			for i := range 100 {
				if _, _, err := s.RegisterJob(servertest.Job("web-"+string(rune('a'+i/26))+string(rune('a'+i%26)), sdk.JobTypeBatch, 1, 10, 16)); err != nil {
					b.Fatal(err)
				}
			}
			secret := ""
			if on {
				if _, err := s.UpsertACLPolicies([]*state.ACLPolicy{{Name: "jobs", Rules: `namespace "def*" { policy = "read" }`}}); err != nil {
					b.Fatal(err)
				}
				tok, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLClientToken, Policies: []string{"jobs"}}, 0)
				if err != nil {
					b.Fatal(err)
				}
				secret = tok.SecretID
			}
			h := httpapi.New(s, zerolog.Nop(), nil).Handler()
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "/v1/jobs", nil)
				if secret != "" {
					req.Header.Set("X-Nomad-Token", secret)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
