package sdk

import (
	"slices"
	"strings"
	"testing"
	"time"
)

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

// TestContext_NewID: IDs are version-4 UUIDs, distinct, the same for the
// same eval and index, and never change once handed out (a copy of the
// context drawing more included).
func TestContext_NewID(t *testing.T) {
	ids := func(c *Context, n int) []string {
		var out []string
		for range n {
			out = append(out, c.NewID())
		}
		return out
	}
	const n = 64
	a, b := NewContext(nil, nil, nil, time.Time{}, nil, "e1"), NewContext(nil, nil, nil, time.Time{}, nil, "e1")
	first := ids(a, 3*n)
	kept := make([]string, len(first))
	for i, id := range first {
		kept[i] = strings.Clone(id)
	}
	copied := *a
	later := append(ids(a, n+3), ids(&copied, n+3)...)
	if !slices.Equal(first, kept) {
		t.Fatal("an ID changed after more were drawn")
	}
	if !slices.Equal(first, ids(b, 3*n)) {
		t.Fatal("the same eval drew other IDs")
	}
	seen := map[string]bool{}
	for _, id := range append(first, later[:n+3]...) {
		if seen[id] || len(id) != 36 || id[14] != '4' || !strings.ContainsRune("89ab", rune(id[19])) ||
			id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
			t.Fatalf("ID %q repeated or not a version-4 UUID", id)
		}
		seen[id] = true
	}
}
