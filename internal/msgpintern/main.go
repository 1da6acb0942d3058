// Command msgpintern rewrites msgp-generated unmarshallers of package sdk
// so that they decode strings through sdk's readString, which returns a
// shared copy of the common values (statuses, the default namespace,
// scorer names) instead of allocating one per field: decoding a plan of
// 1,000 placements allocated about 37 objects per placement, ten of them
// such strings.
//
// Usage (after msgp, in a go:generate line of package sdk): msgpintern FILE...
package main

import (
	"bytes"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: msgpintern FILE...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		src, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out := bytes.ReplaceAll(src, []byte("msgp.ReadStringBytes(bts)"), []byte("readString(bts)"))
		if bytes.Equal(out, src) {
			continue
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
