// Package verify holds the checks Drover's host makes of what a scheduler
// plugin sends before anything is committed: plans (Plan, then NodeFits
// node by node, as the plan applier runs them against the latest state)
// and eval operations (EvalUpdate, NewEval, Reblock, as the worker runs
// them on the planner calls). The host never trusts a plugin; these are
// the rules by which it does not.
//
// They live in the SDK so that sdktest's Harness runs the very same
// checks: a plugin that passes its harness tests is not refused by an
// agent for a rule the harness did not know.
package verify
