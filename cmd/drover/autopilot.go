package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/hashicorp/nomad/api"
)

// autopilotConfigPath is where the autopilot configuration is read and
// written.
const autopilotConfigPath = "/v1/operator/autopilot/configuration"

// readAutopilotConfig reads the autopilot configuration.
func readAutopilotConfig(cl *client.Client) (*api.AutopilotConfiguration, error) {
	var conf api.AutopilotConfiguration
	if _, err := cl.Get(bg, autopilotConfigPath, &conf); err != nil {
		return nil, fmt.Errorf("reading the Autopilot configuration: %w", err)
	}
	return &conf, nil
}

type autopilotGetConfigCommand struct{ *meta }

func (c *autopilotGetConfigCommand) Synopsis() string {
	return "Display the current Autopilot configuration"
}

func (c *autopilotGetConfigCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator autopilot get-config [options]

  Displays the current Autopilot configuration (GET
  /v1/operator/autopilot/configuration), one "Name = value" line per
  setting as Nomad prints it.

  If ACLs are enabled, this command requires a token with the
  'operator:read' capability.
` + noNamespaceOptions + `

Get-config options:
` + jsonOption)
}

func (c *autopilotGetConfigCommand) Run(args []string) int {
	fs := c.flags("operator autopilot get-config", true)
	cl, ok := c.noArgsNoNamespace(fs, args, c.Help())
	if !ok {
		return exitError
	}
	conf, err := readAutopilotConfig(cl)
	if err != nil {
		return c.errorf("%v", err)
	}
	if c.json {
		return c.printJSON(conf)
	}
	// Nomad's lines, unaligned, so that what greps Nomad's output greps
	// Drover's.
	for _, l := range [][2]any{
		{"CleanupDeadServers", conf.CleanupDeadServers},
		{"LastContactThreshold", conf.LastContactThreshold},
		{"MaxTrailingLogs", conf.MaxTrailingLogs},
		{"MinQuorum", conf.MinQuorum},
		{"ServerStabilizationTime", conf.ServerStabilizationTime},
		{"EnableRedundancyZones", conf.EnableRedundancyZones},
		{"DisableUpgradeMigration", conf.DisableUpgradeMigration},
		{"EnableCustomUpgrades", conf.EnableCustomUpgrades},
	} {
		fmt.Fprintf(c.out, "%s = %v\n", l[0], l[1])
	}
	return exitOK
}

// optionalFlag is a flag that must be given a value (-name=value or -name
// value, a bare -name being an error, as in Nomad's autopilot commands)
// and remembers whether it was given, so that only the options given
// change the configuration, even to a zero value.
type optionalFlag[T any] struct {
	parse func(string) (T, error)
	value T
	set   bool
}

func (o *optionalFlag[T]) String() string {
	if o == nil || !o.set {
		return ""
	}
	return fmt.Sprint(o.value)
}

func (o *optionalFlag[T]) Set(s string) error {
	v, err := o.parse(s)
	if err != nil {
		return err
	}
	o.value, o.set = v, true
	return nil
}

// merge sets *dst to the flag's value if the flag was given.
func (o *optionalFlag[T]) merge(dst *T) {
	if o.set {
		*dst = o.value
	}
}

func parseUint(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }

type autopilotSetConfigCommand struct{ *meta }

func (c *autopilotSetConfigCommand) Synopsis() string {
	return "Modify the current Autopilot configuration"
}

func (c *autopilotSetConfigCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator autopilot set-config [options]

  Modifies the current Autopilot configuration: reads it, changes the
  settings the options give (the others keep their values) and writes it
  back only if no one changed it meanwhile (check-and-set on its modify
  index). Exits 1 if someone did: run the command again.

  If ACLs are enabled, this command requires a token with the
  'operator:write' capability.
` + noNamespaceOptions + `

Set-config options:

  -cleanup-dead-servers=[true|false]
     Whether to remove dead servers from the raft configuration when new
     ones are added.

  -last-contact-threshold=200ms
     How long a server may go without contact from the leader before it
     is unhealthy.

  -max-trailing-logs=N
     How many raft log entries a server may trail the leader by before it
     is unhealthy.

  -min-quorum=N
     The fewest servers the cluster must have before dead ones are
     removed.

  -server-stabilization-time=10s
     How long a new server must be healthy before it is made a voter.

  -enable-redundancy-zones=[true|false]
  -disable-upgrade-migration=[true|false]
  -enable-custom-upgrades=[true|false]
     Settings of Nomad Enterprise's redundancy zones and upgrade
     migrations, kept in the configuration.`)
}

func (c *autopilotSetConfigCommand) Run(args []string) int {
	fs := c.flags("operator autopilot set-config", false)
	var (
		cleanup, zones, noMigration, customUpgrades optionalFlag[bool]
		lastContact, stabilization                  optionalFlag[time.Duration]
		trailingLogs, minQuorum                     optionalFlag[uint64]
	)
	for name, f := range map[string]*optionalFlag[bool]{"cleanup-dead-servers": &cleanup,
		"enable-redundancy-zones": &zones, "disable-upgrade-migration": &noMigration,
		"enable-custom-upgrades": &customUpgrades} {
		f.parse = strconv.ParseBool
		fs.Var(f, name, "")
	}
	for name, f := range map[string]*optionalFlag[time.Duration]{"last-contact-threshold": &lastContact,
		"server-stabilization-time": &stabilization} {
		f.parse = time.ParseDuration
		fs.Var(f, name, "")
	}
	for name, f := range map[string]*optionalFlag[uint64]{"max-trailing-logs": &trailingLogs, "min-quorum": &minQuorum} {
		f.parse = parseUint
		fs.Var(f, name, "")
	}
	cl, ok := c.noArgsNoNamespace(fs, args, c.Help())
	if !ok {
		return exitError
	}
	conf, err := readAutopilotConfig(cl)
	if err != nil {
		return c.errorf("%v", err)
	}
	cleanup.merge(&conf.CleanupDeadServers)
	zones.merge(&conf.EnableRedundancyZones)
	noMigration.merge(&conf.DisableUpgradeMigration)
	customUpgrades.merge(&conf.EnableCustomUpgrades)
	lastContact.merge(&conf.LastContactThreshold)
	stabilization.merge(&conf.ServerStabilizationTime)
	trailingLogs.merge(&conf.MaxTrailingLogs)
	if minQuorum.set {
		conf.MinQuorum = uint(minQuorum.value)
	}
	// The modify index just read makes the write a check-and-set: it
	// fails, rather than undo it, if someone changed the configuration
	// since.
	var updated bool
	path := autopilotConfigPath + "?cas=" + strconv.FormatUint(conf.ModifyIndex, 10)
	if _, err := cl.Put(bg, path, conf, &updated); err != nil {
		return c.errorf("writing the Autopilot configuration: %v", err)
	}
	if !updated {
		c.ui.Error("Configuration could not be atomically updated, please try again")
		return exitError
	}
	c.ui.Output("Configuration updated!")
	return exitOK
}

type autopilotHealthCommand struct{ *meta }

func (c *autopilotHealthCommand) Synopsis() string {
	return "Display the current Autopilot health"
}

func (c *autopilotHealthCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator autopilot health [options]

  Displays the servers' health as the leader's Autopilot sees it (GET
  /v1/operator/autopilot/health): whether the cluster is healthy, how many
  servers it can lose without losing its quorum, the leader, the voters,
  and each server's raft state.

  Exits 0 if the cluster is healthy and 1 if it is not (the report is
  printed either way) or on error.

  If ACLs are enabled, this command requires a token with the
  'operator:read' capability.
` + noNamespaceOptions + `

Health options:
` + jsonOption)
}

func (c *autopilotHealthCommand) Run(args []string) int {
	fs := c.flags("operator autopilot health", true)
	cl, ok := c.noArgsNoNamespace(fs, args, c.Help())
	if !ok {
		return exitError
	}
	var health api.OperatorHealthReply
	_, err := cl.Get(bg, "/v1/operator/autopilot/health", &health)
	// The agent answers 429 Too Many Requests when a server is unhealthy,
	// with the report still in the body: that is the answer, not an error.
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusTooManyRequests {
		err = json.Unmarshal(apiErr.Body, &health)
		if err != nil {
			return c.errorf("reading the Autopilot health: the agent's 429 holds no report: %v", err)
		}
	}
	if err != nil {
		return c.errorf("reading the Autopilot health: %v", err)
	}
	code := exitOK
	if !health.Healthy {
		code = exitError
	}
	if c.json {
		return max(c.printJSON(&health), code)
	}
	c.printHealth(&health)
	return code
}

// printHealth prints the report as Nomad's operator autopilot health
// does: the cluster's health, then a table of its servers.
func (m *meta) printHealth(h *api.OperatorHealthReply) {
	fmt.Fprintf(m.out, "Healthy: %t\nFailureTolerance: %d\nLeader: %s\nVoters:\n", h.Healthy, h.FailureTolerance, h.Leader)
	for _, id := range h.Voters {
		fmt.Fprintf(m.out, "  %s\n", id)
	}
	fmt.Fprintln(m.out, "Servers:")
	rows := [][]string{{"ID", "Name", "Address", "SerfStatus", "Version", "Leader", "Voter", "Healthy",
		"LastContact", "LastTerm", "LastIndex", "StableSince"}}
	for _, s := range h.Servers {
		since := "-"
		if !s.StableSince.IsZero() {
			since = s.StableSince.Local().Format(time.RFC3339)
		}
		rows = append(rows, []string{s.ID, s.Name, s.Address, s.SerfStatus, s.Version,
			strconv.FormatBool(s.Leader), strconv.FormatBool(s.Voter), strconv.FormatBool(s.Healthy),
			s.LastContact.String(), strconv.FormatUint(s.LastTerm, 10), strconv.FormatUint(s.LastIndex, 10), since})
	}
	m.table(rows)
}
