// Package sdk is what a Drover scheduler author sees: the data model (jobs,
// nodes, allocations, evaluations, plans, deployments) with Nomad's field
// names, and the three interfaces a scheduler lives between:
//
//   - State, a read-only, consistent view of the cluster at one index;
//   - Planner, the only way a scheduler changes anything (submit a plan,
//     update, create or reblock evaluations);
//   - Scheduler, the policy itself: Process(ctx, eval).
//
// A scheduler is a plugin. Its main package registers it in init and serves it:
//
//	func init() {
//		plugin.Register(plugin.Info{Name: "spread-zones", Version: "1.0.0"}, &Scheduler{})
//	}
//
// Jobs pick it with scheduler = "spread-zones". A plugin that lists job types
// in Info.Types also serves the jobs of those types that name no scheduler,
// but an agent refuses it while another plugin (a built-in) serves one of
// them.
//
//	func main() { plugin.Serve() }
//
// Built with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared it is a WebAssembly
// reactor the host runs in wazero; built natively it is a go-plugin binary.
// Either way the host hands it one evaluation at a time, with its state
// mirror brought up to date first (see package sdk/abi).
//
// Objects returned by State are shared with the state mirror: never modify
// them; copy first (Job, Node, Allocation, Evaluation and Deployment have
// a Copy method that copies deeply; copy what else you change yourself).
package sdk
