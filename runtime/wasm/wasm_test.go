package wasm_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-sched/drover/internal/testlog"
	"github.com/drover-sched/drover/runtime/wasm"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/rs/zerolog"
)

func TestLoad_BuiltinService(t *testing.T) {
	path := wasmtest.Build(t, "./plugins/service")
	ctx := context.Background()
	m, err := wasm.LoadFile(ctx, path, wasm.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	info := m.Info()
	if info.Name != "service" || len(info.Types) != 1 || info.Types[0] != "service" {
		t.Fatalf("info = %+v", info)
	}
}

func TestLoad_CompilationCacheLivesInTheCacheDir(t *testing.T) {
	path := wasmtest.Build(t, "./plugins/service")
	ctx := context.Background()
	cfg := wasm.DefaultConfig()
	cfg.CacheDir = t.TempDir()
	for i := 0; i < 2; i++ {
		m, err := wasm.LoadFile(ctx, path, cfg)
		if err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
		_ = m.Close(ctx)
		entries, err := os.ReadDir(cfg.CacheDir)
		if err != nil || len(entries) == 0 {
			t.Fatalf("load %d: cache dir empty (%v)", i, err)
		}
	}
}

// A damaged compilation cache entry (torn write, flipped bytes) does not
// stop a module from loading: the cache is emptied and filled again.
func TestLoad_DamagedCompilationCacheIsRebuilt(t *testing.T) {
	path := wasmtest.Build(t, "./plugins/service")
	ctx := context.Background()
	for name, damage := range map[string]func([]byte) []byte{
		"emptied":   func([]byte) []byte { return nil },
		"truncated": func(b []byte) []byte { return b[:len(b)/2] },
		"flipped": func(b []byte) []byte {
			b[len(b)/2] ^= 0xff
			return b
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := wasm.DefaultConfig()
			cfg.CacheDir = t.TempDir()
			load := func() {
				t.Helper()
				m, err := wasm.LoadFile(ctx, path, cfg)
				if err != nil {
					t.Fatal(err)
				}
				_ = m.Close(ctx)
			}
			load()
			entries, _ := filepath.Glob(filepath.Join(cfg.CacheDir, "wazero-*", "*"))
			if len(entries) == 0 {
				t.Fatal("nothing cached")
			}
			sizes := map[string]int{}
			for _, e := range entries {
				b, err := os.ReadFile(e)
				if err != nil {
					t.Fatal(err)
				}
				sizes[e] = len(b)
				if err := os.WriteFile(e, damage(b), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			load()
			for e, size := range sizes {
				if b, err := os.ReadFile(e); err != nil || len(b) != size {
					t.Fatalf("%s not cached again: %d bytes (%v), was %d", e, len(b), err, size)
				}
			}
		})
	}
}

// TestLoad_CommandModuleIsRefusedWithTheBuildMode: a plugin built with
// GOOS=wasip1 GOARCH=wasm but without -buildmode=c-shared is a WASI command
// whose Go runtime a reactor host never initialises; the load says how to
// build it instead of reporting the trap of its first call.
func TestLoad_CommandModuleIsRefusedWithTheBuildMode(t *testing.T) {
	out := filepath.Join(t.TempDir(), "command.wasm")
	cmd := exec.Command("go", "build", "-o", out, "./plugins/service")
	cmd.Dir = wasmtest.ModuleRoot(t)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	_, err := wasm.LoadFile(context.Background(), out, wasm.DefaultConfig())
	if !errors.Is(err, wasm.ErrInvalidModule) || !strings.Contains(err.Error(), "-buildmode=c-shared") {
		t.Fatalf("err = %v, want ErrInvalidModule naming -buildmode=c-shared", err)
	}
}

// TestLoad_NotAModuleSaysWhatItIs: a file that is no WebAssembly binary is
// refused before anything parses it; a native executable (a go-plugin
// binary given the wasm runtime) is named as one, with the runtime to use.
func TestLoad_NotAModuleSaysWhatItIs(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	native, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"native executable", native, `runtime "goplugin"`},
		{"script", []byte("#!/bin/sh\necho hi\n"), `runtime "goplugin"`},
		{"text", []byte("not a module"), "not a WebAssembly binary"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wasm.Load(context.Background(), tc.file, wasm.DefaultConfig())
			if !errors.Is(err, wasm.ErrInvalidModule) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidModule saying %q", err, tc.want)
			}
		})
	}
}

// A truncated module is refused as not a module, without first a warning
// that its deadlines will be enforced the slower way: that is said only of
// a module that loads.
func TestLoad_TruncatedModuleIsRefusedWithoutADeadlineWarning(t *testing.T) {
	b, err := os.ReadFile(wasmtest.Build(t, "./plugins/service"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "truncated.wasm")
	if err := os.WriteFile(path, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	cfg := wasm.DefaultConfig()
	cfg.Log = zerolog.New(logs)
	if _, err := wasm.LoadFile(context.Background(), path, cfg); !errors.Is(err, wasm.ErrInvalidModule) {
		t.Fatalf("err = %v, want ErrInvalidModule", err)
	}
	if n := len(logs.Entries(t, "wasm: deadlines enforced by wazero's slower WithCloseOnContextDone")); n != 0 {
		t.Fatalf("%d deadline warnings for a module refused", n)
	}
}

// A module whose initial memory is over the plugin's memory limit is a
// good module under too low a limit: the refusal says which limit to
// raise, in MiB, rather than "not a valid Drover plugin module: ... min
// 19261 pages (1 Gi) over limit of 16384 pages (1 Gi)".
func TestLoad_InitialMemoryOverTheLimitNamesTheLimit(t *testing.T) {
	cfg := wasm.DefaultConfig()
	cfg.MemoryLimitPages = 16 // 1 MiB: less than any Go module starts with
	_, err := wasm.LoadFile(context.Background(), wasmtest.Build(t, "./plugins/service"), cfg)
	if err == nil || errors.Is(err, wasm.ErrInvalidModule) ||
		!strings.Contains(err.Error(), "memory limit of 1 MiB (limits.memory_mb)") {
		t.Fatalf("err = %v, want the plugin's memory limit named", err)
	}
}
