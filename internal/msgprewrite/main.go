// Command msgprewrite rewrites msgp-generated code after msgp runs:
//
//   - Always, marshallers stop pre-sizing their output buffer. Every
//     generated MarshalMsg starts with msgp.Require(b, z.Msgsize()):
//     Msgsize walks the whole value, and since nested types call their own
//     MarshalMsg, a value n levels deep is walked n+1 times (maps included)
//     before a byte is written. The msgp.Append functions grow the buffer
//     as needed, and callers that encode repeatedly reuse their buffer, so
//     the pre-sizing only costs: on a plan of 1,000 allocations it tripled
//     the marshal time natively, and more inside wasm. See RATIONALE.md.
//   - With -intern, unmarshallers decode strings through the package's
//     readString (sdk/intern.go) instead of msgp.ReadStringBytes: it
//     returns a shared copy of the common values (statuses, the default
//     namespace, scorer names) rather than allocating one per field;
//     decoding a plan of 1,000 placements allocated about 37 objects per
//     placement, ten of them such strings.
//
// Usage (after msgp, in a go:generate line): msgprewrite [-intern] FILE...
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
)

var require = regexp.MustCompile(`(?m)^(\s*)o = msgp\.Require\(b, [a-z]+\.Msgsize\(\)\)$`)

func main() {
	intern := flag.Bool("intern", false, "decode strings through the package's readString")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: msgprewrite [-intern] FILE...")
		os.Exit(2)
	}
	for _, path := range flag.Args() {
		if err := rewrite(path, *intern); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func rewrite(path string, intern bool) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out := require.ReplaceAll(src, []byte("${1}o = b"))
	if intern {
		out = bytes.ReplaceAll(out, []byte("msgp.ReadStringBytes(bts)"), []byte("readString(bts)"))
	}
	if bytes.Equal(out, src) {
		return nil
	}
	return os.WriteFile(path, out, 0o644)
}
