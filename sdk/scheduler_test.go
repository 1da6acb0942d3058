package sdk

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
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

// TestContext_NewIDIsTheDrawnBytes: each ID is the two draws' bytes,
// lowest first, in hex with the version and variant bits set, as the
// UUID layout and fmt spell them.
func TestContext_NewIDIsTheDrawnBytes(t *testing.T) {
	for _, eval := range []string{"e1", "e2", "another-eval"} {
		c := NewContext(nil, nil, nil, time.Time{}, nil, eval)
		r := rand.New(rand.NewPCG(Seed(eval, 0), Seed(eval, 0)^0x9e3779b97f4a7c15))
		for range 500 {
			var b [16]byte
			binary.LittleEndian.PutUint64(b[:8], r.Uint64())
			binary.LittleEndian.PutUint64(b[8:], r.Uint64())
			b[6] = b[6]&0x0f | 0x40
			b[8] = b[8]&0x3f | 0x80
			want := fmt.Sprintf("%x-%x-%x-%x-%x", b[:4], b[4:6], b[6:8], b[8:10], b[10:])
			if got := c.NewID(); got != want {
				t.Fatalf("eval %s: NewID = %s, the drawn bytes are %s", eval, got, want)
			}
		}
	}
}
