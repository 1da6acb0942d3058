package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fakeNomadbench writes a program with nomadbench's flags that reports,
// for the scenario and size it is given, two runs placing one allocation
// per node in one second.
func fakeNomadbench(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nomadbench")
	script := `#!/bin/sh
while [ $# -gt 0 ]; do
	case "$1" in
	-json) out="$2" ;;
	-nodes) nodes="$2" ;;
	-scenarios) scen="$2" ;;
	esac
	shift
done
echo "# fake nomad | runs=2"
run() { printf '{"scenario":"%s","nodes":%s,"run":%s,"total_wall_ns":1000000000,"total_placed":%s,"evals":[{"wall_ns":1000000000,"placed":%s,"status":"complete"}]}' "$scen" "$nodes" "$1" "$nodes" "$nodes"; }
printf '[%s,%s]' "$(run 0)" "$(run 1)" > "$out"
`
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// bench scheduler -peer runs the peer program and the runtimes in rounds
// and reports the ratios; with one place per node in a second, the peer
// runs at the cluster's size in placements/s.
func TestBenchScheduler_Peer(t *testing.T) {
	peer := fakeNomadbench(t)
	js := filepath.Join(t.TempDir(), "rows.json")
	var out, errOut bytes.Buffer
	code := run([]string{"bench", "scheduler", "-peer", peer, "-runtime", "native", "-nodes", "20", "-runs", "2",
		"-scenarios", "system-1", "-json", js}, &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "# peer: fake nomad | runs=2") ||
		!regexp.MustCompile(`(?m)^system-1 +20 +2 +20 +\d+ \d+\.\d\d \[`).MatchString(out.String()) {
		t.Fatalf("output:\n%s", out.String())
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Scenario string
		Rounds   int
		Peer     struct{ PlacementsPerSec float64 }
		Names    []string
		Ratios   []struct{ Of, Over string }
	}
	if err := json.Unmarshal(b, &rows); err != nil || len(rows) != 1 || rows[0].Rounds != 2 || rows[0].Peer.PlacementsPerSec != 20 ||
		len(rows[0].Ratios) != 1 || rows[0].Ratios[0].Of != "native" || rows[0].Ratios[0].Over != "peer" {
		t.Fatalf("json %s: %+v, %v", b, rows, err)
	}
}

func TestBenchScheduler_PeerFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-runtime", "wasm,native"}, "only with -peer"},
		{[]string{"-peer", "x", "-runtime", "wasm,native", "-plugin-dir", "d"}, "-plugin-dir names the plugins of one runtime"},
		{[]string{"-peer", "x", "-compare-plugin-dir", "d"}, "-peer and -compare-plugin-dir"},
		{[]string{"-peer", "x", "-runtime", "wasm,jvm"}, `not "jvm"`},
		{[]string{"-peer", "x", "-runtime", "native,native"}, "lists native twice"},
		{[]string{"-peer", "x", "-plugin-dir", "d"}, "the runtimes are wasm,goplugin,native (with -peer the default is all three)"},
	} {
		var out, errOut bytes.Buffer
		if code := run(append([]string{"bench", "scheduler"}, tc.args...), &out, &errOut); code != exitError ||
			!strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, %s; want %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}
