package wasm

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Hand-assembled modules: sec builds a section, vec a vector, str a name.
func sec(id byte, parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	return append(appendU32([]byte{id}, uint32(len(body))), body...)
}

func vec(items ...[]byte) []byte {
	return append(appendU32(nil, uint32(len(items))), bytes.Join(items, nil)...)
}

func str(s string) []byte { return append(appendU32(nil, uint32(len(s))), s...) }

func fnBody(code ...byte) []byte { return append(appendU32(nil, uint32(len(code))), code...) }

func module(sections ...[]byte) []byte {
	return append([]byte("\x00asm\x01\x00\x00\x00"), bytes.Join(sections, nil)...)
}

// counted is how far "count" counts: past several checkpoints (its loop
// charges its 20-odd bytes an iteration).
const counted = 4_000_007

// spinner has a function that loops forever ("spin"), one that counts in a
// loop and returns the count ("count"), a start function that loops
// forever, a recursive Fibonacci without loops ("fib"), which takes years
// for 90, and a function that calls nothing and loops nowhere ("seven");
// its custom sections are a DWARF one and another.
var spinner = module(
	sec(1, vec([]byte{0x60, 0x00, 0x00}, []byte{0x60, 0x00, 0x01, 0x7f}, []byte{0x60, 0x01, 0x7f, 0x01, 0x7f})), // () -> (), () -> i32, (i32) -> i32
	sec(3, vec([]byte{0x00}, []byte{0x01}, []byte{0x00}, []byte{0x02}, []byte{0x01})),
	sec(7, vec(append(str("spin"), 0x00, 0x00), append(str("count"), 0x00, 0x01), append(str("fib"), 0x00, 0x03),
		append(str("seven"), 0x00, 0x04))),
	sec(8, []byte{0x02}), // start: function 2
	sec(10, vec(
		fnBody(0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b), // loop br 0 end
		fnBody(append(append([]byte{0x01, 0x01, 0x7f, // one i32 local
			0x03, 0x40, // loop
			0x20, 0x00, 0x41, 0x01, 0x6a, 0x22, 0x00, // local.get 0, i32.const 1, i32.add, local.tee 0
			0x41}, appendS32(nil, counted)...), // i32.const counted
			0x49, 0x0d, 0x00, // i32.lt_u, br_if 0
			0x0b, 0x20, 0x00, 0x0b)...), // end, local.get 0, end
		fnBody(0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b),
		fnBody(0x00, 0x20, 0x00, 0x41, 0x02, 0x49, 0x04, 0x7f, 0x20, 0x00, // if n < 2: n
			0x05, 0x20, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x03, // else fib(n-1)
			0x20, 0x00, 0x41, 0x02, 0x6b, 0x10, 0x03, 0x6a, 0x0b, 0x0b), // + fib(n-2)
		fnBody(0x00, 0x41, 0x07, 0x0b),
	)),
	sec(0, str(".debug_info"), []byte{1, 2, 3}),
	sec(0, str("other"), []byte{4, 5}),
)

// withoutStart is spinner without its start section.
func withoutStart(t *testing.T) []byte {
	t.Helper()
	i := bytes.Index(spinner, sec(8, []byte{0x02}))
	if i < 0 {
		t.Fatal("no start section")
	}
	return append(append([]byte(nil), spinner[:i]...), spinner[i+3:]...)
}

// checkedRuntime is a runtime with the "drover" host module.
func checkedRuntime(t *testing.T) wazero.Runtime {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	t.Cleanup(func() { _ = r.Close(ctx) })
	if err := instantiateHost(ctx, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// instantiateChecked rewrites bin and instantiates it in a runtime with
// the "drover" host module; it returns the instance and the rewritten
// bytes.
func instantiateChecked(t *testing.T, bin []byte) (api.Module, []byte) {
	t.Helper()
	checked, err := addInterruptChecks(bin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mod, err := checkedRuntime(t).InstantiateWithConfig(ctx, checked, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mod.Close(ctx) })
	return mod, checked
}

// within fails the test if fn does not return in time, instead of hanging.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s", what, d)
	}
}

func TestInterruptChecks_StopGuestsThatNeverReturn(t *testing.T) {
	r := checkedRuntime(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		bin  []byte
		fn   string
		args []uint64
	}{{"start function", spinner, "", nil}, {"loop", withoutStart(t), "spin", nil},
		{"calls without loops", withoutStart(t), "fib", []uint64{90}}} {
		t.Run(tc.name, func(t *testing.T) {
			checked, err := addInterruptChecks(tc.bin)
			if err != nil {
				t.Fatal(err)
			}
			dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			within(t, 10*time.Second, "the interrupted guest", func() {
				mod, err := r.InstantiateWithConfig(dctx, checked, wazero.NewModuleConfig().WithName(""))
				if err == nil {
					defer mod.Close(ctx)
					_, err = mod.ExportedFunction(tc.fn).Call(dctx, tc.args...)
				}
				if !errors.Is(err, errInterrupted) || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("got %v, want the guest interrupted at its deadline", err)
				}
			})
		})
	}
}

// While a guest runs, the host's Go runtime can still stop the world: the
// checkpoints are where the guest's goroutine yields. Without them a
// collection waits for the guest to return.
func TestInterruptChecks_LetTheHostStopTheWorld(t *testing.T) {
	ctx := context.Background()
	mod, _ := instantiateChecked(t, withoutStart(t))
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	spun := make(chan error, 1)
	go func() {
		_, err := mod.ExportedFunction("spin").Call(dctx)
		spun <- err
	}()
	time.Sleep(20 * time.Millisecond) // the guest is spinning
	within(t, 2*time.Second, "a collection beside a spinning guest", runtime.GC)
	cancel()
	if err := <-spun; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled guest: %v", err)
	}
}

// Code that ends runs through its checks and checkpoints untouched.
func TestInterruptChecks_LeaveFinishingCodeAlone(t *testing.T) {
	ctx := context.Background()
	mod, checked := instantiateChecked(t, withoutStart(t))
	for _, c := range []context.Context{ctx, t.Context()} {
		for range 3 {
			res, err := mod.ExportedFunction("count").Call(c)
			if err != nil || res[0] != counted {
				t.Fatalf("count: %v %v", res, err)
			}
		}
		if res, err := mod.ExportedFunction("fib").Call(c, 20); err != nil || res[0] != 6765 {
			t.Fatalf("fib(20): %v %v", res, err)
		}
	}
	// A function that calls nothing and does not loop is left unchecked.
	if !bytes.Contains(checked, fnBody(0x00, 0x41, 0x07, 0x0b)) {
		t.Fatal("seven was given a check")
	}
}

func TestAddInterruptChecks_KeepsCustomSectionsButDWARF(t *testing.T) {
	bin, err := addInterruptChecks(spinner)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(bin, []byte(".debug_info")) {
		t.Fatal("DWARF section kept: its code offsets are wrong after the rewrite")
	}
	if !bytes.Contains(bin, []byte("other")) {
		t.Fatal("custom section dropped")
	}
}

// The checkpoint import moves every function the module defines up by
// one: calls, exports, element segments and names follow, and the
// countdown global comes after the imported and defined ones (wazero
// validates the types of what the checks read and write).
func TestAddInterruptChecks_RenumbersFunctionsAndGlobals(t *testing.T) {
	functionNames := vec(append([]byte{0x01}, str("run_fn")...), append([]byte{0x02}, str("plus_one")...))
	in := module(
		sec(1, vec([]byte{0x60, 0x00, 0x01, 0x7f})), // () -> i32
		sec(2, vec(
			append(append(str("env"), str("f")...), 0x00, 0x00),       // function 0
			append(append(str("env"), str("g")...), 0x03, 0x7e, 0x00), // an i64 global
		)),
		sec(3, vec([]byte{0x00}, []byte{0x00})),                             // functions 1 ("run") and 2
		sec(4, vec([]byte{0x70, 0x00, 0x01})),                               // a funcref table of 1
		sec(6, vec([]byte{0x7c, 0x00, 0x44, 0, 0, 0, 0, 0, 0, 0, 0, 0x0b})), // an f64 global
		sec(7, vec(append(str("run"), 0x00, 0x01))),
		sec(9, vec([]byte{0x00, 0x41, 0x00, 0x0b, 0x01, 0x02})), // table[0] = function 2
		sec(10, vec(
			fnBody(0x00, 0x41, 0x00, 0x11, 0x00, 0x00, 0x0b), // run: call_indirect table[0]
			fnBody(0x00, 0x10, 0x00, 0x41, 0x01, 0x6a, 0x0b), // 2: f() + 1
		)),
		sec(0, str("name"), []byte{0x01}, appendU32(nil, uint32(len(functionNames))), functionNames),
	)
	out, err := addInterruptChecks(in)
	if err != nil {
		t.Fatal(err)
	}
	// The checks count down global 2: after env.g and the module's f64.
	if !bytes.Contains(out, []byte{0x6b, 0x24, 0x02, 0x23, 0x02, 0x41, 0x00, 0x4c}) {
		t.Fatal("the checks do not count down global 2")
	}
	r := checkedRuntime(t)
	ctx := context.Background()
	env := module( // f returns 7, g is an i64
		sec(1, vec([]byte{0x60, 0x00, 0x01, 0x7f})),
		sec(3, vec([]byte{0x00})),
		sec(6, vec([]byte{0x7e, 0x00, 0x42, 0x00, 0x0b})),
		sec(7, vec(append(str("f"), 0x00, 0x00), append(str("g"), 0x03, 0x00))),
		sec(10, vec(fnBody(0x00, 0x41, 0x07, 0x0b))),
	)
	if _, err := r.InstantiateWithConfig(ctx, env, wazero.NewModuleConfig().WithName("env")); err != nil {
		t.Fatal(err)
	}
	cm, err := r.CompileModule(ctx, out)
	if err != nil {
		t.Fatalf("the rewritten module does not validate: %v", err)
	}
	if name := cm.ExportedFunctions()["run"].Name(); name != "run_fn" {
		t.Fatalf("run is named %q", name)
	}
	mod, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(ctx)
	if res, err := mod.ExportedFunction("run").Call(ctx); err != nil || res[0] != 8 {
		t.Fatalf("run: %v %v, want 8 (table[0] is f() + 1)", res, err)
	}
}

// A loop of large memory.fill calls passes few checks, but each fill is
// charged by its length: the guest stops soon after its deadline, where
// counting checks alone let it run 10,000 fills of 64 MiB.
func TestInterruptChecks_ChargeBulkMemoryByLength(t *testing.T) {
	in := module(
		sec(1, vec([]byte{0x60, 0x00, 0x00})),
		sec(3, vec([]byte{0x00})),
		sec(5, vec([]byte{0x00, 0x81, 0x08})), // 1,025 pages
		sec(7, vec(append(str("fill"), 0x00, 0x00))),
		sec(10, vec(fnBody(0x01, 0x02, 0x7e, 0x03, 0x40, // two i64 locals (the length's goes third), loop
			0x41, 0x00, 0x41, 0x07, 0x41, 0x80, 0x80, 0x80, 0x20, // fill 64 MiB at 0 with 7
			0xfc, 0x0b, 0x00, 0x0c, 0x00, 0x0b, 0x0b))), // memory.fill, br 0, end
	)
	mod, _ := instantiateChecked(t, in)
	dctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	within(t, 20*time.Second, "the filling guest", func() {
		if _, err := mod.ExportedFunction("fill").Call(dctx); !errors.Is(err, errInterrupted) {
			t.Errorf("got %v, want the guest interrupted", err)
		}
	})
}

// A check charges the code it guards and the unchecked functions that
// code calls; a leaf too large to charge to callers gets its own.
func TestAddInterruptChecks_ChargesWhatItGuards(t *testing.T) {
	small := []byte{0x00, 0x41, 0x07, 0x1a, 0x0b} // i32.const 7, drop
	large := []byte{0x00}
	for len(large) < leafLimit+10 {
		large = append(large, 0x41, 0x07, 0x1a)
	}
	large = append(large, 0x0b)
	loop := []byte{0x10, 0x00, 0x10, 0x01, 0x41, 0x00, 0x11, 0x00, 0x00, 0x0c, 0x00, 0x0b} // call 0, call 1, call_indirect, br 0, end
	in := module(
		sec(1, vec([]byte{0x60, 0x00, 0x00})),
		sec(3, vec([]byte{0x00}, []byte{0x00}, []byte{0x00})),
		sec(4, vec([]byte{0x70, 0x00, 0x01})),
		sec(10, vec(fnBody(small...), fnBody(large...), fnBody(append(append([]byte{0x00, 0x03, 0x40}, loop...), 0x0b)...))),
	)
	out, err := addInterruptChecks(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkedRuntime(t).CompileModule(context.Background(), out); err != nil {
		t.Fatalf("the rewritten module does not validate: %v", err)
	}
	charge := func(n int) []byte { // a check's first instructions
		return append(appendS32([]byte{0x23, 0x00, 0x41}, int32(n)), 0x6b)
	}
	if !bytes.Contains(out, fnBody(small...)) {
		t.Error("the small leaf was given a check")
	}
	if !bytes.Contains(out, charge(len(large)-1)) {
		t.Error("the large leaf's check does not charge its size")
	}
	// The loop: its bytes, the small leaf's and an indirect call's worth;
	// the large leaf charges itself.
	if want := len(loop) + len(small) + leafLimit; !bytes.Contains(out, charge(want)) {
		t.Errorf("no loop check charging %d", want)
	}
}

// A plugin whose initialisation never returns fails its load at the load
// timeout instead of holding it up.
func TestLoad_StopsAnInitialisationThatNeverReturns(t *testing.T) {
	defer func(d time.Duration) { loadTimeout = d }(loadTimeout)
	loadTimeout = 50 * time.Millisecond
	// _initialize loops; the ABI's exports have their types, so that the
	// load gets as far as initialising.
	exports := [][]byte{append(str("_initialize"), 0x00, 0x00)}
	for i, name := range []string{ExportABIVersion, ExportInfo, ExportBuffer, ExportProcess} {
		exports = append(exports, append(str(name), 0x00, byte(1+i)))
	}
	in := module(
		sec(1, vec([]byte{0x60, 0x00, 0x00}, []byte{0x60, 0x00, 0x01, 0x7f}, []byte{0x60, 0x00, 0x01, 0x7e},
			[]byte{0x60, 0x01, 0x7f, 0x01, 0x7f}, []byte{0x60, 0x01, 0x7f, 0x01, 0x7e})),
		sec(3, vec([]byte{0x00}, []byte{0x01}, []byte{0x02}, []byte{0x03}, []byte{0x04})),
		sec(5, vec([]byte{0x00, 0x01})),
		sec(7, vec(append(exports, append(str("memory"), 0x02, 0x00))...)),
		sec(10, vec(fnBody(0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b), fnBody(0x00, 0x41, 0x00, 0x0b),
			fnBody(0x00, 0x42, 0x00, 0x0b), fnBody(0x00, 0x41, 0x00, 0x0b), fnBody(0x00, 0x42, 0x00, 0x0b))),
	)
	within(t, 20*time.Second, "Load", func() {
		if _, err := Load(context.Background(), in, DefaultConfig()); !errors.Is(err, errInterrupted) {
			t.Errorf("got %v, want the initialisation interrupted", err)
		}
	})
}

// A module with neither the type the import needs nor import, global or
// export sections gets them, in order.
func TestAddInterruptChecks_AddsMissingSections(t *testing.T) {
	in := module(
		sec(1, vec([]byte{0x60, 0x01, 0x7f, 0x00})), // (i32) -> ()
		sec(3, vec([]byte{0x00})),
		sec(10, vec(fnBody(0x00, 0x0b))),
	)
	out, err := addInterruptChecks(in)
	if err != nil {
		t.Fatal(err)
	}
	r := checkedRuntime(t)
	if _, err := r.Instantiate(context.Background(), out); err != nil {
		t.Fatalf("the rewritten module: %v", err)
	}
}

func TestAddInterruptChecks_RefusesWhatItCannotRead(t *testing.T) {
	for name, bin := range map[string][]byte{
		"not wasm":  []byte("#!/bin/sh\n"),
		"truncated": spinner[:len(spinner)-20],
		"try block (exception handling)": module(sec(1, vec([]byte{0x60, 0x00, 0x00})), sec(3, vec([]byte{0x00})),
			sec(10, vec(fnBody(0x00, 0x06, 0x40, 0x0b, 0x0b)))),
		"a struct type (GC proposal)": module(sec(1, vec([]byte{0x5f, 0x00}))),
		"a (ref null func) local": module(sec(1, vec([]byte{0x60, 0x00, 0x00})), sec(3, vec([]byte{0x00})),
			sec(10, vec(fnBody(0x01, 0x01, 0x63, 0x70, 0x0b)))),
		// Invalid modules that the rewrite would make valid, with access to
		// the countdown: setting global 0 in a module without globals, and
		// a call index written in five bytes past 32 bits.
		"a global that does not exist": module(sec(1, vec([]byte{0x60, 0x00, 0x00})), sec(3, vec([]byte{0x00})),
			sec(10, vec(fnBody(0x00, 0x41, 0x00, 0x24, 0x00, 0x0b)))),
		"an overlong index": module(sec(1, vec([]byte{0x60, 0x00, 0x00})), sec(3, vec([]byte{0x00})),
			sec(10, vec(fnBody(0x00, 0x10, 0x80, 0x80, 0x80, 0x80, 0x10, 0x0b)))),
		"body overruns": module(sec(1, vec([]byte{0x60, 0x00, 0x00})), sec(3, vec([]byte{0x00})),
			sec(10, vec(fnBody(0x00, 0x41)))),
	} {
		if _, err := addInterruptChecks(bin); !errors.Is(err, errUninstrumentable) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// plausibleCounts: no section's vector count exceeds its bytes, as in any
// valid module. wazero's decoder allocates by the count before reading
// the items: 22 bytes declaring 100 million data segments took 5 GB,
// which crashed fuzz workers now and then.
func plausibleCounts(bin []byte) bool {
	r := &reader{b: bin, pos: 8}
	for r.pos < len(r.b) && r.err == nil {
		id := r.byte()
		body := r.bytes(int(r.u32()))
		if id == secCustom || id == secStart || id == 12 { // 12: data count, a count of another section's items
			continue
		}
		br := &reader{b: body}
		if n := br.u32(); br.err == nil && int(n) > len(body) {
			return false
		}
	}
	return true
}

// FuzzAddInterruptChecks: the rewriter never panics, and what wazero
// accepts, rewritten, wazero still accepts.
func FuzzAddInterruptChecks(f *testing.F) {
	fuzzRewrite(f, addInterruptChecks,
		spinner,
		module(sec(1, vec([]byte{0x60, 0x01, 0x7f, 0x01, 0x7f})), sec(3, vec([]byte{0x00})),
			sec(10, vec(fnBody(0x00, 0x20, 0x00, 0x03, 0x00, 0x0c, 0x00, 0x0b, 0x0b)))), // a loop with a parameter
		[]byte("\x00asm\x01\x00\x00\x00\v\b\xc4\xc4\xc400000")) // 100 million data segments in 8 bytes
}

// fuzzRewrite fuzzes a rewrite of modules from seeds: it never panics,
// and a module wazero accepts, rewritten, wazero still accepts.
func fuzzRewrite(f *testing.F, rewrite func([]byte) ([]byte, error), seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	f.Cleanup(func() { _ = r.Close(ctx) })
	f.Fuzz(func(t *testing.T, bin []byte) {
		out, err := rewrite(bin)
		if err != nil || !plausibleCounts(bin) {
			return
		}
		if _, err := r.CompileModule(ctx, bin); err != nil {
			return
		}
		if _, err := r.CompileModule(ctx, out); err != nil {
			t.Fatalf("valid module rewritten invalid: %v", err)
		}
	})
}
