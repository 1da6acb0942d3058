package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/agent"
	"github.com/drover-sched/drover/runtime/goplugin/goplugintest"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/rs/zerolog"
)

func TestPluginValidate(t *testing.T) {
	notPlugin := filepath.Join(t.TempDir(), "notes.wasm")
	if err := os.WriteFile(notPlugin, []byte("not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		path string
		code int
		want string
	}{
		{"wasm module", wasmtest.Build(t, "./plugins/service"), exitOK, "is a valid Drover scheduler plugin"},
		{"go-plugin binary", goplugintest.Build(t, "./plugins/service"), exitOK, "goplugin"},
		{"unknown ABI major", wasmtest.Build(t, "./runtime/containment/testdata/abi2wasm"), exitError,
			"plugin declares ABI 2.0; this host supports major version(s) [1]"},
		{"not a module", notPlugin, exitError, "not a valid Drover plugin module"},
		{"missing file", filepath.Join(t.TempDir(), "nope.wasm"), exitError, "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run([]string{"plugin", "validate", tc.path}, &out, &errOut)
			all := out.String() + errOut.String()
			if code != tc.code || !strings.Contains(all, tc.want) {
				t.Fatalf("exit %d (want %d), output:\n%s\nwant it to contain %q", code, tc.code, all, tc.want)
			}
		})
	}
}

// TestAgentHelp_NamesEveryConfigSetting: the agent's help is where an
// operator learns what its configuration file holds; it names every
// top-level setting and block the file accepts, the plugin blocks among
// them, and every setting of a plugin block.
func TestAgentHelp_NamesEveryConfigSetting(t *testing.T) {
	help := (&agentCommand{}).Help()
	names := append([]string{agent.PluginBlockSchema.Type}, agent.PluginBlockSettings()...)
	ft := reflect.TypeOf(agent.File{})
	for i := 0; i < ft.NumField(); i++ {
		name, _, _ := strings.Cut(ft.Field(i).Tag.Get("hcl"), ",")
		if name != "" {
			names = append(names, name)
		}
	}
	for _, name := range names {
		// A word of its own: "plugin" in -plugin-dir does not count.
		if !regexp.MustCompile(`(^|[\s(,])` + regexp.QuoteMeta(name) + `([\s),;:.]|$)`).MatchString(help) {
			t.Errorf("agent help does not name the configuration setting %q", name)
		}
	}
}

// TestAgent_RefusesTheAPICommandsFlags: drover agent listens on
// -http-addr; -address, -namespace and -json, which the API commands
// take, are refused rather than ignored (an agent started with -address
// would listen elsewhere than asked).
func TestAgent_RefusesTheAPICommandsFlags(t *testing.T) {
	for _, flag := range []string{"-address=http://127.0.0.1:4646", "-namespace=team", "-json"} {
		var out, errOut bytes.Buffer
		code := run([]string{"agent", flag}, &out, &errOut)
		if code != exitError || !strings.Contains(errOut.String(), "flag provided but not defined") {
			t.Errorf("drover agent %s: exit %d, output:\n%s%s\nwant exit %d and the flag refused", flag, code, out.String(), errOut.String(), exitError)
		}
	}
}

// TestPluginListAndInspect_ShowRefusedReplacement: a plugin file replaced
// by one that does not load shows in plugin list (the file and why) and
// in plugin inspect (the version that still runs, and the refusal).
func TestPluginListAndInspect_ShowRefusedReplacement(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, wasmtest.Build(t, "./plugins/service"), filepath.Join(dir, "service.wasm"), 0o644)
	copyFile(t, wasmtest.Build(t, "./host/agent/testdata/reload/v1"), filepath.Join(dir, "reload.wasm"), 0o644)
	cfg := agent.DefaultConfig()
	cfg.Dev, cfg.DevNodes, cfg.HTTPAddr, cfg.PluginDir = true, 2, "127.0.0.1:0", dir
	cfg.PluginReloadInterval = 50 * time.Millisecond
	cfg.Server.NumWorkers = 1
	a, err := agent.New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.Disabled))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })

	broken := filepath.Join(dir, ".broken")
	if err := os.WriteFile(broken, []byte("not a module"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "reload.wasm")
	if err := os.Rename(broken, path); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, ok := a.Server().Plugins().Refusal(path); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the broken replacement was never refused")
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"plugin", "list", "-address", a.Addr()}, []string{"Refused plugin files", path, "not a valid Drover plugin module",
			"would not start again with these files"}},
		{[]string{"plugin", "inspect", "-address", a.Addr(), "reload"}, []string{"Version", "1", "Reload refused",
			"not a valid Drover plugin module", "this version still runs", "would not start again with the file"}},
	} {
		var out, errOut bytes.Buffer
		code := run(tc.args, &out, &errOut)
		for _, w := range tc.want {
			if code != exitOK || !strings.Contains(out.String(), w) {
				t.Fatalf("%v: exit %d, output:\n%s%s\nwant it to contain %q", tc.args, code, out.String(), errOut.String(), w)
			}
		}
	}
}

// TestPluginValidate_ChecksTheConfiguration: plugin validate asks a plugin
// (ABI 1.7) about the -config pairs, or an empty configuration, as an
// agent would, and reports a refusal in the plugin's words.
func TestPluginValidate_ChecksTheConfiguration(t *testing.T) {
	for _, tc := range []struct {
		runtime string
		path    string
	}{
		{"wasm", wasmtest.Build(t, "./host/agent/testdata/reload/strict")},
		{"goplugin", goplugintest.Build(t, "./host/agent/testdata/reload/strict")},
	} {
		cases := []struct {
			name string
			args []string
			code int
			want string
		}{
			{"no configuration", nil, exitOK, "Configuration  accepted"},
			{"refused", []string{"-config", "k=v"}, exitError,
				`refuses this configuration:
  runtime: plugin refused its configuration: plugin[reload]: unknown configuration key "k" (it takes none)`},
			{"not a pair", []string{"-config", "k"}, exitError, `-config "k" is not KEY=VALUE`},
		}
		for _, c := range cases {
			t.Run(tc.runtime+"/"+c.name, func(t *testing.T) {
				var out, errOut bytes.Buffer
				args := append(append([]string{"plugin", "validate", "-runtime", tc.runtime}, c.args...), tc.path)
				code := run(args, &out, &errOut)
				all := out.String() + errOut.String()
				if code != c.code || !strings.Contains(all, c.want) {
					t.Fatalf("exit %d (want %d), output:\n%s\nwant it to contain %q", code, c.code, all, c.want)
				}
			})
		}
	}
}

// TestPluginValidate_SaysWhenThePluginServesNoCheck: a plugin that
// declares ABI 1.7 but serves no configuration check (a go-plugin binary
// without the method) accepts any configuration unasked, and validate
// says it was not checked rather than accepted.
func TestPluginValidate_SaysWhenThePluginServesNoCheck(t *testing.T) {
	var out, errOut bytes.Buffer
	path := goplugintest.Build(t, "./runtime/goplugin/testdata/unchecked")
	code := run([]string{"plugin", "validate", "-runtime", "goplugin", "-config", "k=v", path}, &out, &errOut)
	all := out.String() + errOut.String()
	if want := "Configuration  not checked (the plugin serves no configuration check)"; code != exitOK || !strings.Contains(all, want) {
		t.Fatalf("exit %d, output:\n%s\nwant exit 0 and %q", code, all, want)
	}
}

// bench scheduler -compare-plugin-dir runs two plugin sets in turn in one
// process and reports both; with the same set on both sides every line
// has the same placements.
func TestBenchScheduler_ComparePluginDir(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"service", "batch", "system"} {
		if err := os.Symlink(goplugintest.Build(t, "./plugins/"+name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	js := filepath.Join(t.TempDir(), "pairs.json")
	var out, errOut bytes.Buffer
	code := run([]string{"bench", "scheduler", "-runtime", "goplugin", "-plugin-dir", dir, "-compare-plugin-dir", dir,
		"-nodes", "20", "-runs", "2", "-scenarios", "system-1,batch-1x1000", "-json", js}, &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "# B: "+dir) || !regexp.MustCompile(`(?m)^system-1 +20 +1 +20 .* [0-2]/2$`).MatchString(out.String()) {
		t.Fatalf("output:\n%s", out.String())
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var pairs []struct {
		A, B struct {
			Scenario string
			Placed   int
		}
		Rounds int
	}
	if err := json.Unmarshal(b, &pairs); err != nil || len(pairs) != 2 || pairs[1].A.Scenario != "batch-1x1000" ||
		pairs[1].A.Placed != 800 || pairs[1].B.Placed != 800 || pairs[1].Rounds != 2 { // 20 nodes hold 800 tasks
		t.Fatalf("json %s: %+v, %v", b, pairs, err)
	}

	errOut.Reset()
	if code := run([]string{"bench", "scheduler", "-runtime", "native", "-compare-plugin-dir", dir}, &out, &errOut); code != exitError ||
		!strings.Contains(errOut.String(), "-runtime is native") {
		t.Fatalf("native with -compare-plugin-dir: exit %d, %s", code, errOut.String())
	}
}
