//go:build linux

package wasm

import (
	"context"
	"testing"
	"unsafe"

	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"golang.org/x/sys/unix"
)

func TestReservedMemory_GrowsInPlaceUpToItsMaximum(t *testing.T) {
	const page = 64 << 10
	mem := allocateReserved(page, 64*page, 0)
	if _, ok := mem.(*reservedMemory); !ok {
		t.Fatalf("got %T, want a reserved mapping", mem)
	}
	defer mem.Free()
	b := mem.Reallocate(page)
	if len(b) != page {
		t.Fatalf("len %d", len(b))
	}
	b[page-1] = 7
	base := unsafe.SliceData(b)
	for _, size := range []uint64{2 * page, 17 * page, 64 * page} {
		g := mem.Reallocate(size)
		if uint64(len(g)) != size || unsafe.SliceData(g) != base {
			t.Fatalf("grow to %d: len %d, moved %v", size, len(g), unsafe.SliceData(g) != base)
		}
		if g[page-1] != 7 || g[size-1] != 0 {
			t.Fatalf("grow to %d lost or dirtied bytes", size)
		}
	}
	if g := mem.Reallocate(65 * page); g != nil {
		t.Fatalf("grew past the maximum to %d", len(g))
	}
}

func TestReservedMemory_CommitsItsPrefaultUpFront(t *testing.T) {
	const page = 64 << 10
	for _, tc := range []struct {
		name     string
		prefault uint64
		want     uint64 // bytes resident before any touch
	}{
		{"none", 0, 0},
		{"some", 3*page + 100, (3*page + 100) &^ (pageSize - 1)},
		{"more than the maximum", 100 * page, 8 * page},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := allocateReserved(page, 8*page, tc.prefault)
			defer mem.Free()
			r, ok := mem.(*reservedMemory)
			if !ok {
				t.Fatalf("got %T, want a reserved mapping", mem)
			}
			var resident uint64
			for i, in := range residentPages(t, r.buf) {
				if !in {
					continue
				}
				if uint64(i)*pageSize != resident {
					t.Fatalf("host page %d resident after a gap", i)
				}
				resident += pageSize
			}
			if resident != tc.want {
				t.Fatalf("%d bytes resident, want %d", resident, tc.want)
			}
		})
	}
}

func TestSliceMemory_GrowsByCopyingUpToItsMaximum(t *testing.T) {
	mem := &sliceMemory{max: 100}
	b := mem.Reallocate(10)
	b[9] = 7
	if g := mem.Reallocate(100); len(g) != 100 || g[9] != 7 {
		t.Fatalf("grow: len %d", len(g))
	}
	if g := mem.Reallocate(101); g != nil {
		t.Fatal("grew past the maximum")
	}
}

// TestModule_NewInstanceStartsWithItsPredecessorsMemory: an instance
// closed at some size leaves the next instance that much memory committed.
func TestModule_NewInstanceStartsWithItsPredecessorsMemory(t *testing.T) {
	ctx := context.Background()
	m, err := LoadFile(ctx, wasmtest.Build(t, "./plugins/service"), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)

	first, err := m.instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := first.mod.Memory().Grow(160); !ok { // 10 MiB
		t.Fatal("grow refused")
	}
	size := first.MemoryBytes()
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := m.lastSize.Load(); got != size {
		t.Fatalf("recorded %d bytes, want the closed instance's %d", got, size)
	}

	next, err := m.instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close(ctx)
	view, ok := next.mod.Memory().Read(0, 1)
	if !ok {
		t.Fatal("no memory")
	}
	// The mapping reaches past the memory's current size: mincore only
	// reads page tables, so looking there is safe.
	pages := residentPages(t, unsafe.Slice(&view[0], size))
	for i, in := range pages {
		if !in {
			t.Fatalf("host page %d of %d not resident", i, len(pages))
		}
	}
}

// residentPages says, for each host page of the page-aligned b, whether it
// is resident (mincore).
func residentPages(t *testing.T, b []byte) []bool {
	t.Helper()
	vec := make([]byte, uint64(len(b))/pageSize)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	in := make([]bool, len(vec))
	for i, v := range vec {
		in[i] = v&1 != 0
	}
	return in
}
