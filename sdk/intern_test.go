package sdk

import (
	"strings"
	"testing"

	"github.com/tinylib/msgp/msgp"
)

func TestReadString_InternsCommonValues(t *testing.T) {
	for _, v := range []string{"", "default", "run", "pending", "complete", "binpack", "normalized-score",
		"not-a-common-value", strings.Repeat("x", 300), "ünïcode"} {
		enc := msgp.AppendString(append(msgp.AppendString(nil, v), 0xc0), "next") // v, nil, "next"
		got, rest, err := readString(enc)
		want, wantRest, wantErr := msgp.ReadStringBytes(enc)
		if got != want || string(rest) != string(wantRest) || err != wantErr {
			t.Fatalf("%q: readString = %q, %d bytes left, %v; msgp.ReadStringBytes = %q, %d, %v",
				v, got, len(rest), err, want, len(wantRest), wantErr)
		}
	}
	// Errors are msgp's: not a string, short input.
	for _, enc := range [][]byte{{0xc0}, {0xd9}, {0xa5, 'a'}, nil} {
		got, rest, err := readString(enc)
		want, wantRest, wantErr := msgp.ReadStringBytes(enc)
		if got != want || len(rest) != len(wantRest) || (err == nil) != (wantErr == nil) {
			t.Fatalf("% x: readString = %q, %v; msgp = %q, %v", enc, got, err, want, wantErr)
		}
	}
	common := msgp.AppendString(nil, AllocClientStatusPending)
	if n := testing.AllocsPerRun(100, func() { _, _, _ = readString(common) }); n != 0 {
		t.Fatalf("decoding a common value allocated %v times", n)
	}
}
