//go:build !linux

package wasm

import "context"

// withReservedMemory leaves wazero's default memory: reserving address
// space up front is implemented for Linux only.
func withReservedMemory(ctx context.Context) context.Context { return ctx }
