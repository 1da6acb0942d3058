// Command msgpnorequire rewrites msgp-generated marshallers so that they do
// not pre-size their output buffer.
//
// Every generated MarshalMsg starts with msgp.Require(b, z.Msgsize()):
// Msgsize walks the whole value, and since nested types call their own
// MarshalMsg, a value n levels deep is walked n+1 times (maps included)
// before a byte is written. The msgp.Append functions grow the buffer as
// needed, and callers that encode repeatedly reuse their buffer, so the
// pre-sizing only costs: on a plan of 1,000 allocations it tripled the
// marshal time natively, and more inside wasm. See RATIONALE.md.
//
// Usage (after msgp, in a go:generate line): msgpnorequire FILE...
package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
)

var require = regexp.MustCompile(`(?m)^(\s*)o = msgp\.Require\(b, [a-z]+\.Msgsize\(\)\)$`)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: msgpnorequire FILE...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		src, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out := require.ReplaceAll(src, []byte("${1}o = b"))
		if bytes.Equal(out, src) {
			continue
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
