//go:build !wasip1

package plugin

import (
	"fmt"
	"os"
)

// Serve serves the registered scheduler as a go-plugin binary.
//
// The go-plugin transport lands with runtime/goplugin; until then a native
// build says so instead of pretending to serve.
func Serve() {
	fmt.Fprintln(os.Stderr, "plugin: the go-plugin transport is not available in this build; build with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared")
	os.Exit(1)
}
