//go:build !wasip1

package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/plugin/grpcwire"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Serve serves the registered scheduler as a go-plugin binary over gRPC
// and returns when the host ends the plugin. It exits the process with a
// message when no scheduler is registered, and go-plugin itself refuses to
// run when the binary is started by hand rather than by a Drover agent.
//
// The plugin also exits when the agent that started it dies, so that no
// plugin process outlives its agent.
func Serve() {
	if registered == nil {
		fmt.Fprintln(os.Stderr, "plugin: no scheduler registered (call plugin.Register in init)")
		os.Exit(1)
	}
	go exitWithParent()
	if fd := os.Getenv(grpcwire.EvalSocketEnv); fd != "" {
		go serveEvalSocket(registered, fd)
	}
	goplugin.Serve(ServeConfig(registered))
}

// serveEvalSocket serves g's evals on the eval socket the host handed over
// (ABI 1.6). A plugin that cannot, or that breaks the socket's framing,
// exits: the host then sees a crash rather than an eval that never ends.
func serveEvalSocket(g *Guest, fd string) {
	n, err := strconv.Atoi(fd)
	if err != nil || n < 3 {
		fmt.Fprintf(os.Stderr, "plugin: %s=%q is not a descriptor\n", grpcwire.EvalSocketEnv, fd)
		os.Exit(1)
	}
	s, err := grpcwire.NewEvalSocket(os.NewFile(uintptr(n), "eval socket"))
	if err == nil {
		err = s.Serve(func(req []byte, host func(abi.Op, []byte) ([]byte, error)) []byte { return g.Process(req, host) }, func() { housekeep(g) })
	}
	if errors.Is(err, grpcwire.ErrEvalSocketClosed) {
		return
	}
	fmt.Fprintln(os.Stderr, "plugin:", err)
	os.Exit(1)
}

// ServeConfig returns the go-plugin configuration that serves g. Serve uses
// it; tests use it to serve a guest in-process.
func ServeConfig(g *Guest) *goplugin.ServeConfig {
	return &goplugin.ServeConfig{
		HandshakeConfig: grpcwire.Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{
			abi.Major: {grpcwire.PluginName: &grpcwire.SchedulerPlugin{
				NewServer: func(b *goplugin.GRPCBroker) grpcwire.SchedulerServer { return &grpcGuest{guest: g, broker: b} },
			}},
		},
		// go-plugin's own logging goes to stderr, which the host logs and
		// quotes when the plugin fails; only its errors are worth that.
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: os.Stderr, JSONFormat: true}),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(grpcwire.ServerOptions(opts)...)
		},
	}
}

// grpcGuest serves a Guest over gRPC. The host never sends two Process
// calls at once to one plugin process; the mutex keeps that true anyway.
type grpcGuest struct {
	guest  *Guest
	broker *goplugin.GRPCBroker

	mu   sync.Mutex
	host *grpc.ClientConn
}

func (s *grpcGuest) Info(context.Context) ([]byte, error) {
	info := s.guest.Info()
	return info.MarshalMsg(nil)
}

func (s *grpcGuest) Attach(_ context.Context, id uint32) error {
	conn, err := s.broker.DialWithOptions(id, grpcwire.DialOptions()...)
	if err != nil {
		return fmt.Errorf("plugin: dial host: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.host != nil {
		_ = s.host.Close()
	}
	s.host = conn
	return nil
}

// CheckConfig implements grpcwire.ConfigCheckerServer (ABI 1.7).
func (s *grpcGuest) CheckConfig(_ context.Context, req []byte) ([]byte, error) {
	return s.guest.CheckConfig(req), nil
}

var _ grpcwire.ConfigCheckerServer = (*grpcGuest)(nil)

var errNotAttached = errors.New("plugin: host not attached")

func (s *grpcGuest) Process(ctx context.Context, req []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.host == nil {
		return nil, errNotAttached
	}
	host := func(op abi.Op, msg []byte) ([]byte, error) { return grpcwire.CallHost(ctx, s.host, op, msg) }
	return s.guest.Process(req, host), nil
}
