// Package feasible decides whether a node can run a task group, and whether
// a set of allocations fits on a node.
//
// It holds the building blocks a scheduler filters nodes with, each usable
// on its own:
//
//   - Checker evaluates constraints and affinities with every operator Nomad
//     knows, resolving ${attr.*}, ${meta.*} and ${node.*} targets;
//   - GroupChecks bundles what a task group asks of a node (drivers,
//     constraints, devices, network mode, host volumes) into one check;
//   - Eligibility remembers, per computed node class, whether a job and its
//     groups were feasible, so a scheduler checks one node per class and a
//     blocked eval can say which classes would unblock it;
//   - PortIndex, AssignPorts, AssignCores and DeviceAllocator hand out the
//     resources that are not plain quantities;
//   - AllocsFit is the one fit rule: the host's plan applier re-checks every
//     plan with it, so a scheduler that uses it never has a plan rejected for
//     a reason it could not see.
//
// A typical filter loop:
//
//	ch := feasible.NewChecker()
//	elig := feasible.NewEligibility(job)
//	checks := feasible.NewGroupChecks(job, tg)
//	for _, n := range nodes {
//		if reason := elig.Check(ch, checks, n); reason != "" {
//			metric.FilterNode(n, reason)
//			continue
//		}
//		// n is feasible: rank it
//	}
package feasible
