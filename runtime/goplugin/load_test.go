package goplugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-sched/drover/runtime/goplugin"
	"github.com/drover-sched/drover/runtime/goplugin/goplugintest"
)

// TestLoad_WasmModuleSaysWhichRuntime: a wasm plugin given the go-plugin
// runtime, executable bit or not, is named as a WebAssembly module, with
// the runtime to use.
func TestLoad_WasmModuleSaysWhichRuntime(t *testing.T) {
	for _, mode := range []os.FileMode{0o644, 0o755} {
		path := filepath.Join(t.TempDir(), "plugin")
		// The WebAssembly header and version: all a loader reads first.
		if err := os.WriteFile(path, []byte("\x00asm\x01\x00\x00\x00"), mode); err != nil {
			t.Fatal(err)
		}
		_, err := goplugin.Load(context.Background(), path, goplugin.DefaultConfig())
		if !errors.Is(err, goplugin.ErrInvalidPlugin) || !strings.Contains(err.Error(), `runtime "wasm"`) {
			t.Fatalf("mode %v: err = %v, want ErrInvalidPlugin naming runtime \"wasm\"", mode, err)
		}
	}
}

// A plugin executable that exits before its handshake (a panic in init)
// is refused with what it wrote to stderr, and without the hint about
// writing to stdout first, which it did not do: that hint sent the
// author looking for a print that was not there.
func TestLoad_ExitBeforeTheHandshakeQuotesStderr(t *testing.T) {
	_, err := goplugin.Load(context.Background(), goplugintest.Build(t, "./runtime/goplugin/testdata/initpanic"), goplugin.DefaultConfig())
	if err == nil || !strings.Contains(err.Error(), "panic: initpanic: no configuration file") {
		t.Fatalf("err = %v, want the plugin's panic quoted", err)
	}
	if strings.Contains(err.Error(), "write nothing to stdout") {
		t.Fatalf("err = %v, want no hint about stdout: the plugin wrote nothing there", err)
	}
}
