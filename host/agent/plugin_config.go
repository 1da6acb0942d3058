package agent

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
)

// PluginBlockSchema is the agent configuration's plugin block, for the
// configuration file's schema of blocks decoded outside File.
var PluginBlockSchema = hcl.BlockHeaderSchema{Type: "plugin", LabelNames: []string{"name"}}

// pluginBlock is one `plugin "NAME" { ... }` block:
//
//	plugin "zones" {
//	  runtime = "wasm"              # or "goplugin"; default from the file
//	  path    = "/opt/drover/zones.wasm"
//	  config  = { zone_attribute = "meta.zone" }
//	  env     = { TZ = "UTC" }          # default: none
//	  real_clock = false                # wasm: the real clock; default: a fake one
//	  limits {
//	    memory_mb        = 256
//	    timeout          = "5s"
//	    enforce_deadline = true
//	  }
//	}
type pluginBlock struct {
	Name      string            `hcl:"name,label"`
	Runtime   string            `hcl:"runtime,optional"`
	Path      string            `hcl:"path,optional"`
	Config    map[string]string `hcl:"config,optional"`
	Env       map[string]string `hcl:"env,optional"`
	RealClock *bool             `hcl:"real_clock,optional"`
	Limits    *limitsBlock      `hcl:"limits,block"`
	// DefRange locates the block in problems found after decoding.
	DefRange hcl.Range `hcl:",def_range"`
}

type limitsBlock struct {
	MemoryMB        *int   `hcl:"memory_mb,optional"`
	Timeout         string `hcl:"timeout,optional"`
	EnforceDeadline *bool  `hcl:"enforce_deadline,optional"`

	MemoryMBRange hcl.Range `hcl:"memory_mb,attr_range"`
	TimeoutRange  hcl.Range `hcl:"timeout,attr_range"`
}

type pluginBlocks struct {
	Plugins []*pluginBlock `hcl:"plugin,block"`
	Rest    hcl.Body       `hcl:",remain"`
}

// DecodePluginBlocks decodes the plugin blocks of a configuration body
// (other content is left alone) and checks each.
func DecodePluginBlocks(body hcl.Body) ([]PluginConfig, hcl.Diagnostics) {
	var pb pluginBlocks
	if diags := gohcl.DecodeBody(body, nil, &pb); diags.HasErrors() {
		return nil, diags
	}
	var out []PluginConfig
	var diags hcl.Diagnostics
	seen := map[string]bool{}
	for _, b := range pb.Plugins {
		errorf := func(at hcl.Range, format string, args ...any) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Subject: at.Ptr(),
				Summary: fmt.Sprintf("Invalid plugin %q", b.Name), Detail: fmt.Sprintf(format, args...)})
		}
		if seen[b.Name] {
			errorf(b.DefRange, "plugin %q is configured twice", b.Name)
			continue
		}
		seen[b.Name] = true
		c := PluginConfig{Name: b.Name, Runtime: b.Runtime, Path: b.Path, Config: b.Config, Env: b.Env,
			RealClock: b.RealClock != nil && *b.RealClock}
		if l := b.Limits; l != nil {
			if l.MemoryMB != nil {
				c.Limits.MemoryMB = *l.MemoryMB
				if *l.MemoryMB == 0 {
					errorf(l.MemoryMBRange, "limits.memory_mb must be at least 1")
				}
			}
			if l.Timeout != "" {
				d, err := time.ParseDuration(l.Timeout)
				if err != nil || d <= 0 {
					errorf(l.TimeoutRange, "limits.timeout = %q is not a positive duration (e.g. \"5s\")", l.Timeout)
				}
				c.Limits.Timeout = d
			}
			c.Limits.EnforceDeadline = l.EnforceDeadline
		}
		if err := c.Validate(); err != nil {
			errorf(b.DefRange, "%v", err)
		}
		out = append(out, c)
	}
	return out, diags
}

// PluginBlockSettings names what a plugin block takes: its attributes and
// blocks, then those of its limits block. The agent's help lists them.
func PluginBlockSettings() []string {
	var names []string
	for _, v := range []any{&pluginBlock{}, &limitsBlock{}} {
		schema, _ := gohcl.ImpliedBodySchema(v)
		for _, a := range schema.Attributes {
			names = append(names, a.Name)
		}
		for _, b := range schema.Blocks {
			names = append(names, b.Type)
		}
	}
	return names
}
