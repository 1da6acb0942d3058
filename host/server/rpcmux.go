package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-sched/drover/host/tlsutil"
	"github.com/hashicorp/go-connlimit"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
)

// The first byte of a connection to a server's RPC address says what
// follows, as on Nomad's RPC port: raft's own protocol, HTTP/1.1 (the
// cluster's internal endpoints and API requests forwarded to the leader),
// or a TLS handshake, within which a second first byte says which of the
// two.
const (
	rpcRaft byte = 0x01
	rpcTLS  byte = 0x04
	rpcHTTP byte = 0x05
)

// rpcDialHandshakeTimeout bounds the TLS handshake of a connection this
// server makes to another's RPC port. The connections it takes are bound
// by its limits (rpcLimits).
const rpcDialHandshakeTimeout = 5 * time.Second

// rpcLimits are the agent's limits block for the RPC port, as Nomad's.
type rpcLimits struct {
	// handshakeTimeout bounds how long a new connection may take to send
	// its first byte; one that starts TLS then has as long again to finish
	// the handshake, then to say which of raft or HTTP it is (and raft its
	// opening strings). 0: no bound.
	handshakeTimeout time.Duration
	// maxConnsPerClient is how many connections one IP address may hold
	// open at once; 0: no limit.
	maxConnsPerClient int
	// server reports whether an IP address is one of the cluster's
	// servers', which the limit does not refuse: a follower forwards each
	// API request it cannot answer over a connection of its own, so its
	// long polls would otherwise use up its limit at the leader and then
	// refuse its raft connections. nil: none is.
	server func(ip string) bool
}

// rpcMux splits the connections of the RPC listener by their first byte.
// A raft connection then says which cluster its server belongs to and
// which server it is meant for (each a byte of length, then the string;
// see clusterid.go): one from another cluster, or meant for another
// server (this one took a departed member's address), is refused.
type rpcMux struct {
	ln        net.Listener
	advertise net.Addr
	raft      *connListener
	http      *connListener
	clusterID func() string
	// name is this server's: raft connections meant for another are
	// refused.
	name string
	// tls, when set, is the TLS of the RPC port: plaintext connections
	// are refused, unless upgrading (tls.rpc_upgrade_mode).
	tls       *tls.Config
	upgrading bool
	limits    rpcLimits
	limiter   *connlimit.Limiter // nil without a connection limit
	log       zerolog.Logger
	closeOnce sync.Once
	done      chan struct{}
	wg        sync.WaitGroup

	// refusedMu guards refused: when each foreign cluster was last logged.
	refusedMu sync.Mutex
	refused   map[string]time.Time
}

// refusedLogInterval spaces the warnings about one foreign cluster, whose
// servers retry many times a second.
const refusedLogInterval = time.Minute

func newRPCMux(ln net.Listener, advertise net.Addr, name string, clusterID func() string, tlsc *tlsutil.TLS, limits rpcLimits,
	log zerolog.Logger) *rpcMux {
	m := &rpcMux{ln: ln, advertise: advertise, name: name, clusterID: clusterID, log: log, done: make(chan struct{}),
		refused: map[string]time.Time{}, tls: tlsc.RPCServer(), upgrading: tlsc.RPCUpgradeMode(), limits: limits}
	if limits.maxConnsPerClient > 0 {
		m.limiter = connlimit.NewLimiter(connlimit.Config{MaxConnsPerClientIP: limits.maxConnsPerClient})
	}
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
		// Counted here, before the next Accept, as Nomad does; the count
		// goes down when whoever ends up with the connection (raft, the
		// HTTP server, route itself) closes it.
		if m.limiter != nil {
			free, err := m.limiter.Accept(c)
			switch {
			case err == nil:
				c = connlimit.Wrap(c, free)
			case m.limits.server != nil && m.limits.server(remoteIP(c)):
				// Past the limit, but one of the cluster's servers.
			default:
				m.refuse(c, "client_ip", remoteIP(c), "rpc_max_conns_per_client", strconv.Itoa(m.limits.maxConnsPerClient),
					"refused an RPC connection: its IP address already holds as many as the limits block's rpc_max_conns_per_client allows")
				continue
			}
		}
		go m.route(c)
	}
}

// remoteIP is the IP address a connection comes from.
func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return c.RemoteAddr().String()
}

// route reads a connection's first byte and hands it to its listener.
func (m *rpcMux) route(c net.Conn) {
	var b [1]byte
	handshake := func() {
		if m.limits.handshakeTimeout > 0 {
			_ = c.SetDeadline(time.Now().Add(m.limits.handshakeTimeout))
		}
	}
	handshake()
	if _, err := c.Read(b[:]); err != nil {
		_ = c.Close()
		return
	}
	switch {
	case b[0] == rpcTLS && m.tls == nil:
		m.refuse(c, "tls", "offered", "rpc_tls", "off",
			"refused a TLS connection on the RPC port: this server's RPC is plaintext (tls.rpc is off here, on there?)")
		return
	case b[0] == rpcTLS:
		// The TLS handshake has its own handshake timeout, as in Nomad.
		handshake()
		tc := tls.Server(c, m.tls)
		if err := tc.Handshake(); err != nil {
			m.refuse(c, "tls_error", withoutAddrs(err), "server", m.name,
				"refused an RPC connection whose TLS handshake failed (a certificate the cluster's CA did not sign, or not a server's?)")
			return
		}
		if _, err := io.ReadFull(tc, b[:]); err != nil {
			_ = tc.Close()
			return
		}
		c = tc
	case m.tls != nil && !m.upgrading:
		m.refuse(c, "plaintext", "refused", "rpc_tls", "on",
			"refused a plaintext RPC connection: this server's RPC is TLS (tls.rpc; rpc_upgrade_mode takes both while a cluster moves to TLS)")
		return
	}
	var to *connListener
	switch b[0] {
	case rpcRaft:
		theirs, err := readHello(c)
		if err != nil {
			_ = c.Close()
			return
		}
		target, err := readHello(c)
		if err != nil {
			_ = c.Close()
			return
		}
		if mine := m.clusterID(); !sameCluster(mine, theirs) {
			m.refuse(c, "their_cluster", theirs, "cluster", mine,
				"refused raft from a server of another cluster (a data dir of another cluster under a member's name or address?)")
			return
		}
		if target != "" && target != m.name {
			m.refuse(c, "meant_for", target, "server", m.name,
				"refused raft meant for another server (this one took the address of a member that is gone?)")
			return
		}
		to = m.raft
	case rpcHTTP:
		to = m.http
	default:
		_ = c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	select {
	case to.conns <- c:
	case <-m.done:
		_ = c.Close()
	}
}

// refuse closes a connection this server must not take, and says so now
// and then: at most once a refusedLogInterval per (key, value), as the
// servers refused retry many times a second. The values are the other
// side's to choose: past refusedLogKeys of them the record starts over,
// so that they cannot grow it without bound.
func (m *rpcMux) refuse(c net.Conn, key, value, ourKey, ours, msg string) {
	_ = c.Close()
	m.refusedMu.Lock()
	k := key + "=" + value
	last, now := m.refused[k], time.Now()
	log := now.Sub(last) >= refusedLogInterval
	if log {
		if len(m.refused) >= refusedLogKeys {
			clear(m.refused)
		}
		m.refused[k] = now
	}
	m.refusedMu.Unlock()
	if log {
		m.log.Warn().Str("from", c.RemoteAddr().String()).Str(key, value).Str(ourKey, ours).Msg(msg)
	}
}

// refusedLogKeys bounds what refuse remembers.
const refusedLogKeys = 1024

// withoutAddrs is err's text without the addresses a network error names
// ("i/o timeout", not "read tcp A->B: i/o timeout"), so that one reason
// is one key of what refuse rate limits.
func withoutAddrs(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	return err.Error()
}

// readHello reads one of a raft connection's opening strings (a
// length byte, then the string): its cluster's ID, then the server it is
// meant for.
func readHello(r io.Reader) (string, error) {
	var n [1]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", err
	}
	id := make([]byte, n[0])
	if _, err := io.ReadFull(r, id); err != nil {
		return "", err
	}
	return string(id), nil
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

// rpcClient says how this server connects to the others' RPC ports:
// over TLS when tls has RPC on (each connection with the certificates
// current when it is made). With rpc_upgrade_mode it tries a server that
// refuses TLS again in plaintext, so that a cluster moves to TLS one
// server at a time: while some servers still speak plaintext only, and
// then while some already take TLS only.
type rpcClient struct {
	tls *tlsutil.TLS
}

// dial connects to a server's RPC address for kind (rpcRaft, rpcHTTP).
func (rc rpcClient) dial(ctx context.Context, addr string, kind byte) (net.Conn, error) {
	tlsc := rc.tls.RPCClient()
	c, err := dialRPC(ctx, addr, kind, tlsc)
	if err != nil && tlsc != nil && rc.tls.RPCUpgradeMode() && ctx.Err() == nil {
		if c, perr := dialRPC(ctx, addr, kind, nil); perr == nil {
			return c, nil
		}
	}
	return c, err
}

// dialRPC connects to a server's RPC address for kind, over TLS when tlsc
// is set.
func dialRPC(ctx context.Context, addr string, kind byte, tlsc *tls.Config) (net.Conn, error) {
	d := net.Dialer{Timeout: rpcDialTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tlsc != nil {
		if _, err := c.Write([]byte{rpcTLS}); err != nil {
			_ = c.Close()
			return nil, err
		}
		tc := tls.Client(c, tlsc)
		hctx, cancel := context.WithTimeout(ctx, rpcDialHandshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("TLS with server %s: %w", addr, err)
		}
		c = tc
	}
	if _, err := c.Write([]byte{kind}); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// raftStream is raft's stream layer over the mux; its connections say
// which cluster this server belongs to.
type raftStream struct {
	*connListener
	clusterID func() string
	client    rpcClient
}

var _ raft.StreamLayer = raftStream{}

func (s raftStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	host, target, _ := strings.Cut(string(addr), targetSep)
	c, err := s.client.dial(ctx, host, rpcRaft)
	if err != nil {
		return nil, err
	}
	id := s.clusterID()
	hello := append([]byte{byte(len(id))}, id...)
	hello = append(append(hello, byte(len(target))), target...)
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write(hello); err != nil {
		_ = c.Close()
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
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

// targetSep joins a server's address and name in the address raft dials
// (raftAddrs), so that the connection can say which server it is for.
const targetSep = "\x00"

// raftAddrs tells raft's transport, for a server it dials by ID, its
// address from the raft configuration with its name attached (the
// Dial above splits them). An ID not in the configuration gets an error,
// and raft dials the address it has, without a name.
type raftAddrs struct{ raft *atomic.Pointer[raft.Raft] }

// serverIP reports whether ip is the host of a server's address in the
// raft configuration (false before raft runs).
func (a raftAddrs) serverIP(ip string) bool {
	r := a.raft.Load()
	if r == nil {
		return false
	}
	f := r.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, sv := range f.Configuration().Servers {
		if host, _, err := net.SplitHostPort(string(sv.Address)); err == nil && host == ip {
			return true
		}
	}
	return false
}

func (a raftAddrs) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	r := a.raft.Load()
	if r == nil {
		return "", errors.New("raft not started")
	}
	if len(id) > 255 {
		return "", fmt.Errorf("server name %.20s... is too long to name in a connection", id)
	}
	f := r.GetConfiguration()
	if err := f.Error(); err != nil {
		return "", err
	}
	for _, sv := range f.Configuration().Servers {
		if sv.ID == id {
			return sv.Address + targetSep + raft.ServerAddress(id), nil
		}
	}
	return "", fmt.Errorf("server %s is not in the raft configuration", id)
}

// raftTransport is raft's network transport, except that a server's
// address in what raft sends (RPC headers, a candidate's address) stays
// the address alone: the transport's EncodePeer would otherwise put
// raftAddrs' dialing form (address and name) on the wire.
type raftTransport struct{ *raft.NetworkTransport }

// EncodePeer implements raft.Transport.
func (t raftTransport) EncodePeer(_ raft.ServerID, addr raft.ServerAddress) []byte {
	return []byte(addr)
}
