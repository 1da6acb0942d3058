package fsm

import (
	"fmt"

	"github.com/drover-sched/drover/sdk"
	"github.com/tinylib/msgp/msgp"
)

// checkShape refuses a decoded entry with missing (null) elements where
// apply expects objects: MessagePack can carry nil in any list or map, and
// an entry must be refused as a whole rather than half applied or crash
// the apply. It is part of decoding: Check and Apply refuse alike.
func checkShape(msg msgp.Unmarshaler) error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	evals := func(field string, es []*sdk.Evaluation) {
		for i, e := range es {
			if e == nil {
				bad("%s[%d] is null", field, i)
			}
		}
	}
	allocs := func(field string, as []*sdk.Allocation, resources bool) {
		for i, a := range as {
			if a == nil {
				bad("%s[%d] is null", field, i)
				continue
			}
			if resources && a.AllocatedResources != nil {
				for name, tr := range a.AllocatedResources.Tasks {
					if tr == nil {
						bad("%s[%d]: the resources of task %q are null", field, i, name)
					}
				}
			}
		}
	}
	job := func(field string, j *sdk.Job) {
		if j == nil {
			return
		}
		for i, tg := range j.TaskGroups {
			if tg == nil {
				bad("%s: group %d is null", field, i)
				continue
			}
			for k, t := range tg.Tasks {
				if t == nil {
					bad("%s: group %q: task %d is null", field, tg.Name, k)
				}
			}
		}
	}
	node := func(n *sdk.Node) {
		for name, d := range n.Drivers {
			if d == nil {
				bad("Node: driver %q is null", name)
			}
		}
		r := n.NodeResources
		if r == nil {
			return
		}
		for i, nw := range r.Networks {
			if nw == nil {
				bad("Node: NodeResources.Networks[%d] is null", i)
			}
		}
		for i, nw := range r.NodeNetworks {
			if nw == nil {
				bad("Node: NodeResources.NodeNetworks[%d] is null", i)
			}
		}
		for i, d := range r.Devices {
			if d == nil {
				bad("Node: NodeResources.Devices[%d] is null", i)
			}
		}
	}
	switch m := msg.(type) {
	case *NodeRegisterRequest:
		if m.Node == nil {
			bad("Node is null")
		} else {
			node(m.Node)
		}
		evals("Evals", m.Evals)
	case *NodeDeregisterRequest:
		evals("Evals", m.Evals)
	case *NodeUpdateStatusRequest:
		evals("Evals", m.Evals)
	case *NodeUpdateEligibilityRequest:
		evals("Evals", m.Evals)
	case *NodeUpdateDrainRequest:
		evals("Evals", m.Evals)
	case *JobRegisterRequest:
		if m.Job == nil {
			bad("Job is null")
		}
		job("Job", m.Job)
		if m.Scaling != nil && m.Scaling.Event == nil {
			bad("Scaling.Event is null")
		}
	case *ScalingEventRequest:
		if m.Event == nil {
			bad("Event is null")
		}
	case *EvalUpdateRequest:
		evals("Evals", m.Evals)
	case *AllocClientUpdateRequest:
		allocs("Allocs", m.Allocs, false)
		evals("Evals", m.Evals)
	case *AllocUpdateDesiredTransitionRequest:
		for id, dt := range m.Allocs {
			if dt == nil {
				bad("the transition of allocation %s is null", id)
			}
		}
		evals("Evals", m.Evals)
	case *ApplyPlanResultsRequest:
		job("Job", m.Job)
		allocs("AllocsStopped", m.AllocsStopped, false)
		allocs("AllocsUpdated", m.AllocsUpdated, true)
		allocs("AllocsPreempted", m.AllocsPreempted, false)
		if d := m.Deployment; d != nil {
			for g, st := range d.TaskGroups {
				if st == nil {
					bad("Deployment: the state of group %q is null", g)
				}
			}
		}
		for i, u := range m.DeploymentUpdates {
			if u == nil {
				bad("DeploymentUpdates[%d] is null", i)
			}
		}
		evals("PreemptionEvals", m.PreemptionEvals)
	case *SchedulerConfigRequest:
		if m.Config == nil {
			bad("Config is null")
		}
	case *DeploymentStatusUpdateRequest:
		if m.Update == nil {
			bad("Update is null")
		}
		job("Job", m.Job)
	case *ACLPolicyUpsertRequest:
		for i, p := range m.Policies {
			if p == nil {
				bad("Policies[%d] is null", i)
			}
		}
	case *ACLTokenUpsertRequest:
		for i, t := range m.Tokens {
			if t == nil {
				bad("Tokens[%d] is null", i)
			}
		}
	case *ACLRoleUpsertRequest:
		for i, r := range m.Roles {
			if r == nil {
				bad("Roles[%d] is null", i)
			}
		}
	case *ACLTokenBootstrapRequest:
		if m.Token == nil {
			bad("Token is null")
		}
	case *VariableApplyRequest:
		if m.Var == nil {
			bad("Var is null")
		}
	case *AutopilotConfigRequest:
		if m.Config == nil {
			bad("Config is null")
		}
	case *ACLAuthMethodUpsertRequest:
		for i, am := range m.Methods {
			if am == nil {
				bad("Methods[%d] is null", i)
			} else if am.Config == nil {
				bad("Methods[%d].Config is null", i)
			}
		}
	case *ACLBindingRuleUpsertRequest:
		for i, r := range m.Rules {
			if r == nil {
				bad("Rules[%d] is null", i)
			}
		}
	case *OneTimeTokenUpsertRequest:
		if m.Token == nil {
			bad("Token is null")
		}
	case *RootKeyUpsertRequest:
		for i, k := range m.Keys {
			if k == nil {
				bad("Keys[%d] is null", i)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %T: %s", ErrBadEntry, msg, errs[0])
	}
	return nil
}
