package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestMeta_TableAlignsByDisplayWidth: columns line up however many bytes
// or terminal columns a cell's characters take (accented Latin, CJK).
func TestMeta_TableAlignsByDisplayWidth(t *testing.T) {
	var out bytes.Buffer
	m := &meta{out: &out}
	m.table([][]string{
		{"ID", "Type", "Status"},
		{"web", "service", "running"},
		{"wëb-ünï", "batch", "dead"},
		{"網站", "system", "pending"},
	})
	want := strings.Join([]string{
		"ID       Type     Status",
		"web      service  running",
		"wëb-ünï  batch    dead",
		"網站     system   pending",
		"",
	}, "\n")
	if got := out.String(); got != want {
		t.Fatalf("table:\n%s\nwant:\n%s", got, want)
	}
}
