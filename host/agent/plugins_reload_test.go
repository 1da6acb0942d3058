package agent

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/internal/testlog"
	rt "github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/rs/zerolog"
)

// The loader's reload is driven here one pass at a time, as the watcher's
// ticker drives it, so that what one tick does is checked without timing.

// newTestLoader loads the plugin files of dir, and those plugin blocks
// name, as an agent's start does.
func newTestLoader(t *testing.T, dir string, logs *testlog.Buffer, blocks ...PluginConfig) *pluginLoader {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Dev, cfg.PluginDir, cfg.Server.NumWorkers, cfg.Plugins = true, dir, 1, blocks
	l, err := newPluginLoader(cfg, zerolog.New(logs), rt.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.loadAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	return l
}

// copyFile writes src's content to dst in place (truncated, then
// written), as `go build -o` and cp do, and moves its modification time
// ahead so that the loader's stamp surely changes.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(dst, later, later); err != nil {
		t.Fatal(err)
	}
}

func lookup(t *testing.T, l *pluginLoader, name string) *rt.Entry {
	t.Helper()
	e, ok := l.reg.Lookup(name)
	if !ok {
		t.Fatalf("plugin %q is not registered", name)
	}
	return e
}

// `make plugins` rewrites every module it builds, changed or not. One
// pass after it loads the changed module, and only that one: loading an
// unchanged one would compile nothing new, yet take its time before the
// changed one's (the loads run in turn) and replace warm instances with
// cold ones. The log says how long the load took.
func TestPluginLoader_Reload_LoadsOnlyFilesWhoseContentChanged(t *testing.T) {
	dir := t.TempDir()
	service := wasmtest.Build(t, "./plugins/service")
	copyFile(t, service, filepath.Join(dir, "service.wasm"))
	copyFile(t, wasmtest.Build(t, "./host/agent/testdata/reload/v1"), filepath.Join(dir, "reload.wasm"))
	logs := &testlog.Buffer{}
	l := newTestLoader(t, dir, logs)
	before := lookup(t, l, "service")

	copyFile(t, service, filepath.Join(dir, "service.wasm"))
	copyFile(t, wasmtest.Build(t, "./host/agent/testdata/reload/v2"), filepath.Join(dir, "reload.wasm"))
	l.reload(context.Background())

	if got := lookup(t, l, "reload").Plugin.Info().PluginVersion; got != "2" {
		t.Fatalf("reload is version %q after one pass, want 2", got)
	}
	if after := lookup(t, l, "service"); after != before {
		t.Fatal("service was loaded again, though its file was rewritten with the same content")
	}
	replaced := logs.Entries(t, "plugin replaced")
	if len(replaced) != 1 || replaced[0]["plugin"] != "reload" {
		t.Fatalf("plugin replaced log lines = %v, want one, for reload", replaced)
	}
	if d, err := time.ParseDuration(fmt.Sprint(replaced[0]["load"])); err != nil || d <= 0 {
		t.Fatalf("plugin replaced log line %v does not report the load time as a duration", replaced[0])
	}
}

// The file of a configured plugin gone missing is that plugin's refusal
// (it keeps serving), not a stop of every reload: a new file beside it is
// still loaded, and the file put back clears the refusal.
func TestPluginLoader_Reload_AMissingFileStopsOnlyItsOwnPlugin(t *testing.T) {
	dir := t.TempDir()
	v1 := wasmtest.Build(t, "./host/agent/testdata/reload/v1")
	path := filepath.Join(dir, "reload.wasm")
	copyFile(t, v1, path)
	logs := &testlog.Buffer{}
	l := newTestLoader(t, dir, logs, PluginConfig{Name: "reload"})
	before := lookup(t, l, "reload")

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	copyFile(t, wasmtest.Build(t, "./plugins/service"), filepath.Join(dir, "service.wasm"))
	l.reload(context.Background())
	l.reload(context.Background())
	lookup(t, l, "service")
	if f, ok := l.reg.Refusal(path); !ok || !strings.Contains(f.Error, "no file reload.wasm or reload in") {
		t.Fatalf("the missing file is not refused: %+v", f)
	}
	if n := len(logs.Entries(t, "plugin file missing; the running version, if any, stays")); n != 1 {
		t.Fatalf("the missing file was reported %d times over two passes, want once", n)
	}
	if lookup(t, l, "reload") != before {
		t.Fatal("the plugin whose file went missing stopped serving")
	}

	copyFile(t, v1, path)
	l.reload(context.Background())
	if _, ok := l.reg.Refusal(path); ok {
		t.Fatal("the refusal stayed after the file was put back")
	}
}

// A refused replacement undone by putting back the content that runs
// clears the refusal without loading that content again.
func TestPluginLoader_Reload_RunningContentPutBackClearsTheRefusal(t *testing.T) {
	dir := t.TempDir()
	v1 := wasmtest.Build(t, "./host/agent/testdata/reload/v1")
	path := filepath.Join(dir, "reload.wasm")
	copyFile(t, v1, path)
	l := newTestLoader(t, dir, &testlog.Buffer{})
	before := lookup(t, l, "reload")

	broken := filepath.Join(t.TempDir(), "broken.wasm")
	if err := os.WriteFile(broken, []byte("not a module"), 0o644); err != nil {
		t.Fatal(err)
	}
	copyFile(t, broken, path)
	l.reload(context.Background())
	if _, ok := l.reg.Refusal(path); !ok {
		t.Fatal("the broken replacement was not refused")
	}

	copyFile(t, v1, path)
	l.reload(context.Background())
	if _, ok := l.reg.Refusal(path); ok {
		t.Fatal("the refusal stayed after the running content was put back")
	}
	if after := lookup(t, l, "reload"); after != before {
		t.Fatal("the running content was loaded again")
	}
}

// A replacement of the same size that keeps the old modification time, as
// `cp -p` writes it, is still seen: the stamp includes the inode and the
// status-change time, which no write keeps. (The kernel's ctime is as
// coarse as its clock tick: the two writes here are seconds apart, the
// loader's first load between them.)
func TestPluginLoader_Reload_SeesAReplacementThatKeepsSizeAndModTime(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("the inode and status-change time are read on Linux only (stamp_other.go)")
	}
	v1, err := os.ReadFile(wasmtest.Build(t, "./host/agent/testdata/reload/v1"))
	if err != nil {
		t.Fatal(err)
	}
	// Two modules of one size that differ in one byte: v1 with a custom
	// section ("drover-test", one byte of payload) appended.
	variant := func(b byte) []byte {
		return append(append(bytes.Clone(v1), 0, 13, 11), append([]byte("drover-test"), b)...)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "reload.wasm")
	if err := os.WriteFile(path, variant('a'), 0o644); err != nil {
		t.Fatal(err)
	}
	stamp := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(path, stamp, stamp); err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	l := newTestLoader(t, dir, logs)
	before := lookup(t, l, "reload")

	if err := os.WriteFile(path, variant('b'), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, stamp, stamp); err != nil {
		t.Fatal(err)
	}
	l.reload(context.Background())
	if after := lookup(t, l, "reload"); after == before {
		t.Fatal("a replacement with the same size and modification time was not loaded")
	}
	if n := len(logs.Entries(t, "plugin replaced")); n != 1 {
		t.Fatalf("%d plugin replaced log lines, want 1", n)
	}
}

// A file refused because another file served its plugin's name is loaded
// again once that other file is removed, as its refusal ("remove one of
// the files") asks: it takes over, rather than staying refused in the
// name of a file that is gone while the plugin runs from that gone file.
func TestPluginLoader_Reload_SecondFileTakesOverWhenTheFirstIsRemoved(t *testing.T) {
	dir := t.TempDir()
	first, second := filepath.Join(dir, "reload.wasm"), filepath.Join(dir, "reload-copy.wasm")
	copyFile(t, wasmtest.Build(t, "./host/agent/testdata/reload/v1"), first)
	l := newTestLoader(t, dir, &testlog.Buffer{})

	copyFile(t, wasmtest.Build(t, "./host/agent/testdata/reload/v2"), second)
	l.reload(context.Background())
	if _, ok := l.reg.Refusal(second); !ok {
		t.Fatal("a second file for the plugin's name was not refused")
	}

	if err := os.Remove(first); err != nil {
		t.Fatal(err)
	}
	l.reload(context.Background())
	if e := lookup(t, l, "reload"); e.Path != second || e.Plugin.Info().PluginVersion != "2" {
		t.Fatalf("reload runs version %s from %s, want version 2 from %s", e.Plugin.Info().PluginVersion, e.Path, second)
	}
	if f, ok := l.reg.Refusal(second); ok {
		t.Fatalf("%s is still refused: %s", second, f.Error)
	}
}

// A plugin directory of one's own replaces the built-ins: the job types
// no plugin serves are named in a warning, once, and again when the list
// changes, with garbage collection said to be off while no core plugin is
// loaded.
func TestPluginLoader_WarnsOfJobTypesNoPluginServes(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, wasmtest.Build(t, "./plugins/service"), filepath.Join(dir, "service.wasm"))
	logs := &testlog.Buffer{}
	l := newTestLoader(t, dir, logs)
	const gcOff = "no plugin serves these job types: jobs of them must name a scheduler, and without a core plugin garbage collection is off (copy the built-ins from bin/plugins)"
	const typesOnly = "no plugin serves these job types: jobs of them must name a scheduler (copy the built-ins from bin/plugins)"
	warned := logs.Entries(t, gcOff)
	if len(warned) != 1 || fmt.Sprint(warned[0]["types"]) != "[batch system sysbatch _core]" {
		t.Fatalf("warnings at load %v, want one naming batch, system, sysbatch and _core", warned)
	}
	l.reload(context.Background())
	if n := len(logs.Entries(t, gcOff)); n != 1 {
		t.Fatalf("warned %d times, want once while nothing changed", n)
	}

	copyFile(t, wasmtest.Build(t, "./plugins/core"), filepath.Join(dir, "core.wasm"))
	l.reload(context.Background())
	warned = logs.Entries(t, typesOnly)
	if len(warned) != 1 || fmt.Sprint(warned[0]["types"]) != "[batch system sysbatch]" {
		t.Fatalf("warnings once core is loaded %v, want one naming batch, system and sysbatch", warned)
	}
}
