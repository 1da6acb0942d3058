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
