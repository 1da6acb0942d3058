package wasm

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

// TestCheckExports: a module whose exports lack one the ABI requires, or
// give one (required or optional) another type, is refused at load with
// both types named; every eval would otherwise fail on it.
func TestCheckExports(t *testing.T) {
	const (
		i32 = 0x7f
		i64 = 0x7e
	)
	// Types: 0 () -> i32, 1 () -> i64, 2 (i32) -> i32, 3 (i32) -> i64, 4 () -> ().
	types := sec(1, vec([]byte{0x60, 0x00, 0x01, i32}, []byte{0x60, 0x00, 0x01, i64}, []byte{0x60, 0x01, i32, 0x01, i32},
		[]byte{0x60, 0x01, i32, 0x01, i64}, []byte{0x60, 0x00, 0x00}))
	bodies := map[byte][]byte{0: fnBody(0x00, 0x41, 0x00, 0x0b), 1: fnBody(0x00, 0x42, 0x00, 0x0b),
		2: fnBody(0x00, 0x41, 0x00, 0x0b), 3: fnBody(0x00, 0x42, 0x00, 0x0b), 4: fnBody(0x00, 0x0b)}
	build := func(exports map[string]byte) []byte {
		var funcs, exps, code [][]byte
		for name, typ := range exports {
			exps = append(exps, append(str(name), 0x00, byte(len(funcs))))
			funcs = append(funcs, []byte{typ})
			code = append(code, bodies[typ])
		}
		return module(types, sec(3, vec(funcs...)), sec(7, vec(exps...)), sec(10, vec(code...)))
	}
	good := map[string]byte{ExportABIVersion: 0, ExportInfo: 1, ExportBuffer: 2, ExportProcess: 3}
	with := func(name string, typ byte) map[string]byte {
		m := map[string]byte{}
		for k, v := range good {
			m[k] = v
		}
		if typ == 0xff {
			delete(m, name)
		} else {
			m[name] = typ
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		exports map[string]byte
		want    string // "" for accepted
	}{
		{"the ABI's", good, ""},
		{"with the optional ones", with(ExportIdle, 4), ""},
		{"process without its size", with(ExportProcess, 1), `export "drover_process" has type () -> (i64), the ABI's is (i32) -> (i64)`},
		{"abi version as i64", with(ExportABIVersion, 1), `export "drover_abi_version" has type () -> (i64)`},
		{"idle returning a value", with(ExportIdle, 0), `export "drover_idle" has type () -> (i32), the ABI's is () -> ()`},
		{"check config of another type", with(ExportCheckConfig, 2), `export "drover_check_config" has type (i32) -> (i32)`},
		{"no buffer", with(ExportBuffer, 0xff), `missing export "drover_buffer"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := wazero.NewRuntime(ctx)
			defer r.Close(ctx)
			compiled, err := r.CompileModule(ctx, build(tc.exports))
			if err != nil {
				t.Fatal(err)
			}
			err = checkExports(compiled.ExportedFunctions())
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidModule) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidModule saying %q", err, tc.want)
			}
		})
	}
}

// TestLoad_InitPanicSaysWhy: a module whose initialisation writes its
// reason to stderr and traps (as a Go plugin panicking in init does) is
// refused with that reason, not only the trap, and what it wrote reaches
// the plugin output (Config.Output; the log by default) though the
// plugin never named itself.
func TestLoad_InitPanicSaysWhy(t *testing.T) {
	const msg = "panic: plugin config is broken"
	le32 := func(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }
	// Memory at 0: the iovec {16, len(msg)}, room for nwritten, the text.
	data := append(append(append(le32(16), le32(uint32(len(msg)))...), make([]byte, 8)...), msg...)
	// Functions: fd_write (imported, 0), _initialize (1), then the ABI's
	// exports with their types (2 to 5), so that the load gets as far as
	// initialising.
	mod := module(
		sec(1, vec([]byte{0x60, 0x04, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0x7f}, []byte{0x60, 0x00, 0x00},
			[]byte{0x60, 0x00, 0x01, 0x7f}, []byte{0x60, 0x00, 0x01, 0x7e},
			[]byte{0x60, 0x01, 0x7f, 0x01, 0x7f}, []byte{0x60, 0x01, 0x7f, 0x01, 0x7e})),
		sec(2, vec(append(append(str("wasi_snapshot_preview1"), str("fd_write")...), 0x00, 0x00))),
		sec(3, vec([]byte{0x01}, []byte{0x02}, []byte{0x03}, []byte{0x04}, []byte{0x05})),
		sec(5, vec([]byte{0x00, 0x01})),
		sec(7, vec(append(str("_initialize"), 0x00, 0x01), append(str("memory"), 0x02, 0x00),
			append(str(ExportABIVersion), 0x00, 0x02), append(str(ExportInfo), 0x00, 0x03),
			append(str(ExportBuffer), 0x00, 0x04), append(str(ExportProcess), 0x00, 0x05))),
		sec(10, vec(fnBody(0x00,
			0x41, 0x02, 0x41, 0x00, 0x41, 0x01, 0x41, 0x08, // fd 2, iovs 0, one iovec, nwritten at 8
			0x10, 0x00, 0x1a, // call fd_write, drop
			0x00, 0x0b), // unreachable, end
			fnBody(0x00, 0x41, 0x00, 0x0b), fnBody(0x00, 0x42, 0x00, 0x0b),
			fnBody(0x00, 0x41, 0x00, 0x0b), fnBody(0x00, 0x42, 0x00, 0x0b))),
		sec(11, vec(append([]byte{0x00, 0x41, 0x00, 0x0b}, append(appendU32(nil, uint32(len(data))), data...)...))),
	)
	var out bytes.Buffer
	cfg := DefaultConfig()
	cfg.Output = &out
	_, err := Load(context.Background(), mod, cfg)
	if err == nil || !strings.Contains(err.Error(), "plugin stderr: "+msg) {
		t.Fatalf("err = %v, want the plugin's stderr in it", err)
	}
	if !strings.Contains(out.String(), msg) {
		t.Fatalf("plugin output %q, want what it wrote while loading", out.String())
	}
}
