package agent

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/jobspec"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/host/telemetry"
	"github.com/drover-sched/drover/host/tlsutil"
	"github.com/drover-sched/drover/sdk"
	"github.com/dustin/go-humanize"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// ErrConfig wraps every problem with an agent configuration file.
var ErrConfig = errors.New("agent: invalid configuration")

// File is an agent configuration file, in HCL (or HCL's JSON syntax for a
// .json file), shaped like Nomad's agent configuration:
//
//	data_dir  = "/var/lib/drover"
//	log_level = "info"
//	http_addr = "127.0.0.1:4646"
//
//	server {
//	  num_schedulers                       = 4
//	  eval_nack_timeout                    = "60s"
//	  eval_delivery_limit                  = 3
//	  eval_nack_initial_reenqueue_delay    = "1s"
//	  eval_nack_subsequent_reenqueue_delay = "20s"
//	  min_heartbeat_ttl                    = "10s"
//	  job_gc_interval                      = "5m"
//	  eval_gc_threshold                    = "1h"
//
//	  default_scheduler_config {
//	    scheduler_algorithm = "spread"
//	    preemption_config {
//	      service_scheduler_enabled = true
//	    }
//	  }
//	}
//
//	telemetry {
//	  collection_interval = "1s"
//	  prometheus_metrics  = true
//	}
//
// Several servers form a cluster when each has an RPC address and finds
// the others (Nomad's settings, except that retry_join lists the other
// servers' RPC addresses: Drover has no gossip):
//
//	name     = "server-1"
//	rpc_addr = "0.0.0.0:4647"
//	advertise {
//	  rpc = "10.0.0.1:4647"
//	}
//	server {
//	  bootstrap_expect = 3
//	  server_join {
//	    retry_join     = ["10.0.0.2:4647", "10.0.0.3:4647"]
//	    retry_interval = "5s"
//	  }
//	}
//
// Every setting is optional; what a file leaves out keeps its default, and
// command-line flags override the file. Unknown settings are errors.
type File struct {
	DataDir    string `hcl:"data_dir,optional"`
	Name       string `hcl:"name,optional"`
	Region     string `hcl:"region,optional"`
	Datacenter string `hcl:"datacenter,optional"`
	HTTPAddr   string `hcl:"http_addr,optional"`
	RPCAddr    string `hcl:"rpc_addr,optional"`
	PluginDir  string `hcl:"plugin_dir,optional"`
	LogLevel   string `hcl:"log_level,optional"`
	LogJSON    *bool  `hcl:"log_json,optional"`
	// EnableDebug serves the Go profiler (/v1/agent/pprof) to any request
	// of an agent without ACLs (Nomad's enable_debug; on in dev mode).
	EnableDebug *bool `hcl:"enable_debug,optional"`

	Server    *ServerBlock    `hcl:"server,block"`
	Telemetry *TelemetryBlock `hcl:"telemetry,block"`
	Advertise *AdvertiseBlock `hcl:"advertise,block"`
	TLS       *TLSBlock       `hcl:"tls,block"`
	ACL       *ACLBlock       `hcl:"acl,block"`
	Limits    *LimitsBlock    `hcl:"limits,block"`
	Autopilot *AutopilotBlock `hcl:"autopilot,block"`

	// Rest holds what the blocks above do not: the blocks other parts of
	// the agent decode from the same file (checkRest).
	Rest hcl.Body `hcl:",remain"`

	path    string
	plugins []PluginConfig // the plugin blocks (plugin_config.go)
}

// ServerBlock is the file's server block. Durations are Go duration strings
// ("90s", "5m"). Names follow Nomad's server configuration.
type ServerBlock struct {
	// Enabled is accepted for Nomad compatibility; a Drover agent always
	// runs a server.
	Enabled       *bool `hcl:"enabled,optional"`
	NumSchedulers *int  `hcl:"num_schedulers,optional"`

	EvalNackTimeout                  string `hcl:"eval_nack_timeout,optional"`
	EvalDeliveryLimit                *int   `hcl:"eval_delivery_limit,optional"`
	EvalNackInitialReenqueueDelay    string `hcl:"eval_nack_initial_reenqueue_delay,optional"`
	EvalNackSubsequentReenqueueDelay string `hcl:"eval_nack_subsequent_reenqueue_delay,optional"`
	EvalFailedFollowupBaselineDelay  string `hcl:"eval_failed_followup_baseline_delay,optional"`
	EvalFailedFollowupDelayRange     string `hcl:"eval_failed_followup_delay_range,optional"`
	FailedEvalUnblockInterval        string `hcl:"failed_eval_unblock_interval,optional"`

	MinHeartbeatTTL        string   `hcl:"min_heartbeat_ttl,optional"`
	MaxHeartbeatsPerSecond *float64 `hcl:"max_heartbeats_per_second,optional"`
	HeartbeatGrace         string   `hcl:"heartbeat_grace,optional"`
	FailoverHeartbeatTTL   string   `hcl:"failover_heartbeat_ttl,optional"`

	JobGCInterval         string `hcl:"job_gc_interval,optional"`
	EvalGCThreshold       string `hcl:"eval_gc_threshold,optional"`
	BatchEvalGCThreshold  string `hcl:"batch_eval_gc_threshold,optional"`
	JobGCThreshold        string `hcl:"job_gc_threshold,optional"`
	NodeGCThreshold       string `hcl:"node_gc_threshold,optional"`
	DeploymentGCThreshold string `hcl:"deployment_gc_threshold,optional"`

	RaftSnapshotThreshold *int   `hcl:"raft_snapshot_threshold,optional"`
	RaftSnapshotInterval  string `hcl:"raft_snapshot_interval,optional"`
	RaftTrailingLogs      *int   `hcl:"raft_trailing_logs,optional"`
	PlanMaxAllocs         *int   `hcl:"plan_max_allocs,optional"`
	JobMaxSourceSize      string `hcl:"job_max_source_size,optional"`

	EnableEventBroker *bool `hcl:"enable_event_broker,optional"`
	EventBufferSize   *int  `hcl:"event_buffer_size,optional"`

	BootstrapExpect *int             `hcl:"bootstrap_expect,optional"`
	ServerJoin      *ServerJoinBlock `hcl:"server_join,block"`

	DefaultSchedulerConfig *SchedulerConfigBlock `hcl:"default_scheduler_config,block"`

	Search *SearchBlock `hcl:"search,block"`
}

// SearchBlock is the server block's search block, as Nomad's: what the
// fuzzy search API (/v1/search/fuzzy) may cost a request. A setting left
// out keeps Nomad's default (true, 20, 100, 2). Nomad turns fuzzy search
// off for a block without fuzzy_enabled, and ignores a limit below 1:
// here the one keeps it on, and the other is refused.
type SearchBlock struct {
	FuzzyEnabled  *bool `hcl:"fuzzy_enabled,optional"`
	LimitQuery    *int  `hcl:"limit_query,optional"`
	LimitResults  *int  `hcl:"limit_results,optional"`
	MinTermLength *int  `hcl:"min_term_length,optional"`
}

// SchedulerConfigBlock is the server block's default_scheduler_config: the
// scheduler configuration a new cluster starts with, as Nomad's (later
// changes go through the API: the first leader writes this one once).
type SchedulerConfigBlock struct {
	SchedulerAlgorithm            string                 `hcl:"scheduler_algorithm,optional"`
	MemoryOversubscriptionEnabled bool                   `hcl:"memory_oversubscription_enabled,optional"`
	RejectJobRegistration         bool                   `hcl:"reject_job_registration,optional"`
	PauseEvalBroker               bool                   `hcl:"pause_eval_broker,optional"`
	Preemption                    *PreemptionConfigBlock `hcl:"preemption_config,block"`
}

// PreemptionConfigBlock is default_scheduler_config's preemption_config;
// an attribute left out keeps Nomad's default (system jobs preempt, the
// others do not).
type PreemptionConfigBlock struct {
	System   *bool `hcl:"system_scheduler_enabled,optional"`
	SysBatch *bool `hcl:"sysbatch_scheduler_enabled,optional"`
	Batch    *bool `hcl:"batch_scheduler_enabled,optional"`
	Service  *bool `hcl:"service_scheduler_enabled,optional"`
}

// ServerJoinBlock is the server block's server_join: the other servers'
// RPC addresses (host:port), asked until this server is in a cluster.
type ServerJoinBlock struct {
	RetryJoin     []string `hcl:"retry_join,optional"`
	RetryInterval string   `hcl:"retry_interval,optional"`
}

// AdvertiseBlock is the file's advertise block: the RPC address other
// servers reach this one at, when rpc_addr is not it.
type AdvertiseBlock struct {
	RPC string `hcl:"rpc,optional"`
}

// TLSBlock is the file's tls block, as Nomad's:
//
//	tls {
//	  http = true
//	  rpc  = true
//	  ca_file   = "nomad-agent-ca.pem"
//	  cert_file = "global-server-nomad.pem"
//	  key_file  = "global-server-nomad-key.pem"
//	  verify_server_hostname = true
//	  verify_https_client    = false
//	}
type TLSBlock struct {
	HTTP                 *bool  `hcl:"http,optional"`
	RPC                  *bool  `hcl:"rpc,optional"`
	CAFile               string `hcl:"ca_file,optional"`
	CertFile             string `hcl:"cert_file,optional"`
	KeyFile              string `hcl:"key_file,optional"`
	VerifyServerHostname *bool  `hcl:"verify_server_hostname,optional"`
	VerifyHTTPSClient    *bool  `hcl:"verify_https_client,optional"`
	RPCUpgradeMode       *bool  `hcl:"rpc_upgrade_mode,optional"`
	TLSMinVersion        string `hcl:"tls_min_version,optional"`
	TLSCipherSuites      string `hcl:"tls_cipher_suites,optional"`
}

// apply sets in tc what the block sets. Relative file names are read from
// the agent's working directory, as in Nomad.
func (b *TLSBlock) apply(tc *tlsutil.Config) error {
	var errs []error
	setIf(b.HTTP, &tc.HTTP)
	setIf(b.RPC, &tc.RPC)
	setIf(b.VerifyServerHostname, &tc.VerifyServerHostname)
	setIf(b.VerifyHTTPSClient, &tc.VerifyHTTPSClient)
	setIf(b.RPCUpgradeMode, &tc.RPCUpgradeMode)
	for _, f := range []struct{ v, dst *string }{{&b.CAFile, &tc.CAFile}, {&b.CertFile, &tc.CertFile}, {&b.KeyFile, &tc.KeyFile}} {
		if *f.v != "" {
			*f.dst = *f.v
		}
	}
	if b.TLSMinVersion != "" {
		v, err := tlsutil.ParseVersion(b.TLSMinVersion)
		if err != nil {
			errs = append(errs, &valueError{"tls.tls_min_version", err.Error()})
		}
		tc.MinVersion = v
	}
	if b.TLSCipherSuites != "" {
		cs, err := tlsutil.ParseCipherSuites(b.TLSCipherSuites)
		if err != nil {
			errs = append(errs, &valueError{"tls.tls_cipher_suites", err.Error()})
		}
		tc.CipherSuites = cs
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	return nil
}

// LimitsBlock is the file's limits block, as Nomad's: what one client IP
// address may hold of the agent's connections.
//
//	limits {
//	  https_handshake_timeout   = "5s"
//	  http_max_conns_per_client = 100
//	  rpc_handshake_timeout     = "5s"
//	  rpc_max_conns_per_client  = 100
//	}
//
// 0 turns a limit off.
type LimitsBlock struct {
	HTTPSHandshakeTimeout string `hcl:"https_handshake_timeout,optional"`
	HTTPMaxConnsPerClient *int   `hcl:"http_max_conns_per_client,optional"`
	RPCHandshakeTimeout   string `hcl:"rpc_handshake_timeout,optional"`
	RPCMaxConnsPerClient  *int   `hcl:"rpc_max_conns_per_client,optional"`
}

// apply sets in cfg what the block sets: the HTTP limits the agent's,
// the RPC ones its server's.
func (b *LimitsBlock) apply(cfg *Config) error {
	var errs []error
	dur := func(name, v string, dst *time.Duration) {
		durationValue(&errs, "limits."+name, v, `"5s"; "0" for none`, false, dst)
	}
	count := func(name string, v *int, dst *int) {
		if v == nil {
			return
		}
		if *v < 0 {
			errs = append(errs, &valueError{"limits." + name, fmt.Sprintf("%d must not be negative (0 for no limit)", *v)})
			return
		}
		*dst = *v
	}
	dur("https_handshake_timeout", b.HTTPSHandshakeTimeout, &cfg.HTTPSHandshakeTimeout)
	count("http_max_conns_per_client", b.HTTPMaxConnsPerClient, &cfg.HTTPMaxConnsPerClient)
	dur("rpc_handshake_timeout", b.RPCHandshakeTimeout, &cfg.Server.RPCHandshakeTimeout)
	count("rpc_max_conns_per_client", b.RPCMaxConnsPerClient, &cfg.Server.RPCMaxConnsPerClient)
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	return nil
}

// AutopilotBlock is the file's autopilot block, as Nomad's: the autopilot
// configuration a cluster starts with, until an operator writes one
// (drover operator autopilot set-config).
//
//	autopilot {
//	  cleanup_dead_servers      = true
//	  last_contact_threshold    = "200ms"
//	  max_trailing_logs         = 250
//	  min_quorum                = 0
//	  server_stabilization_time = "10s"
//	}
//
// Nomad Enterprise's enable_redundancy_zones, disable_upgrade_migration
// and enable_custom_upgrades are kept and do nothing, as in Nomad's
// community edition.
type AutopilotBlock struct {
	CleanupDeadServers      *bool   `hcl:"cleanup_dead_servers,optional"`
	LastContactThreshold    string  `hcl:"last_contact_threshold,optional"`
	MaxTrailingLogs         *uint64 `hcl:"max_trailing_logs,optional"`
	MinQuorum               *uint   `hcl:"min_quorum,optional"`
	ServerStabilizationTime string  `hcl:"server_stabilization_time,optional"`
	EnableRedundancyZones   *bool   `hcl:"enable_redundancy_zones,optional"`
	DisableUpgradeMigration *bool   `hcl:"disable_upgrade_migration,optional"`
	EnableCustomUpgrades    *bool   `hcl:"enable_custom_upgrades,optional"`
}

// apply sets in c what the block sets.
func (b *AutopilotBlock) apply(c *state.AutopilotConfig) error {
	var errs []error
	dur := func(name, v string, dst *int64) {
		d := time.Duration(*dst)
		durationValue(&errs, "autopilot."+name, v, `"200ms"`, false, &d)
		*dst = int64(d)
	}
	setIf(b.CleanupDeadServers, &c.CleanupDeadServers)
	dur("last_contact_threshold", b.LastContactThreshold, &c.LastContactThreshold)
	setIf(b.MaxTrailingLogs, &c.MaxTrailingLogs)
	setIf(b.MinQuorum, &c.MinQuorum)
	dur("server_stabilization_time", b.ServerStabilizationTime, &c.ServerStabilizationTime)
	setIf(b.EnableRedundancyZones, &c.EnableRedundancyZones)
	setIf(b.DisableUpgradeMigration, &c.DisableUpgradeMigration)
	setIf(b.EnableCustomUpgrades, &c.EnableCustomUpgrades)
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	return nil
}

// setIf sets dst to an optional setting's value, if the file gave one.
func setIf[T any](v *T, dst *T) {
	if v != nil {
		*dst = *v
	}
}

// durationValue sets dst to a duration setting's value v ("" leaves it);
// a value that is not a duration (example shows one), or is negative (or
// zero, when it must be positive), is added to errs instead.
func durationValue(errs *[]error, setting, v, example string, positive bool, dst *time.Duration) {
	if v == "" {
		return
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		*errs = append(*errs, &valueError{setting, fmt.Sprintf("%q is not a duration (e.g. %s)", v, example)})
	case positive && d <= 0:
		*errs = append(*errs, &valueError{setting, fmt.Sprintf("%q is not positive", v)})
	case d < 0:
		*errs = append(*errs, &valueError{setting, fmt.Sprintf("%q must not be negative", v)})
	default:
		*dst = d
	}
}

// ACLBlock is the file's acl block, as Nomad's:
//
//	acl {
//	  enabled = true
//	  token_min_expiration_ttl = "1m"
//	  token_max_expiration_ttl = "24h"
//	}
//
// Nomad's token_ttl, policy_ttl and role_ttl say how long its clients
// cache what a token resolves to, and replication_token how its regions
// copy tokens: Drover has neither (its servers resolve each request's
// token from their state), so they are refused as unknown.
type ACLBlock struct {
	Enabled               *bool  `hcl:"enabled,optional"`
	TokenMinExpirationTTL string `hcl:"token_min_expiration_ttl,optional"`
	TokenMaxExpirationTTL string `hcl:"token_max_expiration_ttl,optional"`
}

// apply sets in sc what the block sets; a minimum above the maximum (one
// may be the default) is refused by the server's Validate.
func (b *ACLBlock) apply(sc *server.Config) error {
	setIf(b.Enabled, &sc.ACLEnabled)
	var errs []error
	durationValue(&errs, "acl.token_min_expiration_ttl", b.TokenMinExpirationTTL, `"1h"`, true, &sc.ACLTokenMinExpirationTTL)
	durationValue(&errs, "acl.token_max_expiration_ttl", b.TokenMaxExpirationTTL, `"1h"`, true, &sc.ACLTokenMaxExpirationTTL)
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	return nil
}

// TelemetryBlock is the file's telemetry block, as Nomad's (the settings
// of Nomad clients' metrics have no meaning here and are refused).
type TelemetryBlock struct {
	CollectionInterval string `hcl:"collection_interval,optional"`
	DisableHostname    *bool  `hcl:"disable_hostname,optional"`
	PrometheusMetrics  *bool  `hcl:"prometheus_metrics,optional"`
	StatsdAddress      string `hcl:"statsd_address,optional"`
}

// apply sets in tc what the block sets.
func (b *TelemetryBlock) apply(tc *telemetry.Config) error {
	if b.CollectionInterval != "" {
		d, err := time.ParseDuration(b.CollectionInterval)
		if err != nil || d <= 0 {
			return fmt.Errorf("%w: %w", ErrConfig, &valueError{"telemetry.collection_interval",
				fmt.Sprintf("%q is not a positive duration (e.g. \"1s\")", b.CollectionInterval)})
		}
		tc.CollectionInterval = d
	}
	setIf(b.DisableHostname, &tc.DisableHostname)
	setIf(b.PrometheusMetrics, &tc.PrometheusMetrics)
	if b.StatsdAddress != "" {
		tc.StatsdAddress = b.StatsdAddress
	}
	return nil
}

// LoadConfigFile reads and decodes an agent configuration file.
func LoadConfigFile(path string) (*File, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return ParseConfig(path, src)
}

// ParseConfig decodes an agent configuration from src; name is its file
// name, for messages and to tell JSON (".json") from HCL.
func ParseConfig(name string, src []byte) (*File, error) {
	p := hclparse.NewParser()
	var file *hcl.File
	var diags hcl.Diagnostics
	if strings.EqualFold(filepath.Ext(name), ".json") {
		file, diags = p.ParseJSON(src, name)
	} else {
		file, diags = p.ParseHCL(src, name)
	}
	// Every problem, each at its file, line and column with the line shown,
	// as job files report them.
	fail := func(diags hcl.Diagnostics) (*File, error) {
		return nil, fmt.Errorf("%w:\n%s", ErrConfig, jobspec.FormatDiagnostics(map[string][]byte{name: src}, diags))
	}
	if diags.HasErrors() {
		return fail(diags)
	}
	f := &File{path: name}
	if diags := gohcl.DecodeBody(file.Body, nil, f); diags.HasErrors() {
		return fail(diags)
	}
	if diags := f.checkRest(); diags.HasErrors() {
		return fail(diags)
	}
	if f.Rest != nil {
		if f.plugins, diags = DecodePluginBlocks(f.Rest); diags.HasErrors() {
			return fail(diags)
		}
	}
	// Values are checked here too, each bad one at its place in the file;
	// Apply checks them again for a File built otherwise.
	if err := f.Apply(new(Config)); err != nil {
		var diags hcl.Diagnostics
		for _, e := range unjoin(err) {
			var ve *valueError
			if !errors.As(e, &ve) {
				return nil, err
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value",
				Detail: ve.Error(), Subject: valueRange(file.Body, strings.Split(ve.setting, "."))})
		}
		return fail(diags)
	}
	return f, nil
}

// valueError is a setting's value the agent cannot use.
type valueError struct {
	setting string // block types and the attribute: "server.eval_nack_timeout"
	problem string
}

func (e *valueError) Error() string { return e.setting + " = " + e.problem }

// unjoin lists the errors err holds, through fmt's and errors.Join's
// wrapping, leaving out the ErrConfig mark.
func unjoin(err error) []error {
	if err == ErrConfig {
		return nil
	}
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		var out []error
		for _, inner := range e.Unwrap() {
			out = append(out, unjoin(inner)...)
		}
		return out
	case interface{ Unwrap() error }:
		return unjoin(e.Unwrap())
	}
	return []error{err}
}

// valueRange finds the value of the attribute at path (block types, then
// the attribute's name) in body, for a message to point at; nil if it is
// not there.
func valueRange(body hcl.Body, path []string) *hcl.Range {
	for _, block := range path[:len(path)-1] {
		content, _, _ := body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: block}}})
		if content == nil || len(content.Blocks) == 0 {
			return nil
		}
		body = content.Blocks[0].Body
	}
	name := path[len(path)-1]
	content, _, _ := body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: name}}})
	if content == nil || content.Attributes[name] == nil {
		return nil
	}
	r := content.Attributes[name].Expr.Range()
	return &r
}

// restSchema is what the agent decodes from a configuration file outside
// File's own fields. Blocks decoded elsewhere (plugin "NAME" {}) are added
// here; anything not listed is refused.
var restSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{PluginBlockSchema}}

// checkRest refuses settings and blocks no part of the agent knows.
func (f *File) checkRest() hcl.Diagnostics {
	if f.Rest == nil {
		return nil
	}
	_, diags := f.Rest.Content(restSchema)
	return diags
}

// Apply sets in cfg what the file sets.
func (f *File) Apply(cfg *Config) error {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&cfg.Server.DataDir, f.DataDir)
	set(&cfg.Server.NodeName, f.Name)
	set(&cfg.Server.Region, f.Region)
	set(&cfg.Server.Datacenter, f.Datacenter)
	set(&cfg.HTTPAddr, f.HTTPAddr)
	set(&cfg.Server.RPCAddr, f.RPCAddr)
	if f.Advertise != nil {
		set(&cfg.Server.RPCAdvertise, f.Advertise.RPC)
	}
	set(&cfg.PluginDir, f.PluginDir)
	set(&cfg.LogLevel, f.LogLevel)
	if len(f.plugins) > 0 {
		cfg.Plugins = f.plugins
	}
	if f.LogJSON != nil {
		cfg.LogJSON = *f.LogJSON
	}
	if f.EnableDebug != nil {
		cfg.EnableDebug = f.EnableDebug
	}
	if f.Telemetry != nil {
		if err := f.Telemetry.apply(&cfg.Server.Telemetry); err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
	}
	if f.TLS != nil {
		if err := f.TLS.apply(&cfg.TLS); err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
	}
	if f.ACL != nil {
		if err := f.ACL.apply(&cfg.Server); err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
	}
	if f.Limits != nil {
		if err := f.Limits.apply(cfg); err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
	}
	if f.Autopilot != nil {
		if err := f.Autopilot.apply(&cfg.Server.Autopilot); err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
	}
	if f.Server == nil {
		return nil
	}
	if err := f.Server.apply(&cfg.Server); err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	return nil
}

// apply sets in sc what the block sets, checking every value.
func (b *ServerBlock) apply(sc *server.Config) error {
	var errs []error
	dur := func(name, v string, dst *time.Duration) {
		durationValue(&errs, "server."+name, v, `"30s"`, false, dst)
	}
	count := func(name string, v *int, min int, dst func(int)) {
		if v == nil {
			return
		}
		if *v < min {
			errs = append(errs, &valueError{"server." + name, fmt.Sprintf("%d must be at least %d", *v, min)})
			return
		}
		dst(*v)
	}
	count("num_schedulers", b.NumSchedulers, 0, func(n int) { sc.NumWorkers = n })
	dur("eval_nack_timeout", b.EvalNackTimeout, &sc.Broker.NackTimeout)
	count("eval_delivery_limit", b.EvalDeliveryLimit, 1, func(n int) { sc.Broker.DeliveryLimit = n })
	dur("eval_nack_initial_reenqueue_delay", b.EvalNackInitialReenqueueDelay, &sc.Broker.InitialNackDelay)
	dur("eval_nack_subsequent_reenqueue_delay", b.EvalNackSubsequentReenqueueDelay, &sc.Broker.SubsequentNackDelay)
	dur("eval_failed_followup_baseline_delay", b.EvalFailedFollowupBaselineDelay, &sc.FailedEvalFollowupBaseline)
	dur("eval_failed_followup_delay_range", b.EvalFailedFollowupDelayRange, &sc.FailedEvalFollowupJitter)
	dur("failed_eval_unblock_interval", b.FailedEvalUnblockInterval, &sc.FailedEvalUnblockInterval)
	dur("min_heartbeat_ttl", b.MinHeartbeatTTL, &sc.MinHeartbeatTTL)
	if b.MaxHeartbeatsPerSecond != nil {
		if *b.MaxHeartbeatsPerSecond <= 0 {
			errs = append(errs, &valueError{"server.max_heartbeats_per_second", fmt.Sprintf("%v must be positive", *b.MaxHeartbeatsPerSecond)})
		} else {
			sc.MaxHeartbeatsPerSecond = *b.MaxHeartbeatsPerSecond
		}
	}
	dur("heartbeat_grace", b.HeartbeatGrace, &sc.HeartbeatGrace)
	dur("failover_heartbeat_ttl", b.FailoverHeartbeatTTL, &sc.FailoverHeartbeatTTL)
	// job_gc_interval paces job GC only, as in Nomad, whose eval, node and
	// deployment GC run every 5 minutes whatever it says; and, as there, it
	// must be positive.
	if d, err := time.ParseDuration(b.JobGCInterval); b.JobGCInterval != "" && err == nil && d <= 0 {
		errs = append(errs, &valueError{"server.job_gc_interval", fmt.Sprintf("%q must be greater than 0s", b.JobGCInterval)})
	} else {
		dur("job_gc_interval", b.JobGCInterval, &sc.JobGCInterval)
	}
	dur("eval_gc_threshold", b.EvalGCThreshold, &sc.EvalGCThreshold)
	dur("batch_eval_gc_threshold", b.BatchEvalGCThreshold, &sc.BatchEvalGCThreshold)
	dur("job_gc_threshold", b.JobGCThreshold, &sc.JobGCThreshold)
	dur("node_gc_threshold", b.NodeGCThreshold, &sc.NodeGCThreshold)
	dur("deployment_gc_threshold", b.DeploymentGCThreshold, &sc.DeploymentGCThreshold)
	count("raft_snapshot_threshold", b.RaftSnapshotThreshold, 1, func(n int) { sc.SnapshotThreshold = uint64(n) })
	dur("raft_snapshot_interval", b.RaftSnapshotInterval, &sc.SnapshotInterval)
	count("raft_trailing_logs", b.RaftTrailingLogs, 0, func(n int) { sc.RaftTrailingLogs = uint64(n) })
	count("plan_max_allocs", b.PlanMaxAllocs, 1, func(n int) { sc.PlanLimits.MaxAllocs = n })
	if v := b.JobMaxSourceSize; v != "" {
		// As Nomad reads it: "1M" and "1MB" are 10^6 bytes, "1MiB" 2^20.
		if n, err := humanize.ParseBytes(v); err != nil || n > math.MaxInt32 {
			errs = append(errs, &valueError{"server.job_max_source_size", fmt.Sprintf("%q is not a size (e.g. \"1M\" or \"512KiB\")", v)})
		} else {
			sc.JobMaxSourceSize = int(n)
		}
	}
	count("event_buffer_size", b.EventBufferSize, 1, func(n int) { sc.EventBufferSize = n })
	if b.EnableEventBroker != nil && !*b.EnableEventBroker {
		sc.EventBufferSize = 0
	}
	count("bootstrap_expect", b.BootstrapExpect, 1, func(n int) { sc.BootstrapExpect = n })
	if j := b.ServerJoin; j != nil {
		sc.RetryJoin = j.RetryJoin
		dur("server_join.retry_interval", j.RetryInterval, &sc.RetryInterval)
	}
	if d := b.DefaultSchedulerConfig; d != nil {
		c := sdk.DefaultSchedulerConfiguration()
		switch d.SchedulerAlgorithm {
		case "":
		case sdk.SchedulerAlgorithmBinpack, sdk.SchedulerAlgorithmSpread:
			c.SchedulerAlgorithm = d.SchedulerAlgorithm
		default:
			errs = append(errs, &valueError{"server.default_scheduler_config.scheduler_algorithm",
				fmt.Sprintf("%q is not binpack or spread", d.SchedulerAlgorithm)})
		}
		c.MemoryOversubscriptionEnabled, c.RejectJobRegistration, c.PauseEvalBroker =
			d.MemoryOversubscriptionEnabled, d.RejectJobRegistration, d.PauseEvalBroker
		if p := d.Preemption; p != nil {
			for _, f := range []struct {
				set *bool
				to  *bool
			}{{p.System, &c.PreemptionConfig.SystemSchedulerEnabled}, {p.SysBatch, &c.PreemptionConfig.SysBatchSchedulerEnabled},
				{p.Batch, &c.PreemptionConfig.BatchSchedulerEnabled}, {p.Service, &c.PreemptionConfig.ServiceSchedulerEnabled}} {
				if f.set != nil {
					*f.to = *f.set
				}
			}
		}
		sc.DefaultSchedulerConfig = c
	}
	if b := b.Search; b != nil {
		setIf(b.FuzzyEnabled, &sc.Search.FuzzyEnabled)
		count("search.limit_query", b.LimitQuery, 1, func(n int) { sc.Search.LimitQuery = n })
		count("search.limit_results", b.LimitResults, 1, func(n int) { sc.Search.LimitResults = n })
		count("search.min_term_length", b.MinTermLength, 1, func(n int) { sc.Search.MinTermLength = n })
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	return nil
}
