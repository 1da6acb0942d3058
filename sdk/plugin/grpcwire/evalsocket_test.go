//go:build unix

package grpcwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk/abi"
)

// pair returns both ends of an eval socket.
func pair(t *testing.T) (host, plugin *EvalSocket) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	host, err = NewEvalSocket(os.NewFile(uintptr(fds[0]), "host"))
	if err != nil {
		t.Fatal(err)
	}
	plugin, err = NewEvalSocket(os.NewFile(uintptr(fds[1]), "plugin"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close(); plugin.Close() })
	return host, plugin
}

// TestEvalSocket_CarriesEvalsAndPlannerCalls: each eval's request reaches
// the plugin, its planner calls reach the host in order with their answers
// or errors (code and message kept), and its result comes back; a large
// message crosses whole; closing the host's end ends Serve.
func TestEvalSocket_CarriesEvalsAndPlannerCalls(t *testing.T) {
	host, plugin := pair(t)
	big := bytes.Repeat([]byte("plan"), 1<<18) // 1 MiB, far above a socket buffer
	served := make(chan error, 1)
	go func() {
		served <- plugin.Serve(func(req []byte, call func(abi.Op, []byte) ([]byte, error)) []byte {
			var out []byte
			for i, op := range []abi.Op{abi.OpSubmitPlan, abi.OpUpdateEval} {
				msg := req
				if i == 0 {
					msg = big
				}
				ans, err := call(op, msg)
				if err != nil {
					out = append(out, fmt.Sprintf("error %d: %v;", abi.CodeOf(err), err)...)
					continue
				}
				out = append(out, ans...)
				out = append(out, ';')
			}
			return out
		}, nil)
	}()
	var ops []abi.Op
	h := HostHandler(func(op abi.Op, msg []byte) ([]byte, error) {
		ops = append(ops, op)
		if op == abi.OpUpdateEval {
			return nil, abi.Err(abi.CodeInvalidEval, "no such eval "+string(msg))
		}
		if !bytes.Equal(msg, big) {
			t.Errorf("plan of %d bytes arrived as %d", len(big), len(msg))
		}
		return []byte("index 7"), nil
	})
	for _, req := range []string{"e1", "e2"} {
		out, err := host.Process(context.Background(), []byte(req), h)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("index 7;error %d: no such eval %s;", abi.CodeInvalidEval, req)
		if string(out) != want {
			t.Fatalf("result %q, want %q", out, want)
		}
	}
	if len(ops) != 4 || ops[0] != abi.OpSubmitPlan || ops[1] != abi.OpUpdateEval {
		t.Fatalf("host calls %v", ops)
	}
	host.Close()
	if err := <-served; !errors.Is(err, ErrEvalSocketClosed) {
		t.Fatalf("Serve after the host closed: %v", err)
	}
}

// TestEvalSocket_IdleRunsOffTheEvalsTime: the plugin's idle work runs once
// per eval, after the host has the answer, and before the plugin reads the
// next eval.
func TestEvalSocket_IdleRunsOffTheEvalsTime(t *testing.T) {
	host, plugin := pair(t)
	var processed int
	idling := make(chan int)
	release := make(chan struct{})
	go plugin.Serve(func(req []byte, _ func(abi.Op, []byte) ([]byte, error)) []byte {
		processed++
		return req
	}, func() {
		idling <- processed
		<-release
	})
	for i := 1; i <= 3; i++ {
		// Idle work that ran before the answer was written would hold
		// the answer back until this deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := host.Process(ctx, []byte("ok"), nil)
		cancel()
		if err != nil || string(out) != "ok" {
			t.Fatalf("eval %d: %q, %v", i, out, err)
		}
		// The answer is in while idle is still running; idle saw this
		// eval and not yet the next.
		select {
		case got := <-idling:
			if got != i {
				t.Fatalf("idle after eval %d saw %d evals", i, got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no idle work after eval %d", i)
		}
		release <- struct{}{}
	}
}

// TestEvalSocket_DeadlineEndsAnEvalThePluginNeverAnswers: Process returns
// the context's error, and a later eval on a fresh socket is not hit by
// the deadline of the earlier one.
func TestEvalSocket_DeadlineEndsAnEvalThePluginNeverAnswers(t *testing.T) {
	host, _ := pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := host.Process(ctx, []byte("req"), func(abi.Op, []byte) ([]byte, error) { return nil, nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the deadline", err)
	}

	// A plugin that stops reading cannot hold the host in a write larger
	// than the socket's buffer past the deadline.
	host, _ = pair(t)
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := host.Process(ctx, make([]byte, 32<<20), nil)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("unread request: err %v, want the deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a request the plugin never reads held the host past its deadline")
	}

	// An eval that ends just as its context does leaves no deadline behind.
	host, plugin := pair(t)
	go plugin.Serve(func(req []byte, _ func(abi.Op, []byte) ([]byte, error)) []byte { return req }, nil)
	for i := 0; i < 50; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		out, err := host.Process(ctx, []byte("ok"), nil)
		cancel()
		if err != nil || string(out) != "ok" {
			t.Fatalf("eval %d: %q, %v", i, out, err)
		}
	}
}

// TestEvalSocket_RefusesBrokenFraming: a frame of an unexpected kind or of
// more than MaxMessageBytes fails the eval instead of being believed.
func TestEvalSocket_RefusesBrokenFraming(t *testing.T) {
	cases := []struct {
		name  string
		frame []byte
		want  string
	}{
		{"unknown kind", append(binary.BigEndian.AppendUint32(nil, 2), 9, 'h', 'i'), "unexpected frame kind 9"},
		{"a Process sent to the host", append(binary.BigEndian.AppendUint32(nil, 0), byte(kindProcess)), "unexpected frame kind 1"},
		{"oversized", append(binary.BigEndian.AppendUint32(nil, MaxMessageBytes+1), byte(kindResult)), "exceeds"},
		{"cut short", append(binary.BigEndian.AppendUint32(nil, 100), byte(kindResult), 'x'), "EOF"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host, plugin := pair(t)
			go func() {
				if _, _, err := plugin.read(); err == nil {
					plugin.c.Write(tc.frame)
					plugin.Close()
				}
			}()
			_, err := host.Process(context.Background(), []byte("req"), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
