//go:build !wasip1

// Package grpcwire is the go-plugin transport of Drover's plugin ABI: the
// handshake both sides agree on, and two hand-written gRPC services whose
// messages are the ABI's encoded bytes, carried by a pass-through codec (no
// protobuf: the same MessagePack bytes as in wasm linear memory).
//
// The plugin serves Scheduler (Info, Attach, Process, and from ABI 1.7
// CheckConfig); the host serves Host (Call) on a stream the go-plugin
// GRPCBroker opens, so that the plugin can make planner calls while the
// host waits on Process. From ABI 1.6 evals
// take the eval socket instead (evalsocket.go). docs/abi.md specifies the
// framing.
package grpcwire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/drover-sched/drover/sdk/abi"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
)

// Handshake is the go-plugin handshake. ProtocolVersion is the ABI major a
// plugin built from this SDK speaks; hosts list every major they support in
// VersionedPlugins, so a plugin of an unknown major fails the handshake.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  abi.Major,
	MagicCookieKey:   "DROVER_SCHEDULER_PLUGIN",
	MagicCookieValue: "a1f2e4c7-drover-abi",
}

// PluginName is the name the scheduler is dispensed under.
const PluginName = "scheduler"

// MaxMessageBytes bounds one gRPC message either way: far above gRPC's 4 MiB
// default, because a full state sync of a large cluster is tens of MiB.
const MaxMessageBytes = 1 << 30

// Method names.
const (
	schedulerService = "drover.abi.v1.Scheduler"
	hostService      = "drover.abi.v1.Host"
	methodInfo       = "/" + schedulerService + "/Info"
	methodAttach     = "/" + schedulerService + "/Attach"
	methodProcess    = "/" + schedulerService + "/Process"
	methodCheck      = "/" + schedulerService + "/CheckConfig"
	methodCall       = "/" + hostService + "/Call"
)

// Codec passes *[]byte through unchanged. It is registered under its name,
// which clients send as the gRPC content-subtype.
type Codec struct{}

// Name implements encoding.Codec.
func (Codec) Name() string { return "drover-abi" }

// Marshal implements encoding.Codec.
func (Codec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("grpcwire: cannot marshal %T", v)
	}
	return *b, nil
}

// Unmarshal implements encoding.Codec.
func (Codec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("grpcwire: cannot unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

func init() { encoding.RegisterCodec(Codec{}) }

// ServerOptions raise the message size limits of a gRPC server.
func ServerOptions(opts []grpc.ServerOption) []grpc.ServerOption {
	return append(opts, grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes))
}

// DialOptions raise the message size limits of a gRPC client.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes))}
}

func invoke(ctx context.Context, cc grpc.ClientConnInterface, method string, in []byte) ([]byte, error) {
	var out []byte
	err := cc.Invoke(ctx, method, &in, &out, grpc.ForceCodec(Codec{}))
	return out, err
}

// SchedulerServer is what a plugin serves.
type SchedulerServer interface {
	// Info returns the encoded abi.Info.
	Info(ctx context.Context) ([]byte, error)
	// Attach tells the plugin the broker stream on which the host serves
	// Host; the plugin dials it once and keeps it.
	Attach(ctx context.Context, brokerID uint32) error
	// Process handles one encoded abi.ProcessRequest.
	Process(ctx context.Context, req []byte) ([]byte, error)
}

// ConfigCheckerServer is what a plugin that declares ABI 1.7 or later
// serves beside SchedulerServer: the host asks it, as it loads the plugin,
// whether it accepts its configuration. A server without it answers
// CheckConfig with codes.Unimplemented; a host never asks a plugin that
// declares an older ABI.
type ConfigCheckerServer interface {
	// CheckConfig handles one encoded abi.ConfigRequest and returns the
	// encoded abi.Status.
	CheckConfig(ctx context.Context, req []byte) ([]byte, error)
}

func unary(fn func(srv any, ctx context.Context, in []byte) ([]byte, error)) func(any, context.Context, func(any) error, grpc.UnaryServerInterceptor) (any, error) {
	return func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		var in []byte
		if err := dec(&in); err != nil {
			return nil, err
		}
		out, err := fn(srv, ctx, in)
		if err != nil {
			return nil, err
		}
		return &out, nil
	}
}

var schedulerDesc = grpc.ServiceDesc{
	ServiceName: schedulerService,
	HandlerType: (*SchedulerServer)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Info", Handler: unary(func(srv any, ctx context.Context, _ []byte) ([]byte, error) {
			return srv.(SchedulerServer).Info(ctx)
		})},
		{MethodName: "Attach", Handler: unary(func(srv any, ctx context.Context, in []byte) ([]byte, error) {
			if len(in) != 4 {
				return nil, errors.New("grpcwire: Attach takes a 4-byte broker ID")
			}
			return nil, srv.(SchedulerServer).Attach(ctx, binary.BigEndian.Uint32(in))
		})},
		{MethodName: "Process", Handler: unary(func(srv any, ctx context.Context, in []byte) ([]byte, error) {
			return srv.(SchedulerServer).Process(ctx, in)
		})},
		{MethodName: "CheckConfig", Handler: unary(func(srv any, ctx context.Context, in []byte) ([]byte, error) {
			c, ok := srv.(ConfigCheckerServer)
			if !ok {
				return nil, status.Error(codes.Unimplemented, "grpcwire: this plugin does not check its configuration")
			}
			return c.CheckConfig(ctx, in)
		})},
	},
}

// RegisterScheduler registers a plugin's scheduler service.
func RegisterScheduler(s *grpc.Server, srv SchedulerServer) { s.RegisterService(&schedulerDesc, srv) }

// SchedulerClient is the host's handle on a plugin's Scheduler service.
type SchedulerClient struct{ cc grpc.ClientConnInterface }

// NewSchedulerClient returns a client over cc.
func NewSchedulerClient(cc grpc.ClientConnInterface) *SchedulerClient {
	return &SchedulerClient{cc: cc}
}

// Info returns the plugin's encoded abi.Info.
func (c *SchedulerClient) Info(ctx context.Context) ([]byte, error) {
	return invoke(ctx, c.cc, methodInfo, nil)
}

// Attach hands the plugin the broker ID of the host's Host service.
func (c *SchedulerClient) Attach(ctx context.Context, brokerID uint32) error {
	_, err := invoke(ctx, c.cc, methodAttach, binary.BigEndian.AppendUint32(nil, brokerID))
	return err
}

// Process sends an encoded abi.ProcessRequest.
func (c *SchedulerClient) Process(ctx context.Context, req []byte) ([]byte, error) {
	return invoke(ctx, c.cc, methodProcess, req)
}

// CheckConfig sends an encoded abi.ConfigRequest (ABI 1.7) and returns
// the encoded abi.Status.
func (c *SchedulerClient) CheckConfig(ctx context.Context, req []byte) ([]byte, error) {
	return invoke(ctx, c.cc, methodCheck, req)
}

// HostHandler answers a plugin's planner calls (plugin.HostFunc's shape,
// without importing package plugin).
type HostHandler func(op abi.Op, msg []byte) ([]byte, error)

// Host call framing: a request is the op as a big-endian uint32 followed by
// the operation's message; an answer is an abi.Code as a big-endian int32
// followed by the answer's message (empty unless the code is CodeOK).

// hostServer is the Host service's handler type.
type hostServer interface{ answer(in []byte) []byte }

func (h HostHandler) answer(in []byte) []byte {
	if len(in) < 4 {
		return frameAnswer(abi.CodeDecode, nil)
	}
	out, err := h(abi.Op(binary.BigEndian.Uint32(in)), in[4:])
	if err != nil {
		return frameAnswer(abi.CodeOf(err), []byte(err.Error()))
	}
	return frameAnswer(abi.CodeOK, out)
}

var hostDesc = grpc.ServiceDesc{
	ServiceName: hostService,
	HandlerType: (*hostServer)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Call", Handler: unary(func(srv any, _ context.Context, in []byte) ([]byte, error) {
		return srv.(hostServer).answer(in), nil
	})}},
}

func frameAnswer(c abi.Code, msg []byte) []byte {
	out := make([]byte, 4, 4+len(msg))
	binary.BigEndian.PutUint32(out, uint32(c))
	return append(out, msg...)
}

// RegisterHost registers the host's planner service; h answers every call.
func RegisterHost(s *grpc.Server, h HostHandler) { s.RegisterService(&hostDesc, h) }

// CallHost makes one planner call from the plugin. A non-OK code comes back
// as an *abi.Error carrying the host's message.
func CallHost(ctx context.Context, cc grpc.ClientConnInterface, op abi.Op, msg []byte) ([]byte, error) {
	in := make([]byte, 4, 4+len(msg))
	binary.BigEndian.PutUint32(in, uint32(op))
	out, err := invoke(ctx, cc, methodCall, append(in, msg...))
	if err != nil {
		return nil, abi.Err(abi.CodeUnavailable, "plugin: host call "+op.String()+": "+err.Error())
	}
	return parseAnswer(op, out)
}

// parseAnswer splits a Host call's answer into its message or its error.
func parseAnswer(op abi.Op, out []byte) ([]byte, error) {
	if len(out) < 4 {
		return nil, abi.Err(abi.CodeDecode, "plugin: short answer to "+op.String())
	}
	if c := abi.Code(int32(binary.BigEndian.Uint32(out))); c != abi.CodeOK {
		return nil, abi.Err(c, string(out[4:]))
	}
	return out[4:], nil
}

// SchedulerPlugin is the go-plugin plugin both sides put in their plugin
// set: the plugin with NewServer set, the host without.
type SchedulerPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	// NewServer returns the scheduler service to serve (plugin side).
	NewServer func(broker *goplugin.GRPCBroker) SchedulerServer
}

var _ goplugin.GRPCPlugin = (*SchedulerPlugin)(nil)

// GRPCServer implements goplugin.GRPCPlugin.
func (p *SchedulerPlugin) GRPCServer(broker *goplugin.GRPCBroker, s *grpc.Server) error {
	if p.NewServer == nil {
		return errors.New("grpcwire: this side does not serve a scheduler")
	}
	RegisterScheduler(s, p.NewServer(broker))
	return nil
}

// GRPCClient implements goplugin.GRPCPlugin; it returns a *Conn.
func (p *SchedulerPlugin) GRPCClient(_ context.Context, broker *goplugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &Conn{Scheduler: NewSchedulerClient(cc), Broker: broker}, nil
}

// Conn is what the host dispenses: the plugin's scheduler service and the
// broker on which to serve Host.
type Conn struct {
	Scheduler *SchedulerClient
	Broker    *goplugin.GRPCBroker
}
