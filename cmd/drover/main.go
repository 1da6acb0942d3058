// Command drover is Drover's one binary: the agent, and the CLI that talks
// to it (job, eval, alloc, node, namespace, plugin, operator, acl, login,
// var, service), as Nomad's does.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/cli"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	ui := &cli.BasicUi{Reader: os.Stdin, Writer: stdout, ErrorWriter: stderr}
	m := &meta{ui: ui, out: stdout, errOut: stderr}
	c := &cli.CLI{
		Name:        "drover",
		Version:     fullVersion(readBuildInfo()),
		Args:        args,
		Commands:    commands(m),
		HelpFunc:    cli.BasicHelpFunc("drover"),
		HelpWriter:  stdout,
		ErrorWriter: stderr,
	}
	code, err := c.Run()
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	return code
}

func commands(m *meta) map[string]cli.CommandFactory {
	f := func(c cli.Command) cli.CommandFactory { return func() (cli.Command, error) { return c, nil } }
	group := func(synopsis, usage string) cli.CommandFactory {
		return f(&groupCommand{synopsis: synopsis, help: "Usage: drover " + usage + " <subcommand> [options] [args]\n\n  " + synopsis + "."})
	}
	return map[string]cli.CommandFactory{
		"agent":                             f(&agentCommand{meta: m}),
		"agent-info":                        f(&agentInfoCommand{meta: m}),
		"acl":                               f(&groupCommand{synopsis: "Interact with ACL policies, roles, tokens and single sign-on", help: aclGroupHelp}),
		"acl auth-method":                   f(&groupCommand{synopsis: "Interact with ACL auth methods", help: aclAuthMethodGroupHelp}),
		"acl auth-method create":            f(&aclAuthMethodCreateCommand{meta: m}),
		"acl auth-method list":              f(&aclAuthMethodListCommand{meta: m}),
		"acl auth-method info":              f(&aclAuthMethodInfoCommand{meta: m}),
		"acl auth-method update":            f(&aclAuthMethodUpdateCommand{meta: m}),
		"acl auth-method delete":            f(&aclAuthMethodDeleteCommand{meta: m}),
		"acl binding-rule":                  f(&groupCommand{synopsis: "Interact with ACL binding rules", help: aclBindingRuleGroupHelp}),
		"acl binding-rule create":           f(&aclBindingRuleCreateCommand{meta: m}),
		"acl binding-rule list":             f(&aclBindingRuleListCommand{meta: m}),
		"acl binding-rule info":             f(&aclBindingRuleInfoCommand{meta: m}),
		"acl binding-rule update":           f(&aclBindingRuleUpdateCommand{meta: m}),
		"acl binding-rule delete":           f(&aclBindingRuleDeleteCommand{meta: m}),
		"acl bootstrap":                     f(&aclBootstrapCommand{meta: m}),
		"acl policy":                        f(&groupCommand{synopsis: "Interact with ACL policies", help: aclPolicyGroupHelp}),
		"acl policy apply":                  f(&aclPolicyApplyCommand{meta: m}),
		"acl policy list":                   f(&aclPolicyListCommand{meta: m}),
		"acl policy info":                   f(&aclPolicyInfoCommand{meta: m}),
		"acl policy delete":                 f(&aclPolicyDeleteCommand{meta: m}),
		"acl role":                          f(&groupCommand{synopsis: "Interact with ACL roles", help: aclRoleGroupHelp}),
		"acl role create":                   f(&aclRoleCreateCommand{meta: m}),
		"acl role list":                     f(&aclRoleListCommand{meta: m}),
		"acl role info":                     f(&aclRoleInfoCommand{meta: m}),
		"acl role update":                   f(&aclRoleUpdateCommand{meta: m}),
		"acl role delete":                   f(&aclRoleDeleteCommand{meta: m}),
		"acl token":                         f(&groupCommand{synopsis: "Interact with ACL tokens", help: aclTokenGroupHelp}),
		"acl token create":                  f(&aclTokenCreateCommand{meta: m}),
		"acl token list":                    f(&aclTokenListCommand{meta: m}),
		"acl token info":                    f(&aclTokenInfoCommand{meta: m}),
		"acl token self":                    f(&aclTokenSelfCommand{meta: m}),
		"acl token update":                  f(&aclTokenUpdateCommand{meta: m}),
		"acl token delete":                  f(&aclTokenDeleteCommand{meta: m}),
		"login":                             f(&loginCommand{meta: m}),
		"job":                               group("Interact with jobs", "job"),
		"job run":                           f(&jobRunCommand{meta: m}),
		"job plan":                          f(&jobPlanCommand{meta: m}),
		"job status":                        f(&jobStatusCommand{meta: m}),
		"job stop":                          f(&jobStopCommand{meta: m}),
		"job scale":                         f(&jobScaleCommand{meta: m}),
		"job scaling-events":                f(&jobScalingEventsCommand{meta: m}),
		"scaling":                           group("Interact with scaling policies", "scaling"),
		"scaling policy":                    group("Interact with scaling policies", "scaling policy"),
		"scaling policy list":               f(&scalingPolicyListCommand{meta: m}),
		"scaling policy info":               f(&scalingPolicyInfoCommand{meta: m}),
		"job inspect":                       f(&jobInspectCommand{meta: m}),
		"job history":                       f(&jobHistoryCommand{meta: m}),
		"job validate":                      f(&jobValidateCommand{meta: m}),
		"job init":                          f(&jobInitCommand{meta: m}),
		"job dispatch":                      f(&jobDispatchCommand{meta: m}),
		"job revert":                        f(&jobRevertCommand{meta: m}),
		"job restart":                       f(&jobRestartCommand{meta: m}),
		"job eval":                          f(&jobEvalCommand{meta: m}),
		"job allocs":                        f(&jobAllocsCommand{meta: m}),
		"job deployments":                   f(&jobDeploymentsCommand{meta: m}),
		"job promote":                       f(&jobPromoteCommand{meta: m}),
		"job periodic":                      group("Interact with periodic jobs", "job periodic"),
		"job periodic force":                f(&jobPeriodicForceCommand{meta: m}),
		"job tag":                           group("Tag versions of a job", "job tag"),
		"job tag apply":                     f(&jobTagApplyCommand{meta: m}),
		"job tag unset":                     f(&jobTagUnsetCommand{meta: m}),
		"eval":                              group("Interact with evaluations", "eval"),
		"eval list":                         f(&evalListCommand{meta: m}),
		"eval status":                       f(&evalStatusCommand{meta: m}),
		"eval delete":                       f(&evalDeleteCommand{meta: m}),
		"alloc":                             group("Interact with allocations", "alloc"),
		"alloc status":                      f(&allocStatusCommand{meta: m}),
		"alloc stop":                        f(&allocStopCommand{meta: m}),
		"deployment":                        group("Interact with deployments", "deployment"),
		"deployment list":                   f(&deploymentListCommand{meta: m}),
		"deployment status":                 f(&deploymentStatusCommand{meta: m}),
		"deployment promote":                f(&deploymentActionCommand{meta: m, action: "promote"}),
		"deployment fail":                   f(&deploymentActionCommand{meta: m, action: "fail"}),
		"deployment pause":                  f(&deploymentActionCommand{meta: m, action: "pause"}),
		"deployment resume":                 f(&deploymentActionCommand{meta: m, action: "resume"}),
		"node":                              group("Interact with nodes", "node"),
		"node status":                       f(&nodeStatusCommand{meta: m}),
		"node drain":                        f(&nodeDrainCommand{meta: m}),
		"node eligibility":                  f(&nodeEligibilityCommand{meta: m}),
		"node pool":                         f(&groupCommand{synopsis: "Interact with node pools", help: nodePoolGroupHelp}),
		"node pool apply":                   f(&nodePoolApplyCommand{meta: m}),
		"node pool list":                    f(&nodePoolListCommand{meta: m}),
		"node pool info":                    f(&nodePoolInfoCommand{meta: m}),
		"node pool nodes":                   f(&nodePoolNodesCommand{meta: m}),
		"node pool jobs":                    f(&nodePoolJobsCommand{meta: m}),
		"node pool delete":                  f(&nodePoolDeleteCommand{meta: m}),
		"node pool init":                    f(&nodePoolInitCommand{meta: m}),
		"namespace":                         f(&groupCommand{synopsis: "Interact with namespaces", help: namespaceGroupHelp}),
		"namespace apply":                   f(&namespaceApplyCommand{meta: m}),
		"namespace list":                    f(&namespaceListCommand{meta: m}),
		"namespace status":                  f(&namespaceStatusCommand{meta: m}),
		"namespace inspect":                 f(&namespaceInspectCommand{meta: m}),
		"namespace delete":                  f(&namespaceDeleteCommand{meta: m}),
		"monitor":                           f(&logMonitorCommand{meta: m}),
		"operator":                          group("Operate the cluster", "operator"),
		"operator api":                      f(&operatorAPICommand{meta: m}),
		"operator autopilot":                group("Inspect and change the Autopilot configuration", "operator autopilot"),
		"operator autopilot get-config":     f(&autopilotGetConfigCommand{meta: m}),
		"operator autopilot set-config":     f(&autopilotSetConfigCommand{meta: m}),
		"operator autopilot health":         f(&autopilotHealthCommand{meta: m}),
		"operator debug":                    f(&operatorDebugCommand{meta: m}),
		"operator metrics":                  f(&operatorMetricsCommand{meta: m}),
		"operator snapshot":                 group("Save and restore the cluster's state", "operator snapshot"),
		"operator snapshot save":            f(&snapshotSaveCommand{meta: m}),
		"operator snapshot restore":         f(&snapshotRestoreCommand{meta: m}),
		"operator snapshot inspect":         f(&snapshotInspectCommand{meta: m}),
		"operator root":                     group("Manage the cluster's root encryption keys", "operator root"),
		"operator root keyring":             f(&groupCommand{synopsis: "Manages root encryption keys", help: keyringGroupHelp}),
		"operator root keyring list":        f(&keyringListCommand{meta: m}),
		"operator root keyring rotate":      f(&keyringRotateCommand{meta: m}),
		"operator root keyring remove":      f(&keyringRemoveCommand{meta: m}),
		"operator raft":                     group("Inspect and change the raft configuration", "operator raft"),
		"operator raft list-peers":          f(&raftListPeersCommand{meta: m}),
		"operator raft remove-peer":         f(&raftRemovePeerCommand{meta: m}),
		"operator raft transfer-leadership": f(&raftTransferCommand{meta: m}),
		"operator scheduler":                group("Read and change the scheduler configuration", "operator scheduler"),
		"operator scheduler get-config":     f(&schedulerGetConfigCommand{meta: m}),
		"operator scheduler set-config":     f(&schedulerSetConfigCommand{meta: m}),
		"plugin":                            group("Interact with scheduler plugins and CSI plugins", "plugin"),
		"plugin list":                       f(&pluginListCommand{meta: m}),
		"plugin inspect":                    f(&pluginInspectCommand{meta: m}),
		"plugin validate":                   f(&pluginValidateCommand{meta: m}),
		"plugin status":                     f(&pluginStatusCommand{meta: m}),
		"status":                            f(&statusCommand{meta: m}),
		"server":                            group("Interact with the cluster's servers", "server"),
		"server members":                    f(&serverMembersCommand{meta: m}),
		"system":                            group("Interact with the system", "system"),
		"system gc":                         f(&systemGCCommand{meta: m}),
		"system reconcile":                  group("Reconcile the servers' state", "system reconcile"),
		"system reconcile summaries":        f(&systemReconcileSummariesCommand{meta: m}),
		"volume":                            f(&groupCommand{synopsis: "Interact with volumes", help: volumeGroupHelp}),
		"volume register":                   f(&volumeRegisterCommand{meta: m}),
		"volume status":                     f(&volumeStatusCommand{meta: m}),
		"volume deregister":                 f(&volumeDeregisterCommand{meta: m}),
		"volume detach":                     f(&volumeDetachCommand{meta: m}),
		"volume init":                       f(&volumeInitCommand{meta: m}),
		"var":                               f(&groupCommand{synopsis: "Interact with variables", help: varGroupHelp}),
		"var list":                          f(&varListCommand{meta: m}),
		"var get":                           f(&varGetCommand{meta: m}),
		"var put":                           f(&varPutCommand{meta: m}),
		"var purge":                         f(&varPurgeCommand{meta: m}),
		"var init":                          f(&varInitCommand{meta: m}),
		"var lock":                          f(&varLockCommand{meta: m}),
		"service":                           f(&groupCommand{synopsis: "Interact with registered services", help: serviceGroupHelp}),
		"service list":                      f(&serviceListCommand{meta: m}),
		"service info":                      f(&serviceInfoCommand{meta: m}),
		"service delete":                    f(&serviceDeleteCommand{meta: m}),
		"tls":                               f(&groupCommand{synopsis: "Make a CA and certificates for TLS", help: tlsGroupHelp}),
		"tls ca":                            group("Make a certificate authority", "tls ca"),
		"tls ca create":                     f(&tlsCACreateCommand{meta: m}),
		"tls cert":                          group("Make certificates signed by the CA", "tls cert"),
		"tls cert create":                   f(&tlsCertCreateCommand{meta: m}),
		"bench":                             group("Run benchmarks", "bench"),
		"bench scheduler":                   f(&benchSchedulerCommand{meta: m}),
		"version":                           f(&versionCommand{meta: m}),
	}
}

// groupCommand is a command that only groups subcommands.
type groupCommand struct{ synopsis, help string }

func (g *groupCommand) Help() string     { return g.help }
func (g *groupCommand) Synopsis() string { return g.synopsis }
func (g *groupCommand) Run([]string) int { return cli.RunResultHelp }
