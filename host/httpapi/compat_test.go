package httpapi_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/jobdiff"
	"github.com/drover-sched/drover/host/jobspec"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/nomad/api"
)

var opaqueType = reflect.TypeOf(sdk.Opaque{})

// fill sets every field reachable from v to a non-zero value, so that the
// JSON of v holds every field its type has. Opaque maps stay empty: what
// they hold is whatever Nomad's types put there.
func fill(v reflect.Value, depth int) {
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(1_700_000_000, 0).UTC()))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if f.IsExported() && f.Tag.Get("json") != "-" {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("x"))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		if v.Type() == opaqueType {
			return
		}
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(k, depth+1)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("7")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Interface:
		v.Set(reflect.ValueOf("any"))
	}
}

func filled[T any]() *T {
	var v T
	fill(reflect.ValueOf(&v).Elem(), 0)
	return &v
}

// TestCompat_StrictDecodingAcceptsNomadsClient checks that every request
// body Nomad's official Go client can send, with every field set, passes
// Drover's strict decoding.
func TestCompat_StrictDecodingAcceptsNomadsClient(t *testing.T) {
	cases := []struct {
		name     string
		from, to any
	}{
		{"job register", filled[api.JobRegisterRequest](), &httpapi.JobRegisterRequest{}},
		{"job plan", filled[api.JobPlanRequest](), &httpapi.JobPlanRequest{}},
		{"job validate", filled[api.JobValidateRequest](), &httpapi.JobValidateRequest{}},
		{"job evaluate", filled[api.JobEvaluateRequest](), &httpapi.JobEvaluateRequest{}},
		{"job parse", filled[api.JobsParseRequest](), &httpapi.JobsParseRequest{}},
		{"node eligibility", filled[api.NodeUpdateEligibilityRequest](), &httpapi.NodeEligibilityRequest{}},
		{"scheduler configuration", filled[api.SchedulerConfiguration](), &sdk.SchedulerConfiguration{}},
		{"node registration (Nomad's Node JSON)", &struct{ Node *api.Node }{filled[api.Node]()}, &httpapi.NodeRegisterRequest{}},
		{"job inspect output read back by job run -json", filled[sdk.Job](), &jobspec.Job{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.from)
			if err != nil {
				t.Fatal(err)
			}
			if err := jobspec.DecodeStrict(bytes.NewReader(b), tc.to); err != nil {
				t.Fatalf("strict decoding rejects it: %v", err)
			}
		})
	}
}

// TestCompat_NomadsClientReadsAnswers checks that Nomad's official Go
// client can decode every answer type with every field set.
func TestCompat_NomadsClientReadsAnswers(t *testing.T) {
	cases := []struct {
		name     string
		from, to any
	}{
		{"job", filled[sdk.Job](), &api.Job{}},
		{"job list", filled[httpapi.JobListStub](), &api.JobListStub{}},
		{"job summary", filled[server.Summary](), &api.JobSummary{}},
		{"job plan", filled[httpapi.JobPlanResponse](), &api.JobPlanResponse{}},
		{"job versions", filled[httpapi.JobVersionsResponse](), &api.JobVersionsResponse{}},
		{"job diff", filled[jobdiff.JobDiff](), &api.JobDiff{}},
		{"job register", filled[httpapi.JobRegisterResponse](), &api.JobRegisterResponse{}},
		{"evaluation", filled[httpapi.EvalResponse](), &api.Evaluation{}},
		{"eval count", filled[httpapi.EvalCountResponse](), &api.EvalCountResponse{}},
		{"allocation", filled[sdk.Allocation](), &api.Allocation{}},
		{"allocation list", filled[sdk.AllocationListStub](), &api.AllocationListStub{}},
		{"alloc stop", filled[httpapi.AllocStopResponse](), &api.AllocStopResponse{}},
		{"node", filled[sdk.Node](), &api.Node{}},
		{"node list", filled[httpapi.NodeListStub](), &api.NodeListStub{}},
		{"node update", filled[httpapi.NodeUpdateResponse](), &api.NodePurgeResponse{}},
		{"node eligibility", filled[httpapi.NodeEligibilityResponse](), &api.NodeEligibilityUpdateResponse{}},
		{"deployment", filled[sdk.Deployment](), &api.Deployment{}},
		{"scheduler configuration", filled[httpapi.SchedulerConfigurationResponse](), &api.SchedulerConfigurationResponse{}},
		{"scheduler set", filled[httpapi.SchedulerSetConfigurationResponse](), &api.SchedulerSetConfigurationResponse{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.from)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, tc.to); err != nil {
				t.Fatalf("Nomad's client cannot read it: %v", err)
			}
		})
	}
}
