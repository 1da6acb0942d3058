//go:build linux

package wasm

import (
	"testing"
	"unsafe"
)

func TestReservedMemory_GrowsInPlaceUpToItsMaximum(t *testing.T) {
	const page = 64 << 10
	mem := allocateReserved(page, 64*page)
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
