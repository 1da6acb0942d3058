package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The first byte of a connection to a server's RPC address says what
// follows, as on Nomad's RPC port: raft's own protocol, or HTTP/1.1 (the
// cluster's internal endpoints and API requests forwarded to the leader).
const (
	rpcRaft byte = 0x01
	rpcHTTP byte = 0x05
)

// rpcHandshakeTimeout bounds the wait for a new connection's first byte.
const rpcHandshakeTimeout = 5 * time.Second

// rpcMux splits the connections of the RPC listener by their first byte.
type rpcMux struct {
	ln        net.Listener
	advertise net.Addr
	raft      *connListener
	http      *connListener
	closeOnce sync.Once
	done      chan struct{}
	wg        sync.WaitGroup
}

func newRPCMux(ln net.Listener, advertise net.Addr) *rpcMux {
	m := &rpcMux{ln: ln, advertise: advertise, done: make(chan struct{})}
	m.raft = newConnListener(advertise, m.done)
	m.http = newConnListener(advertise, m.done)
	m.wg.Add(1)
	go m.accept()
	return m
}

func (m *rpcMux) accept() {
	defer m.wg.Done()
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, an aborted connection: the
			// listener still works; wait a little and go on.
			select {
			case <-m.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		go m.route(c)
	}
}

// route reads a connection's first byte and hands it to its listener.
func (m *rpcMux) route(c net.Conn) {
	var b [1]byte
	_ = c.SetReadDeadline(time.Now().Add(rpcHandshakeTimeout))
	if _, err := c.Read(b[:]); err != nil {
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	var to *connListener
	switch b[0] {
	case rpcRaft:
		to = m.raft
	case rpcHTTP:
		to = m.http
	default:
		_ = c.Close()
		return
	}
	select {
	case to.conns <- c:
	case <-m.done:
		_ = c.Close()
	}
}

func (m *rpcMux) close() {
	m.closeOnce.Do(func() {
		close(m.done)
		_ = m.ln.Close()
	})
	m.wg.Wait()
}

// connListener is a net.Listener fed by the mux.
type connListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  <-chan struct{}
}

func newConnListener(addr net.Addr, done <-chan struct{}) *connListener {
	return &connListener{addr: addr, conns: make(chan net.Conn), done: done}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close does nothing: the mux closes its listeners together.
func (l *connListener) Close() error { return nil }

func (l *connListener) Addr() net.Addr { return l.addr }

// rpcDialTimeout bounds connecting to another server.
const rpcDialTimeout = 5 * time.Second

// dialRPC connects to a server's RPC address for kind (rpcRaft, rpcHTTP).
func dialRPC(ctx context.Context, addr string, kind byte) (net.Conn, error) {
	d := net.Dialer{Timeout: rpcDialTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte{kind}); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// raftStream is raft's stream layer over the mux.
type raftStream struct{ *connListener }

var _ raft.StreamLayer = raftStream{}

func (s raftStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return dialRPC(ctx, string(addr), rpcRaft)
}

// tcpAddr is an advertised address given as a string.
type tcpAddr string

func (a tcpAddr) Network() string { return "tcp" }
func (a tcpAddr) String() string  { return string(a) }

// listenRPC opens the RPC listener and works out the address the other
// servers reach it at.
func listenRPC(bind, advertise string) (net.Listener, net.Addr, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, nil, fmt.Errorf("server: listen for RPC on %s: %w", bind, err)
	}
	if advertise == "" {
		host, _, _ := net.SplitHostPort(ln.Addr().String())
		if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
			_ = ln.Close()
			return nil, nil, fmt.Errorf("server: RPC bound to %s: set an advertise address the other servers can reach", bind)
		}
		return ln, ln.Addr(), nil
	}
	host, _, err := net.SplitHostPort(advertise)
	if err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			err = errors.New("not an address other servers can reach")
		}
	}
	if err != nil {
		_ = ln.Close()
		return nil, nil, fmt.Errorf("server: RPC advertise address %q: %w", advertise, err)
	}
	return ln, tcpAddr(advertise), nil
}
