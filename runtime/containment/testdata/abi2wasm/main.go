// Command abi2wasm is a wasm module with Drover's exports that declares ABI
// major 2.
package main

//go:wasmexport drover_abi_version
func abiVersion() uint32 { return 2 << 16 }

//go:wasmexport drover_info
func info() uint64 { return 0 }

//go:wasmexport drover_buffer
func buffer(uint32) uint32 { return 0 }

//go:wasmexport drover_process
func process(uint32) uint64 { return 0 }

func main() {}
