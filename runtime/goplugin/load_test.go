package goplugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-sched/drover/runtime/goplugin"
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
