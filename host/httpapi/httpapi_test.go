package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

func newAPI(t *testing.T) *httptest.Server {
	s := servertest.New(t, nil, nil)
	for i := 0; i < 2; i++ {
		if _, _, err := s.RegisterNode(servertest.Node(i, 4000, 8192)); err != nil {
			t.Fatal(err)
		}
	}
	ts := httptest.NewServer(httpapi.New(s, zerolog.Nop(), func() any { return map[string]string{} }).Handler())
	t.Cleanup(ts.Close)
	return ts
}

func do(t *testing.T, method, url, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp, b.Bytes()
}

func TestAPI_ParseRegisterReadBack(t *testing.T) {
	ts := newAPI(t)
	hcl := `job "web" {
  group "g" {
    count = 2
    task "t" {
      driver = "docker"
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}`
	body, _ := json.Marshal(map[string]any{"JobHCL": hcl, "Canonicalize": true})
	resp, out := do(t, "POST", ts.URL+"/v1/jobs/parse", string(body))
	if resp.StatusCode != 200 {
		t.Fatalf("parse: %d %s", resp.StatusCode, out)
	}
	var job sdk.Job
	if err := json.Unmarshal(out, &job); err != nil {
		t.Fatal(err)
	}
	if job.Namespace != "default" || job.Priority != 50 || job.TaskGroups[0].Count != 2 {
		t.Fatalf("canonical job = %+v", job)
	}
	reg, _ := json.Marshal(map[string]any{"Job": job})
	resp, out = do(t, "PUT", ts.URL+"/v1/jobs", string(reg))
	if resp.StatusCode != 200 {
		t.Fatalf("register: %d %s", resp.StatusCode, out)
	}
	var rr httpapi.JobRegisterResponse
	_ = json.Unmarshal(out, &rr)
	if rr.EvalID == "" || resp.Header.Get("X-Nomad-Index") == "" {
		t.Fatalf("register response %s, index header %q", out, resp.Header.Get("X-Nomad-Index"))
	}
	resp, out = do(t, "GET", ts.URL+"/v1/job/web", "")
	if resp.StatusCode != 200 || !strings.Contains(string(out), `"ID":"web"`) {
		t.Fatalf("read back: %d %s", resp.StatusCode, out)
	}
	resp, out = do(t, "GET", ts.URL+"/v1/evaluation/"+rr.EvalID, "")
	if resp.StatusCode != 200 || !strings.Contains(string(out), `"TriggeredBy":"job-register"`) {
		t.Fatalf("eval: %d %s", resp.StatusCode, out)
	}
}

func TestAPI_ErrorsAreJSONWithStatus(t *testing.T) {
	ts := newAPI(t)
	cases := []struct {
		name, method, path, body string
		code                     int
	}{
		{"unknown job", "GET", "/v1/job/nope", "", 404},
		{"unknown path", "GET", "/v1/nope", "", 404},
		{"bad json", "PUT", "/v1/jobs", "{", 400},
		{"unknown field", "PUT", "/v1/jobs", `{"Job":{"ID":"x"},"Bogus":1}`, 400},
		{"trailing data", "PUT", "/v1/jobs", `{"Job":{"ID":"x"}} {}`, 400},
		{"invalid job", "PUT", "/v1/jobs", `{"Job":{"ID":"x","TaskGroups":[{"Name":"g","Count":-1}]}}`, 400},
		{"hcl error", "POST", "/v1/jobs/parse", `{"JobHCL":"job {"}`, 400},
		{"empty body", "PUT", "/v1/jobs", "", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, out := do(t, tc.method, ts.URL+tc.path, tc.body)
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, out)
			}
			var e httpapi.Error
			if err := json.Unmarshal(out, &e); err != nil || e.Message == "" {
				t.Fatalf("error body is not JSON with a message: %s", out)
			}
		})
	}
}
