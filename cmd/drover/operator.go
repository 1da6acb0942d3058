package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/sdk"
)

type schedulerGetConfigCommand struct{ *meta }

func (c *schedulerGetConfigCommand) Synopsis() string { return "Display the scheduler configuration" }

func (c *schedulerGetConfigCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator scheduler get-config [options]

  Shows the cluster-wide scheduler configuration: the placement algorithm,
  preemption per scheduler type, memory oversubscription, and whether job
  registration is rejected or the evaluation broker paused.
` + apiOptions + `

Get-config options:
` + jsonOption)
}

func (c *schedulerGetConfigCommand) Run(args []string) int {
	fs := c.flags("operator scheduler get-config", true)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	var resp httpapi.SchedulerConfigurationResponse
	if _, err := cl.Get(bg, "/v1/operator/scheduler/configuration", &resp); err != nil {
		return c.errorf("reading the scheduler configuration: %v", err)
	}
	if c.json {
		return c.printJSON(&resp)
	}
	s := resp.SchedulerConfig
	c.kv("Scheduler Algorithm", s.EffectiveAlgorithm(),
		"Memory Oversubscription", fmt.Sprint(s.MemoryOversubscriptionEnabled),
		"Reject Job Registration", fmt.Sprint(s.RejectJobRegistration),
		"Pause Eval Broker", fmt.Sprint(s.PauseEvalBroker),
		"Preemption System Scheduler", fmt.Sprint(s.PreemptionConfig.SystemSchedulerEnabled),
		"Preemption Service Scheduler", fmt.Sprint(s.PreemptionConfig.ServiceSchedulerEnabled),
		"Preemption Batch Scheduler", fmt.Sprint(s.PreemptionConfig.BatchSchedulerEnabled),
		"Preemption SysBatch Scheduler", fmt.Sprint(s.PreemptionConfig.SysBatchSchedulerEnabled),
		"Node Limit for Feasibility Checks", fmt.Sprint(s.NodeLimitForFeasibilityChecks),
		"Modify Index", fmt.Sprint(s.ModifyIndex))
	return exitOK
}

type schedulerSetConfigCommand struct{ *meta }

func (c *schedulerSetConfigCommand) Synopsis() string { return "Modify the scheduler configuration" }

func (c *schedulerSetConfigCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator scheduler set-config [options]

  Changes the cluster-wide scheduler configuration. Only the options given
  change; the rest keep their current values.
` + apiOptions + `

Set-config options:

  -scheduler-algorithm=ALG         binpack or spread.
  -memory-oversubscription=BOOL    Let tasks use memory_max above memory.
  -reject-job-registration=BOOL    Refuse job registrations, dispatches and
                                   scaling (load shedding).
  -pause-eval-broker=BOOL          Stop handing evaluations to schedulers.
  -preempt-system-scheduler=BOOL   Preemption for system jobs.
  -preempt-service-scheduler=BOOL  Preemption for service jobs.
  -preempt-batch-scheduler=BOOL    Preemption for batch jobs.
  -preempt-sysbatch-scheduler=BOOL Preemption for sysbatch jobs.
  -node-limit-feasibility=N        Feasible nodes ranked per placement of
                                   a group with affinities or spreads (at
                                   least its count; 0: 100).
  -check-index=N                   Change only if the configuration's
                                   modify index is still N.`)
}

// boolFlag is a flag that remembers whether it was set.
type boolFlag struct {
	set, value bool
}

func (b *boolFlag) String() string { return strconv.FormatBool(b.value) }
func (b *boolFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	b.set, b.value = true, v
	return err
}
func (b *boolFlag) IsBoolFlag() bool { return true }

func (c *schedulerSetConfigCommand) Run(args []string) int {
	fs := c.flags("operator scheduler set-config", false)
	algorithm := fs.String("scheduler-algorithm", "", "")
	nodeLimit := fs.Int("node-limit-feasibility", -1, "")
	checkIndex := fs.Int64("check-index", -1, "")
	var oversub, reject, pause, system, service, batch, sysbatch boolFlag
	for name, f := range map[string]*boolFlag{"memory-oversubscription": &oversub, "reject-job-registration": &reject,
		"pause-eval-broker": &pause, "preempt-system-scheduler": &system, "preempt-service-scheduler": &service,
		"preempt-batch-scheduler": &batch, "preempt-sysbatch-scheduler": &sysbatch} {
		fs.Var(f, name, "")
	}
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	changed := 0
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "address" && f.Name != "namespace" && f.Name != "check-index" {
			changed++
		}
	})
	if changed == 0 {
		c.ui.Error("Nothing to change: give at least one option")
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	var cur httpapi.SchedulerConfigurationResponse
	if _, err := cl.Get(bg, "/v1/operator/scheduler/configuration", &cur); err != nil {
		return c.errorf("reading the scheduler configuration: %v", err)
	}
	s := cur.SchedulerConfig
	if s == nil {
		s = &sdk.SchedulerConfiguration{}
	}
	if *algorithm != "" {
		s.SchedulerAlgorithm = *algorithm
	}
	if *nodeLimit >= 0 {
		s.NodeLimitForFeasibilityChecks = uint(*nodeLimit)
	}
	apply := func(f boolFlag, dst *bool) {
		if f.set {
			*dst = f.value
		}
	}
	apply(oversub, &s.MemoryOversubscriptionEnabled)
	apply(reject, &s.RejectJobRegistration)
	apply(pause, &s.PauseEvalBroker)
	apply(system, &s.PreemptionConfig.SystemSchedulerEnabled)
	apply(service, &s.PreemptionConfig.ServiceSchedulerEnabled)
	apply(batch, &s.PreemptionConfig.BatchSchedulerEnabled)
	apply(sysbatch, &s.PreemptionConfig.SysBatchSchedulerEnabled)
	path := "/v1/operator/scheduler/configuration"
	if *checkIndex >= 0 {
		path += "?cas=" + strconv.FormatInt(*checkIndex, 10)
	}
	var resp httpapi.SchedulerSetConfigurationResponse
	if _, err := cl.Put(bg, path, s, &resp); err != nil {
		return c.errorf("updating the scheduler configuration: %v", err)
	}
	if !resp.Updated {
		return c.errorf("the scheduler configuration was not updated: its modify index is no longer %d", *checkIndex)
	}
	c.ui.Output("Scheduler configuration updated!")
	return exitOK
}

type operatorMetricsCommand struct{ *meta }

func (c *operatorMetricsCommand) Synopsis() string { return "Display the agent's metrics" }

func (c *operatorMetricsCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator metrics [options]

  Shows the agent's metrics (GET /v1/metrics): the gauges (eval broker and
  blocked evals, plan queue, heartbeats, Go runtime), the counters and the
  timings (scheduler invocations per type and plugin, plan verification and
  commit) of the last ten-second interval.
` + apiOptions + `

Metrics options:

  -format=prometheus  Print Prometheus's text format (the agent's
                      telemetry block must set prometheus_metrics = true).
` + jsonOption)
}

// metricsSummary is the part of /v1/metrics the table shows.
type metricsSummary struct {
	Timestamp string
	Gauges    []struct {
		Name   string
		Value  float64
		Labels map[string]string
	}
	Counters, Samples []struct {
		Name                string
		Count               int
		Sum, Min, Max, Mean float64
		Labels              map[string]string
	}
}

func (c *operatorMetricsCommand) Run(args []string) int {
	fs := c.flags("operator metrics", true)
	format := fs.String("format", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	if *format != "" && *format != "prometheus" {
		return c.errorf("-format=%q: the only format is prometheus", *format)
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	if *format == "prometheus" {
		raw, err := cl.GetRaw(bg, "/v1/metrics?format=prometheus")
		if err != nil {
			return c.errorf("reading the metrics: %v", err)
		}
		_, _ = c.out.Write(raw)
		return exitOK
	}
	var sum metricsSummary
	if _, err := cl.Get(bg, "/v1/metrics", &sum); err != nil {
		return c.errorf("reading the metrics: %v", err)
	}
	if c.json {
		return c.printJSON(&sum)
	}
	name := func(n string, labels map[string]string) string {
		if len(labels) == 0 {
			return n
		}
		var l []string
		for k, v := range labels {
			l = append(l, k+"="+v)
		}
		slices.Sort(l)
		return n + "{" + strings.Join(l, ",") + "}"
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	fmt.Fprintf(c.out, "Interval of %s\n\nGauges\n", sum.Timestamp)
	rows := [][]string{{"Name", "Value"}}
	for _, g := range sum.Gauges {
		rows = append(rows, []string{name(g.Name, g.Labels), num(g.Value)})
	}
	c.table(rows)
	fmt.Fprintln(c.out, "\nCounters")
	rows = [][]string{{"Name", "Count", "Sum"}}
	for _, s := range sum.Counters {
		rows = append(rows, []string{name(s.Name, s.Labels), strconv.Itoa(s.Count), num(s.Sum)})
	}
	c.table(rows)
	fmt.Fprintln(c.out, "\nTimings (ms)")
	rows = [][]string{{"Name", "Count", "Mean", "Min", "Max"}}
	for _, s := range sum.Samples {
		rows = append(rows, []string{name(s.Name, s.Labels), strconv.Itoa(s.Count), num(s.Mean), num(s.Min), num(s.Max)})
	}
	c.table(rows)
	return exitOK
}
