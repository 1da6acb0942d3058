package agent

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/sdk"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParseConfig_AppliesEverySetting(t *testing.T) {
	src := `
data_dir   = "/var/lib/drover"
name       = "s1"
region     = "eu"
datacenter = "dc9"
http_addr  = "0.0.0.0:5000"
plugin_dir = "/opt/plugins"
log_level  = "debug"
log_json   = true
rpc_addr   = "0.0.0.0:4647"
enable_debug = false

advertise {
  rpc = "10.0.0.1:4647"
}

server {
  enabled                              = true
  num_schedulers                       = 7
  eval_nack_timeout                    = "90s"
  eval_delivery_limit                  = 5
  eval_nack_initial_reenqueue_delay    = "2s"
  eval_nack_subsequent_reenqueue_delay = "30s"
  eval_failed_followup_baseline_delay  = "2m"
  eval_failed_followup_delay_range     = "3m"
  failed_eval_unblock_interval         = "45s"
  min_heartbeat_ttl                    = "20s"
  max_heartbeats_per_second            = 12.5
  heartbeat_grace                      = "15s"
  failover_heartbeat_ttl               = "10m"
  job_gc_interval                      = "7m"
  eval_gc_threshold                    = "2h"
  batch_eval_gc_threshold              = "36h"
  job_gc_threshold                     = "8h"
  node_gc_threshold                    = "48h"
  deployment_gc_threshold              = "3h"
  raft_snapshot_threshold              = 1000
  raft_snapshot_interval               = "30s"
  raft_trailing_logs                   = 500
  plan_max_allocs                      = 2000
  job_max_source_size                  = "2MiB"
  event_buffer_size                    = 250
  bootstrap_expect                     = 3

  server_join {
    retry_join     = ["10.0.0.2:4647", "10.0.0.3:4647"]
    retry_interval = "20s"
  }

  default_scheduler_config {
    scheduler_algorithm             = "spread"
    memory_oversubscription_enabled = true
    reject_job_registration         = true
    pause_eval_broker               = true
    preemption_config {
      system_scheduler_enabled  = false
      service_scheduler_enabled = true
    }
  }

  search {
    fuzzy_enabled   = false
    limit_query     = 200
    limit_results   = 1000
    min_term_length = 5
  }
}

telemetry {
  collection_interval = "5s"
  disable_hostname    = false
  prometheus_metrics  = true
  statsd_address      = "127.0.0.1:8125"
}

tls {
  http                   = true
  rpc                    = true
  ca_file                = "ca.pem"
  cert_file              = "/etc/drover/server.pem"
  key_file               = "/etc/drover/server-key.pem"
  verify_server_hostname = true
  verify_https_client    = true
  rpc_upgrade_mode       = true
  tls_min_version        = "tls13"
  tls_cipher_suites      = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
}

acl {
  enabled                  = true
  token_min_expiration_ttl = "30s"
  token_max_expiration_ttl = "72h"
}

limits {
  https_handshake_timeout   = "3s"
  http_max_conns_per_client = 50
  rpc_handshake_timeout     = "7s"
  rpc_max_conns_per_client  = 0
}

autopilot {
  cleanup_dead_servers      = false
  last_contact_threshold    = "500ms"
  max_trailing_logs         = 100
  min_quorum                = 3
  server_stabilization_time = "20s"
  enable_redundancy_zones   = true
}
`
	f, err := ParseConfig("agent.hcl", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if err := f.Apply(&cfg); err != nil {
		t.Fatal(err)
	}
	s := cfg.Server
	checks := []struct {
		name      string
		got, want any
	}{
		{"data_dir", s.DataDir, "/var/lib/drover"},
		{"name", s.NodeName, "s1"},
		{"region", s.Region, "eu"},
		{"datacenter", s.Datacenter, "dc9"},
		{"http_addr", cfg.HTTPAddr, "0.0.0.0:5000"},
		{"plugin_dir", cfg.PluginDir, "/opt/plugins"},
		{"log_level", cfg.LogLevel, "debug"},
		{"log_json", cfg.LogJSON, true},
		{"enable_debug", cfg.EnableDebug != nil && !*cfg.EnableDebug, true},
		{"num_schedulers", s.NumWorkers, 7},
		{"eval_nack_timeout", s.Broker.NackTimeout, 90 * time.Second},
		{"eval_delivery_limit", s.Broker.DeliveryLimit, 5},
		{"eval_nack_initial_reenqueue_delay", s.Broker.InitialNackDelay, 2 * time.Second},
		{"eval_nack_subsequent_reenqueue_delay", s.Broker.SubsequentNackDelay, 30 * time.Second},
		{"eval_failed_followup_baseline_delay", s.FailedEvalFollowupBaseline, 2 * time.Minute},
		{"eval_failed_followup_delay_range", s.FailedEvalFollowupJitter, 3 * time.Minute},
		{"failed_eval_unblock_interval", s.FailedEvalUnblockInterval, 45 * time.Second},
		{"min_heartbeat_ttl", s.MinHeartbeatTTL, 20 * time.Second},
		{"max_heartbeats_per_second", s.MaxHeartbeatsPerSecond, 12.5},
		{"heartbeat_grace", s.HeartbeatGrace, 15 * time.Second},
		{"failover_heartbeat_ttl", s.FailoverHeartbeatTTL, 10 * time.Minute},
		{"job_gc_interval", s.JobGCInterval, 7 * time.Minute},
		{"eval GC interval (not an agent setting)", s.EvalGCInterval, 5 * time.Minute},
		{"eval_gc_threshold", s.EvalGCThreshold, 2 * time.Hour},
		{"batch_eval_gc_threshold", s.BatchEvalGCThreshold, 36 * time.Hour},
		{"job_gc_threshold", s.JobGCThreshold, 8 * time.Hour},
		{"node_gc_threshold", s.NodeGCThreshold, 48 * time.Hour},
		{"deployment_gc_threshold", s.DeploymentGCThreshold, 3 * time.Hour},
		{"raft_snapshot_threshold", s.SnapshotThreshold, uint64(1000)},
		{"raft_snapshot_interval", s.SnapshotInterval, 30 * time.Second},
		{"raft_trailing_logs", s.RaftTrailingLogs, uint64(500)},
		{"plan_max_allocs", s.PlanLimits.MaxAllocs, 2000},
		{"job_max_source_size", s.JobMaxSourceSize, 2 << 20},
		{"event_buffer_size", s.EventBufferSize, 250},
		{"rpc_addr", s.RPCAddr, "0.0.0.0:4647"},
		{"advertise.rpc", s.RPCAdvertise, "10.0.0.1:4647"},
		{"bootstrap_expect", s.BootstrapExpect, 3},
		{"server_join.retry_join", strings.Join(s.RetryJoin, ","), "10.0.0.2:4647,10.0.0.3:4647"},
		{"server_join.retry_interval", s.RetryInterval, 20 * time.Second},
		{"default_scheduler_config", *s.DefaultSchedulerConfig, sdk.SchedulerConfiguration{SchedulerAlgorithm: "spread",
			MemoryOversubscriptionEnabled: true, RejectJobRegistration: true, PauseEvalBroker: true,
			// Left out: sysbatch and batch keep Nomad's default (off).
			PreemptionConfig: sdk.PreemptionConfig{ServiceSchedulerEnabled: true}}},
		{"search", s.Search, server.SearchConfig{FuzzyEnabled: false, LimitQuery: 200, LimitResults: 1000, MinTermLength: 5}},
		{"telemetry.collection_interval", s.Telemetry.CollectionInterval, 5 * time.Second},
		{"telemetry.disable_hostname", s.Telemetry.DisableHostname, false},
		{"telemetry.prometheus_metrics", s.Telemetry.PrometheusMetrics, true},
		{"telemetry.statsd_address", s.Telemetry.StatsdAddress, "127.0.0.1:8125"},
		{"tls.http", cfg.TLS.HTTP, true},
		{"tls.rpc", cfg.TLS.RPC, true},
		{"tls.ca_file (as given, from the working directory as in Nomad)", cfg.TLS.CAFile, "ca.pem"},
		{"tls.cert_file", cfg.TLS.CertFile, "/etc/drover/server.pem"},
		{"tls.key_file", cfg.TLS.KeyFile, "/etc/drover/server-key.pem"},
		{"tls.verify_server_hostname", cfg.TLS.VerifyServerHostname, true},
		{"tls.verify_https_client", cfg.TLS.VerifyHTTPSClient, true},
		{"tls.rpc_upgrade_mode", cfg.TLS.RPCUpgradeMode, true},
		{"tls.tls_min_version", cfg.TLS.MinVersion, uint16(tls.VersionTLS13)},
		{"acl.enabled", s.ACLEnabled, true},
		{"acl.token_min_expiration_ttl", s.ACLTokenMinExpirationTTL, 30 * time.Second},
		{"acl.token_max_expiration_ttl", s.ACLTokenMaxExpirationTTL, 72 * time.Hour},
		{"limits.https_handshake_timeout", cfg.HTTPSHandshakeTimeout, 3 * time.Second},
		{"limits.http_max_conns_per_client", cfg.HTTPMaxConnsPerClient, 50},
		{"limits.rpc_handshake_timeout", s.RPCHandshakeTimeout, 7 * time.Second},
		{"limits.rpc_max_conns_per_client (0: no limit)", s.RPCMaxConnsPerClient, 0},
		{"autopilot.cleanup_dead_servers", s.Autopilot.CleanupDeadServers, false},
		{"autopilot.last_contact_threshold", s.Autopilot.LastContactThreshold, int64(500 * time.Millisecond)},
		{"autopilot.max_trailing_logs", s.Autopilot.MaxTrailingLogs, uint64(100)},
		{"autopilot.min_quorum", s.Autopilot.MinQuorum, uint(3)},
		{"autopilot.server_stabilization_time", s.Autopilot.ServerStabilizationTime, int64(20 * time.Second)},
		{"autopilot.enable_redundancy_zones", s.Autopilot.EnableRedundancyZones, true},
		{"tls.tls_cipher_suites", fmt.Sprint(cfg.TLS.CipherSuites),
			fmt.Sprint([]uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384})},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("applied config does not validate: %v", err)
	}
}

func TestParseConfig_EmptyKeepsDefaults(t *testing.T) {
	f, err := ParseConfig("empty.hcl", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if err := f.Apply(&cfg); err != nil {
		t.Fatal(err)
	}
	def := DefaultConfig()
	if cfg.Server.Broker != def.Server.Broker || cfg.HTTPAddr != def.HTTPAddr || cfg.Server.NumWorkers != def.Server.NumWorkers {
		t.Fatalf("an empty file changed the defaults: %+v", cfg)
	}
	// The limits block's defaults are Nomad's.
	if cfg.HTTPSHandshakeTimeout != 5*time.Second || cfg.HTTPMaxConnsPerClient != 100 ||
		cfg.Server.RPCHandshakeTimeout != 5*time.Second || cfg.Server.RPCMaxConnsPerClient != 100 {
		t.Fatalf("limits: %s %d %s %d", cfg.HTTPSHandshakeTimeout, cfg.HTTPMaxConnsPerClient,
			cfg.Server.RPCHandshakeTimeout, cfg.Server.RPCMaxConnsPerClient)
	}
	// So are the search block's.
	if want := (server.SearchConfig{FuzzyEnabled: true, LimitQuery: 20, LimitResults: 100, MinTermLength: 2}); cfg.Server.Search != want {
		t.Fatalf("search: %+v, want %+v", cfg.Server.Search, want)
	}
}

// A search block that sets one limit leaves fuzzy search on and the other
// limits at their defaults (Nomad's agent would turn fuzzy search off).
func TestParseConfig_SearchPartial(t *testing.T) {
	f, err := ParseConfig("agent.hcl", []byte("server {\n  search {\n    limit_results = 10\n  }\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if err := f.Apply(&cfg); err != nil {
		t.Fatal(err)
	}
	if want := (server.SearchConfig{FuzzyEnabled: true, LimitQuery: 20, LimitResults: 10, MinTermLength: 2}); cfg.Server.Search != want {
		t.Fatalf("search: %+v, want %+v", cfg.Server.Search, want)
	}
}

// A limits block that sets one limit leaves the others at their defaults;
// "0" turns a handshake timeout off.
func TestParseConfig_LimitsPartial(t *testing.T) {
	f, err := ParseConfig("agent.hcl", []byte("limits {\n  rpc_handshake_timeout = \"0\"\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if err := f.Apply(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Server.RPCHandshakeTimeout != 0 || cfg.HTTPSHandshakeTimeout != 5*time.Second ||
		cfg.HTTPMaxConnsPerClient != 100 || cfg.Server.RPCMaxConnsPerClient != 100 {
		t.Fatalf("limits: %s %d %s %d", cfg.HTTPSHandshakeTimeout, cfg.HTTPMaxConnsPerClient,
			cfg.Server.RPCHandshakeTimeout, cfg.Server.RPCMaxConnsPerClient)
	}
}

func TestParseConfig_EventBrokerOff(t *testing.T) {
	f, err := ParseConfig("agent.hcl", []byte(`server { enable_event_broker = false }`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if err := f.Apply(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Server.EventBufferSize != 0 {
		t.Fatalf("enable_event_broker = false left a buffer of %d", cfg.Server.EventBufferSize)
	}
}

func TestParseConfig_JSON(t *testing.T) {
	f, err := ParseConfig("agent.json", []byte(`{"data_dir": "/d", "server": {"eval_delivery_limit": 9}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if err := f.Apply(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Server.DataDir != "/d" || cfg.Server.Broker.DeliveryLimit != 9 {
		t.Fatalf("JSON config not applied: %+v", cfg.Server)
	}
}

func TestParseConfig_Errors(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"syntax", `data_dir = `, "agent.hcl:1"},
		{"unknown setting", `datadir = "/x"`, `Unsupported argument`},
		{"unknown server setting", "server {\n  nack_timeout = \"1s\"\n}", "agent.hcl:2"},
		{"unknown block", `client {}`, "Unsupported block type"},
		{"unknown telemetry setting", "telemetry {\n  publish_node_metrics = true\n}", "agent.hcl:2"},
		{"bad collection interval", `telemetry { collection_interval = "0s" }`, "telemetry.collection_interval"},
		{"wrong type", `server { num_schedulers = "many" }`, "agent.hcl:1:28: error: Unsuitable value type"},
		{"plugin timeout, located", "plugin \"p\" {\n  runtime = \"wasm\"\n  path = \"/p.wasm\"\n  limits {\n    timeout = \"5x\"\n  }\n}",
			"agent.hcl:5:5: error: Invalid plugin \"p\"; limits.timeout = \"5x\""},
		{"every plugin problem", "plugin \"p\" {\n  runtime = \"nope\"\n}\nplugin \"q\" {\n  runtime = \"nope\"\n}",
			"agent.hcl:4:1: error: Invalid plugin \"q\""},
		{"bad duration", `server { eval_nack_timeout = "soon" }`,
			`agent.hcl:1:30: error: Invalid value; server.eval_nack_timeout = "soon" is not a duration`},
		{"negative duration", "server {\n  heartbeat_grace = \"-1s\"\n}", `agent.hcl:2:21: error: Invalid value; server.heartbeat_grace = "-1s" must not be negative`},
		// Nomad's agent refuses it too: "job_gc_interval should be greater than 0s".
		{"zero job GC interval", `server { job_gc_interval = "0s" }`, `server.job_gc_interval = "0s" must be greater than 0s`},
		{"zero delivery limit", `server { eval_delivery_limit = 0 }`, "agent.hcl:1:32: error: Invalid value; server.eval_delivery_limit = 0 must be at least 1"},
		{"every bad value", "server {\n  job_gc_threshold = \"1x\"\n  min_heartbeat_ttl = \"2y\"\n}",
			"agent.hcl:3:23: error: Invalid value; server.min_heartbeat_ttl"},
		{"bad value in JSON", `{"server": {"job_gc_threshold": "1x"}}`, "agent.json:1:33: error: Invalid value; server.job_gc_threshold"},
		{"zero heartbeat rate", `server { max_heartbeats_per_second = 0 }`, "max_heartbeats_per_second"},
		{"two server blocks", "server {}\nserver {}", "Duplicate server block"},
		{"zero event buffer", `server { event_buffer_size = 0 }`, "event_buffer_size = 0 must be at least 1"},
		{"bad source size", "server {\n  job_max_source_size = \"lots\"\n}",
			`agent.hcl:2:25: error: Invalid value; server.job_max_source_size = "lots" is not a size`},
		{"negative source size", `server { job_max_source_size = "-1M" }`, "server.job_max_source_size"},
		{"zero bootstrap expect", `server { bootstrap_expect = 0 }`, "bootstrap_expect = 0 must be at least 1"},
		{"retry join not a list", "server {\n  server_join {\n    retry_join = \"a:1\"\n  }\n}", "agent.hcl:3"},
		{"bad retry interval", "server {\n  server_join {\n    retry_interval = \"often\"\n  }\n}", "agent.hcl:3:22: error: Invalid value; server.server_join.retry_interval"},
		{"unknown advertise", "advertise {\n  serf = \"a:1\"\n}", "agent.hcl:2"},
		{"bad scheduler algorithm", "server {\n  default_scheduler_config {\n    scheduler_algorithm = \"random\"\n  }\n}",
			`agent.hcl:3:27: error: Invalid value; server.default_scheduler_config.scheduler_algorithm = "random" is not binpack or spread`},
		{"unknown scheduler setting", "server {\n  default_scheduler_config {\n    algorithm = \"spread\"\n  }\n}", "agent.hcl:3"},
		{"unknown tls setting", "tls {\n  verify_incoming = true\n}", "agent.hcl:2"},
		{"old TLS version", "tls {\n  tls_min_version = \"tls11\"\n}",
			`agent.hcl:2:21: error: Invalid value; tls.tls_min_version = "tls11" is no longer safe`},
		{"insecure cipher suite", `tls { tls_cipher_suites = "TLS_RSA_WITH_RC4_128_SHA" }`,
			"agent.hcl:1:27: error: Invalid value; tls.tls_cipher_suites = \"TLS_RSA_WITH_RC4_128_SHA\" is an insecure cipher suite"},
		{"unknown cipher suite", `tls { tls_cipher_suites = "TLS_FAST" }`, `"TLS_FAST" is not a cipher suite Go knows`},
		{"Nomad's client token cache", "acl {\n  token_ttl = \"30s\"\n}", "agent.hcl:2"},
		{"bad token TTL", "acl {\n  token_max_expiration_ttl = \"a day\"\n}",
			`agent.hcl:2:30: error: Invalid value; acl.token_max_expiration_ttl = "a day" is not a duration`},
		{"unknown limits setting", "limits {\n  http_max_conns = 10\n}", "agent.hcl:2"},
		{"bad handshake timeout", "limits {\n  https_handshake_timeout = \"quick\"\n}",
			`agent.hcl:2:29: error: Invalid value; limits.https_handshake_timeout = "quick" is not a duration`},
		{"negative handshake timeout", "limits {\n  rpc_handshake_timeout = \"-5s\"\n}",
			`agent.hcl:2:27: error: Invalid value; limits.rpc_handshake_timeout = "-5s" must not be negative`},
		{"negative connection limit", "limits {\n  http_max_conns_per_client = -1\n}",
			"agent.hcl:2:31: error: Invalid value; limits.http_max_conns_per_client = -1 must not be negative"},
		{"every bad limit", "limits {\n  rpc_max_conns_per_client = -2\n  https_handshake_timeout = \"5\"\n}",
			"agent.hcl:3:29: error: Invalid value; limits.https_handshake_timeout"},
		{"connection limit not a number", `limits { rpc_max_conns_per_client = "many" }`, "Unsuitable value type"},
		{"bad autopilot duration", "autopilot {\n  server_stabilization_time = \"-1s\"\n}",
			`agent.hcl:2:31: error: Invalid value; autopilot.server_stabilization_time = "-1s" must not be negative`},
		{"unknown autopilot setting", "autopilot {\n  redundancy_zone_tag = \"zone\"\n}", "agent.hcl:2"},
		{"negative trailing logs", "autopilot {\n  max_trailing_logs = -1\n}", "agent.hcl:2"},
		{"zero search limit", "server {\n  search {\n    limit_query = 0\n  }\n}",
			"agent.hcl:3:19: error: Invalid value; server.search.limit_query = 0 must be at least 1"},
		{"every bad search setting", "server {\n  search {\n    limit_results   = -1\n    min_term_length = 0\n  }\n}",
			"agent.hcl:4:23: error: Invalid value; server.search.min_term_length = 0 must be at least 1"},
		{"unknown search setting", "server {\n  search {\n    fuzzy = true\n  }\n}", "agent.hcl:3"},
		{"search enabled not a bool", "server {\n  search { fuzzy_enabled = \"maybe\" }\n}", "Unsuitable value type"},
		{"bad limit in JSON", `{"limits": {"rpc_max_conns_per_client": -3}}`,
			"agent.json:1:41: error: Invalid value; limits.rpc_max_conns_per_client = -3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "agent.hcl"
			if strings.HasPrefix(tc.src, "{") {
				name = "agent.json"
			}
			f, err := ParseConfig(name, []byte(tc.src))
			if err == nil {
				cfg := DefaultConfig()
				err = f.Apply(&cfg)
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrConfig mentioning %q", err, tc.want)
			}
		})
	}
}

// FuzzParseConfig: no input makes the config parser panic, and every
// problem it reports is located at a line and column of the file, as
// ParseConfig promises.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`data_dir = "/x"` + "\nserver {\n num_schedulers = 2\n eval_nack_timeout = \"5s\"\n}\n"))
	f.Add([]byte(`server { eval_delivery_limit = -1 }`))
	located := regexp.MustCompile(`(?m)^fuzz\.hcl:\d+:\d+: error: `)
	unlocated := regexp.MustCompile(`(?m)^(fuzz\.hcl: )?error: `)
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, err := ParseConfig("fuzz.hcl", src)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error not ErrConfig: %v", err)
			}
			if msg := err.Error(); !located.MatchString(msg) || unlocated.MatchString(msg) {
				t.Fatalf("a problem not located at a line and column:\n%s", msg)
			}
			return
		}
		c := DefaultConfig()
		if err := cfg.Apply(&c); err != nil && !errors.Is(err, ErrConfig) {
			t.Fatalf("apply error not ErrConfig: %v", err)
		}
	})
}
