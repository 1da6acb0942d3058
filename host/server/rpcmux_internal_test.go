package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// What refuse remembers to rate limit its warnings stays bounded however
// many values the other side makes up (cluster IDs, certificate names in
// handshake errors), and a network error's addresses are no part of it.
func TestRPCMux_RefusedRecordIsBounded(t *testing.T) {
	m := &rpcMux{log: zerolog.Nop(), refused: map[string]time.Time{}}
	for i := range 3 * refusedLogKeys {
		a, b := net.Pipe()
		m.refuse(a, "their_cluster", fmt.Sprint("made-up-", i), "cluster", "ours", "refused")
		_ = b.Close()
		if len(m.refused) > refusedLogKeys {
			t.Fatalf("%d values remembered", len(m.refused))
		}
	}
	timeout := &net.OpError{Op: "read", Net: "tcp", Addr: &net.TCPAddr{Port: 4647}, Err: os.ErrDeadlineExceeded}
	if got := withoutAddrs(timeout); got != os.ErrDeadlineExceeded.Error() {
		t.Errorf("withoutAddrs = %q", got)
	}
	if got := withoutAddrs(errors.New("tls: bad certificate")); got != "tls: bad certificate" {
		t.Errorf("withoutAddrs = %q", got)
	}
}
