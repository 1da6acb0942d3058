package sdk

import "testing"

// TestJob_IsPeriodicAndActive: a periodic block makes a job periodic,
// enabled or not (Nomad's Job.IsPeriodic); only an enabled, running one
// that is not a parameterized template launches (IsPeriodicActive). A job
// dispatched from a periodic parameterized job launches.
func TestJob_IsPeriodicAndActive(t *testing.T) {
	enabled := func() *PeriodicConfig { return &PeriodicConfig{Enabled: true, Spec: "* * * * *"} }
	disabled := func() *PeriodicConfig { return &PeriodicConfig{Spec: "* * * * *"} }
	param := func() *ParameterizedJobConfig { return &ParameterizedJobConfig{Payload: DispatchPayloadOptional} }
	cases := []struct {
		name             string
		job              *Job
		periodic, active bool
	}{
		{"nil job", nil, false, false},
		{"no periodic block", &Job{}, false, false},
		{"enabled", &Job{Periodic: enabled()}, true, true},
		{"disabled", &Job{Periodic: disabled()}, true, false},
		{"stopped", &Job{Periodic: enabled(), Stop: true}, true, false},
		{"parameterized template", &Job{Periodic: enabled(), ParameterizedJob: param()}, true, false},
		{"dispatched from a periodic parameterized job", &Job{Periodic: enabled(), ParameterizedJob: param(), Dispatched: true}, true, true},
		{"dispatched, disabled", &Job{Periodic: disabled(), ParameterizedJob: param(), Dispatched: true}, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.job.IsPeriodic(); got != tc.periodic {
				t.Errorf("IsPeriodic = %v, want %v", got, tc.periodic)
			}
			if got := tc.job.IsPeriodicActive(); got != tc.active {
				t.Errorf("IsPeriodicActive = %v, want %v", got, tc.active)
			}
		})
	}
}

// TestOpaque_StrAndField: Str reads a string at its key; Field reads a
// struct-shaped block's field under its Go name or, failing that, with
// its first letter lowered, as jobspecs spell it.
func TestOpaque_StrAndField(t *testing.T) {
	o := Opaque{"image": "redis", "count": 3, "Type": "csi", "source": "data", "perAlloc": true}
	if o.Str("image") != "redis" || o.Str("count") != "" || o.Str("nope") != "" {
		t.Fatalf("Str: %q %q %q", o.Str("image"), o.Str("count"), o.Str("nope"))
	}
	if o.Field("Type") != "csi" || o.Field("Source") != "data" || o.Field("PerAlloc") != true || o.Field("ReadOnly") != nil || o.Field("") != nil {
		t.Fatalf("Field: %v %v %v %v", o.Field("Type"), o.Field("Source"), o.Field("PerAlloc"), o.Field("ReadOnly"))
	}
}
