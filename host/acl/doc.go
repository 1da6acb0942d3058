// Package acl reads Nomad's ACL policy language and answers what a token
// holding some policies may do, as Nomad 1.6 answers it, so that policies
// written for Nomad serve Drover unchanged.
//
// A policy is HCL in native syntax:
//
//	namespace "default" {
//	  policy       = "read"
//	  capabilities = ["submit-job"]
//	  variables {
//	    path "project/*" {
//	      capabilities = ["read"]
//	    }
//	  }
//	}
//	namespace "prod-*" { policy = "deny" }
//	node_pool "gpu_*" { policy = "write" }
//	host_volume "certs" { policy = "read" }
//	node     { policy = "read" }
//	agent    { policy = "read" }
//	operator { policy = "read" }
//	quota    { policy = "read" }
//	plugin   { policy = "list" }
//
// [Parse] checks it as Nomad does (each block's policies and
// capabilities, names and their globs, at least one block) and expands
// each policy into the capabilities Nomad grants for it; an error names
// the line and column of each problem. [New] merges a token's policies
// into an [ACL]: the capabilities granted to one name or glob add up, a
// deny there takes them all away, and for node, agent, operator, quota
// and plugin the most permissive policy wins unless one is deny. The
// ACL's Allow methods match a namespace, node pool or host volume to its
// own rules if a policy names it, else to the closest glob ("prod-*"
// over "*"), as Nomad does. [Management] may do everything, [DenyAll]
// (and a nil *ACL) nothing.
//
// Where Drover is stricter than Nomad 1.6, it refuses what Nomad let pass
// without effect: unknown blocks and arguments (Nomad's decoder ignored
// them, so a misspelt "polcy" granted nothing, silently), a repeated
// node, agent, operator, quota or plugin block, and "scale" outside a
// namespace. The syntax is HCL 2's, as Drover's jobspecs', which reads
// policies written as Nomad documents them; what only HCL 1 allowed, such
// as a nested block on the line of its parent's brace, and policies in
// JSON, are refused. The values are literals: strings and lists of strings, with
// no expressions, so no input nests deep enough to exhaust the parser's
// stack. A deny on a variables path wins over another policy's grant
// there, as it does for namespaces (Nomad merged variables grants without
// it), and Nomad's implicit access of a workload to its job's variables
// is left out, as Drover serves no variables yet.
package acl
