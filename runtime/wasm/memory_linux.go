//go:build linux

package wasm

import (
	"context"
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// withReservedMemory makes the instances created with ctx reserve their
// whole memory limit as address space up front (an anonymous mapping,
// MAP_NORESERVE), so that a guest's memory.grow only lengthens the slice
// over it. wazero's default Go-slice memory copies the whole linear memory
// on every growth: a fresh instance whose heap grows to hundreds of MiB
// spent about a tenth of its first evals' CPU in those copies
// (docs/benchmarks.md). Pages are committed by the kernel as the guest
// touches them, and come zeroed, as grown wasm memory must be. Where the
// mapping fails (strict overcommit) wazero's default is used.
//
// The first prefault bytes of the mapping are committed at once
// (MADV_POPULATE_WRITE, Linux 5.14 and later; older kernels leave them to
// be faulted in as touched). A page fault costs about 15 µs on the
// paravirtualised machines we measure on, and a fresh instance touches
// hundreds of pages in its first evals: an instance that starts with the
// memory its predecessor ended with does not take them one by one.
func withReservedMemory(ctx context.Context, prefault uint64) context.Context {
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(func(capBytes, maxBytes uint64) experimental.LinearMemory {
		return allocateReserved(capBytes, maxBytes, prefault)
	}))
}

func allocateReserved(capBytes, maxBytes, prefault uint64) experimental.LinearMemory {
	if maxBytes > 0 && maxBytes <= 1<<32 {
		b, err := syscall.Mmap(-1, 0, int(maxBytes), syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
		if err == nil {
			if n := min(prefault, maxBytes) &^ (pageSize - 1); n > 0 {
				_ = unix.Madvise(b[:n], unix.MADV_POPULATE_WRITE)
			}
			return &reservedMemory{buf: b}
		}
	}
	return &sliceMemory{buf: make([]byte, 0, capBytes), max: maxBytes}
}

// pageSize is the host's page size: madvise takes whole pages.
var pageSize = uint64(syscall.Getpagesize())

// reservedMemory is a linear memory over a mapping of its maximum size.
type reservedMemory struct {
	buf []byte
}

func (m *reservedMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size:size]
}

func (m *reservedMemory) Free() {
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf = nil
	}
}

// sliceMemory is a linear memory in a Go slice, grown by copying as
// wazero's default memory is.
type sliceMemory struct {
	buf []byte
	max uint64
}

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	// Double as append would, up to the maximum.
	c := min(max(size, 2*uint64(cap(m.buf))), m.max)
	b := make([]byte, size, c)
	copy(b, m.buf)
	m.buf = b
	return b
}

func (m *sliceMemory) Free() { m.buf = nil }
