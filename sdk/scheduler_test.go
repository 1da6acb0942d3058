package sdk

import "testing"

func TestCheckConfigKeys(t *testing.T) {
	tests := []struct {
		name   string
		config map[string]string
		known  []string
		want   string // "" for nil
	}{
		{"nothing", nil, nil, ""},
		{"known", map[string]string{"zone": "meta.zone"}, []string{"zone", "rack"}, ""},
		{"none taken", map[string]string{"k": "v"}, nil, `unknown configuration key "k" (it takes none)`},
		{"typo", map[string]string{"zon": "meta.zone"}, []string{"zone", "rack"},
			`unknown configuration key "zon" (it takes "zone", "rack")`},
		{"several, sorted", map[string]string{"b": "", "a": "", "zone": ""}, []string{"zone"},
			`unknown configuration keys "a", "b" (it takes "zone")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckConfigKeys(tt.config, tt.known...)
			if got := errString(err); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
