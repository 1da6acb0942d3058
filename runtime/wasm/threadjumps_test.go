package wasm

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/tetratelabs/wazero"
)

// goShaped is a function of Go's shape (threadJumps): (pc_b, x i32) -> i32
// with a counter in local 2. Resume point 0 zeroes the counter and jumps
// to resume point 2 when x is 7 (forward, from inside an if); resume
// point 1 counts, jumps back to itself while the counter is below x, then
// forward to resume point 2, which returns the counter times 10. extra
// goes at the start of resume point 2.
func goShaped(extra ...byte) []byte {
	code := []byte{0x01, 0x01, 0x7f, // one i32 local: the counter
		0x03, 0x40, // loop
		0x02, 0x40, 0x02, 0x40, 0x02, 0x40, // three blocks
		0x20, 0x00, 0x0e, 0x03, 0x00, 0x01, 0x02, 0x02, // local.get 0, br_table 0 1 2, default 2
		0x0b,                   // end: resume point 0
		0x41, 0x00, 0x21, 0x02, // counter = 0
		0x20, 0x01, 0x41, 0x07, 0x46, 0x04, 0x40, // if x == 7
		0x41, 0x02, 0x21, 0x00, 0x0c, 0x03, // jump to 2 (br to the loop)
		0x0b,                                     // end if
		0x0b,                                     // end: resume point 1
		0x20, 0x02, 0x41, 0x01, 0x6a, 0x21, 0x02, // counter++
		0x20, 0x02, 0x20, 0x01, 0x49, 0x04, 0x40, // if counter < x
		0x41, 0x01, 0x21, 0x00, 0x0c, 0x02, // jump to 1 (backward)
		0x0b,                               // end if
		0x41, 0x02, 0x21, 0x00, 0x0c, 0x01, // jump to 2
		0x0b, // end: resume point 2
	}
	code = append(code, extra...)
	code = append(code, 0x20, 0x02, 0x41, 0x0a, 0x6c, 0x0f, // return counter * 10
		0x0b,       // end loop
		0x00, 0x0b) // unreachable, end
	return fnBody(code...)
}

// goModule exports f, of Go's shape, and g, the same but reading local 0
// where a threaded jump would leave it stale.
var goModule = module(
	sec(1, vec([]byte{0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f})), // (i32, i32) -> i32
	sec(3, vec([]byte{0x00}, []byte{0x00})),
	sec(7, vec(append(str("f"), 0x00, 0x00), append(str("g"), 0x00, 0x01))),
	sec(10, vec(goShaped(), goShaped(0x20, 0x00, 0x1a))), // g: local.get 0, drop
	sec(0, str(".debug_line"), []byte{1, 2, 3}),
)

// call instantiates bin and calls its function name with (0, x); a call
// that does not return within 10 s (a jump threaded to the wrong place
// can loop) fails the test.
func call(t *testing.T, bin []byte, name string, x uint64) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	t.Cleanup(func() { _ = r.Close(ctx) })
	mod, err := r.Instantiate(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	out, err := mod.ExportedFunction(name).Call(ctx, 0, x)
	if err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// TestThreadJumps_SameResults: the threaded module computes what the
// original does, its forward jumps are direct branches and its backward
// jump still goes through the loop; the function that reads local 0 is
// left alone, and the DWARF section is dropped.
func TestThreadJumps_SameResults(t *testing.T) {
	threaded, err := threadJumps(goModule)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []uint64{0, 1, 3, 7, 12} {
		for _, name := range []string{"f", "g"} {
			want := call(t, goModule, name, x)
			if got := call(t, threaded, name, x); got != want {
				t.Errorf("%s(%d) = %d threaded, %d before", name, x, got, want)
			}
		}
	}
	if call(t, threaded, "f", 3) != 30 || call(t, threaded, "f", 7) != 0 {
		t.Error("the module does not compute what it was written for")
	}
	f, g := goShaped(), goShaped(0x20, 0x00, 0x1a)
	if bytes.Contains(threaded, f) {
		t.Error("f was left as it was")
	}
	// f's two forward jumps became a br each (6 bytes to 2, twice); the
	// backward jump stayed.
	wantF := bytes.Replace(f, []byte{0x41, 0x02, 0x21, 0x00, 0x0c, 0x03}, []byte{0x0c, 0x02}, 1)
	wantF = bytes.Replace(wantF, []byte{0x41, 0x02, 0x21, 0x00, 0x0c, 0x01}, []byte{0x0c, 0x00}, 1)
	wantF[0] -= 8 // the body's size
	if !bytes.Contains(threaded, wantF) {
		t.Errorf("f threaded is not the expected code:\n%x", threaded)
	}
	if !bytes.Contains(threaded, g) {
		t.Error("g, which reads local 0, was changed")
	}
	if bytes.Contains(threaded, []byte(".debug_line")) {
		t.Error("the DWARF section was kept")
	}
}

// TestThreadable_LeavesOtherShapesAlone: functions whose dispatch is not
// Go's are not threaded.
func TestThreadable_LeavesOtherShapesAlone(t *testing.T) {
	f := goShaped()
	cases := []struct {
		name string
		code []byte
	}{
		{"a dispatch block with a result", bytes.Replace(f, []byte{0x02, 0x40, 0x02, 0x40, 0x02, 0x40}, []byte{0x02, 0x40, 0x02, 0x40, 0x02, 0x7f}, 1)},
		{"a loop with a result", bytes.Replace(f, []byte{0x03, 0x40}, []byte{0x03, 0x7f}, 1)},
		{"dispatch on another local", bytes.Replace(f, []byte{0x20, 0x00, 0x0e}, []byte{0x20, 0x01, 0x0e}, 1)},
		{"a label past the blocks", bytes.Replace(f, []byte{0x0e, 0x03, 0x00, 0x01, 0x02, 0x02}, []byte{0x0e, 0x03, 0x00, 0x01, 0x03, 0x02}, 1)},
		{"no loop", fnBody(0x00, 0x41, 0x07, 0x0b)},
	}
	w := &rewriter{countdown: ^uint32(0)}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code := tc.code[1:] // past the body's size
			out, _, err := w.threadBody(nil, code, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, code) {
				t.Errorf("changed:\n%x\nto\n%x", code, out)
			}
		})
	}
}

// TestThreadJumps_GoModules: a Go plugin's functions mostly have the shape
// (a Go toolchain that changed it would silently lose the pass), and the
// threaded module still loads and answers.
func TestThreadJumps_GoModules(t *testing.T) {
	bin, err := os.ReadFile(wasmtest.Build(t, "./runtime/wasm/testdata/staletake"))
	if err != nil {
		t.Fatal(err)
	}
	threaded, err := threadJumps(bin)
	if err != nil {
		t.Fatal(err)
	}
	var total, changed int
	eachBody(t, bin, threaded, func(before, after []byte) {
		total++
		if !bytes.Equal(before, after) {
			changed++
		}
	})
	if changed < total/2 {
		t.Errorf("%d of %d functions threaded", changed, total)
	}
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	t.Cleanup(func() { _ = r.Close(ctx) })
	if _, err := r.CompileModule(ctx, threaded); err != nil {
		t.Fatalf("the threaded module does not compile: %v", err)
	}
}

// eachBody calls fn with each function body of two modules that have the
// same functions.
func eachBody(t *testing.T, a, b []byte, fn func(a, b []byte)) {
	t.Helper()
	bodies := func(bin []byte) [][]byte {
		var out [][]byte
		r := &reader{b: bin, pos: 8}
		for r.pos < len(r.b) && r.err == nil {
			id := r.byte()
			body := r.bytes(int(r.u32()))
			if id != secCode {
				continue
			}
			br := &reader{b: body}
			for n := br.u32(); n > 0 && br.err == nil; n-- {
				out = append(out, br.bytes(int(br.u32())))
			}
		}
		if r.err != nil {
			t.Fatal(r.err)
		}
		return out
	}
	ba, bb := bodies(a), bodies(b)
	if len(ba) != len(bb) || len(ba) == 0 {
		t.Fatalf("%d and %d bodies", len(ba), len(bb))
	}
	for i := range ba {
		fn(ba[i], bb[i])
	}
}

// FuzzThreadJumps: the pass never panics, and what wazero accepts,
// threaded, wazero still accepts.
func FuzzThreadJumps(f *testing.F) {
	fuzzRewrite(f, threadJumps, goModule, spinner)
}
