package sdk

// Catalog is implemented by a State that can list every job, allocation
// and deployment (the plugin's state mirror does). The core scheduler
// needs it to find what is old enough to collect; other schedulers reach
// jobs, allocations and deployments through their evaluation.
type Catalog interface {
	// Jobs returns every job, ordered by namespace and ID.
	Jobs() []*Job
	// Allocs returns every allocation, ordered by ID, those of purged
	// jobs and collected nodes included.
	Allocs() []*Allocation
	// Deployments returns every deployment, ordered by ID.
	Deployments() []*Deployment
}
