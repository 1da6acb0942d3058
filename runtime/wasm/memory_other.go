//go:build !linux

package wasm

import "context"

// withReservedMemory leaves wazero's default memory: reserving address
// space up front, and committing its first prefault bytes, are implemented
// for Linux only.
func withReservedMemory(ctx context.Context, _ uint64) context.Context { return ctx }
