//go:build !wasip1

package grpcwire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/drover-sched/drover/sdk/abi"
)

// EvalSocketEnv names the environment variable through which a host hands
// a go-plugin process the eval socket: its value is the descriptor of the
// plugin's end of a socket pair (3 when it is the only inherited file).
//
// From ABI 1.6 a plugin serves its evals there, and the host sends them
// there to a plugin that declares 1.6: one Process frame, the plugin's
// planner calls and their answers, one Result frame. gRPC stays for the
// handshake, Info and older peers. Over gRPC an eval costs HTTP/2 framing,
// flow control and several goroutine hand-offs per message on both sides;
// a 1 MiB plan took 5.2 ms there against 0.37 ms on the socket pair
// (docs/benchmarks.md).
const EvalSocketEnv = "DROVER_EVAL_FD"

// Frames on the eval socket: a 4-byte big-endian length of what follows
// the header, a kind byte, then the message. A Call carries the Host
// service's request framing and an Answer its answer framing (op, and
// code, as big-endian 32-bit integers ahead of the message).
type frameKind byte

const (
	kindProcess frameKind = 1 + iota // host → plugin: an encoded abi.ProcessRequest
	kindCall                         // plugin → host: a planner call
	kindAnswer                       // host → plugin: a planner call's answer
	kindResult                       // plugin → host: the encoded abi.ProcessResponse
)

const headerBytes = 5

// EvalSocket is one end of the eval socket. Its calls are not safe for
// concurrent use: one eval at a time runs over it.
type EvalSocket struct {
	c net.Conn
}

// NewEvalSocket wraps f, one end of the socket pair; f is closed (the
// socket keeps its own descriptor).
func NewEvalSocket(f *os.File) (*EvalSocket, error) {
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("grpcwire: eval socket: %w", err)
	}
	return &EvalSocket{c: c}, nil
}

// Close closes this end.
func (s *EvalSocket) Close() error { return s.c.Close() }

func (s *EvalSocket) write(k frameKind, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n > MaxMessageBytes {
		return fmt.Errorf("grpcwire: eval socket: message of %d bytes exceeds %d", n, MaxMessageBytes)
	}
	var h [headerBytes]byte
	binary.BigEndian.PutUint32(h[:4], uint32(n))
	h[4] = byte(k)
	bufs := make(net.Buffers, 0, 1+len(parts))
	bufs = append(append(bufs, h[:]), parts...)
	if _, err := bufs.WriteTo(s.c); err != nil {
		return fmt.Errorf("grpcwire: eval socket: %w", err)
	}
	return nil
}

// read returns the next frame. The message is fresh memory: a decoder may
// keep slices of it.
func (s *EvalSocket) read() (frameKind, []byte, error) {
	var h [headerBytes]byte
	if _, err := io.ReadFull(s.c, h[:]); err != nil {
		return 0, nil, fmt.Errorf("grpcwire: eval socket: %w", err)
	}
	n := binary.BigEndian.Uint32(h[:4])
	if n > MaxMessageBytes {
		return 0, nil, fmt.Errorf("grpcwire: eval socket: frame of %d bytes exceeds %d", n, MaxMessageBytes)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(s.c, msg); err != nil {
		return 0, nil, fmt.Errorf("grpcwire: eval socket: %w", err)
	}
	return frameKind(h[4]), msg, nil
}

// Process sends one encoded abi.ProcessRequest (host side) and answers the
// plugin's planner calls with h until its result comes. When ctx ends
// first, Process returns ctx's error and the socket is left mid-eval: the
// caller ends the process. The deadline ends writes too: a plugin that
// stops reading would otherwise hold a write larger than the socket's
// buffer, and the eval, forever.
func (s *EvalSocket) Process(ctx context.Context, req []byte, h HostHandler) ([]byte, error) {
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = s.c.SetDeadline(time.Unix(1, 0))
		close(fired)
	})
	out, err := s.process(req, h)
	if !stop() {
		// The deadline was set, perhaps after the eval ended: clear it
		// once set, so that it cannot fail the next eval.
		<-fired
		_ = s.c.SetDeadline(time.Time{})
		if err != nil {
			return nil, ctx.Err()
		}
	}
	return out, err
}

func (s *EvalSocket) process(req []byte, h HostHandler) ([]byte, error) {
	if err := s.write(kindProcess, req); err != nil {
		return nil, err
	}
	for {
		k, msg, err := s.read()
		if err != nil {
			return nil, err
		}
		switch k {
		case kindCall:
			if err := s.write(kindAnswer, h.answer(msg)); err != nil {
				return nil, err
			}
		case kindResult:
			return msg, nil
		default:
			return nil, fmt.Errorf("grpcwire: eval socket: unexpected frame kind %d from the plugin", k)
		}
	}
}

// ErrEvalSocketClosed is what Serve returns when the host closed its end.
var ErrEvalSocketClosed = errors.New("grpcwire: eval socket closed")

// Serve answers the host's evals (plugin side) with process until the host
// closes its end. process gets each request and a HostFunc-shaped way to
// make planner calls, and returns the encoded abi.ProcessResponse. idle,
// if not nil, runs after each answer is written and before the next
// request is read: the plugin's housekeeping, off the eval's time.
func (s *EvalSocket) Serve(process func(req []byte, host func(op abi.Op, msg []byte) ([]byte, error)) []byte, idle func()) error {
	host := func(op abi.Op, msg []byte) ([]byte, error) {
		if err := s.write(kindCall, binary.BigEndian.AppendUint32(nil, uint32(op)), msg); err != nil {
			return nil, abi.Err(abi.CodeUnavailable, "plugin: host call "+op.String()+": "+err.Error())
		}
		k, out, err := s.read()
		if err != nil {
			return nil, abi.Err(abi.CodeUnavailable, "plugin: host call "+op.String()+": "+err.Error())
		}
		if k != kindAnswer {
			return nil, abi.Err(abi.CodeDecode, fmt.Sprintf("plugin: host call %s: unexpected frame kind %d", op, k))
		}
		return parseAnswer(op, out)
	}
	for {
		k, req, err := s.read()
		if errors.Is(err, io.EOF) {
			return ErrEvalSocketClosed
		}
		if err != nil {
			return err
		}
		if k != kindProcess {
			return fmt.Errorf("grpcwire: eval socket: unexpected frame kind %d from the host", k)
		}
		if err := s.write(kindResult, process(req, host)); err != nil {
			return err
		}
		if idle != nil {
			idle()
		}
	}
}
