package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/agent"
	"github.com/drover-sched/drover/runtime/goplugin/goplugintest"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
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
// them.
func TestAgentHelp_NamesEveryConfigSetting(t *testing.T) {
	help := (&agentCommand{}).Help()
	names := []string{agent.PluginBlockSchema.Type}
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
