package state

import (
	"fmt"

	"github.com/drover-sched/drover/sdk"
	memdb "github.com/hashicorp/go-memdb"
)

// Table names.
const (
	TableIndex       = "index"
	TableNodes       = "nodes"
	TableJobs        = "jobs"
	TableJobVersions = "job_version"
	TableAllocs      = "allocs"
	TableEvals       = "evals"
	TableDeployments = "deployment"
	TableSchedConfig = "scheduler_config"
	TablePeriodic    = "periodic_launch"
)

//go:generate go run github.com/tinylib/msgp@v1.6.5 -file schema.go -o schema_gen.go -tests=false -io=false

//msgp:ignore versionIndexer

// IndexEntry records the last index at which a table changed.
type IndexEntry struct {
	Key   string
	Value uint64
}

// PeriodicLaunch records when a periodic job last launched a child (or,
// before its first launch, when it was registered), so a new leader knows
// whether a launch was missed.
type PeriodicLaunch struct {
	Namespace string
	ID        string
	// Launch is the launch time, in Unix nanoseconds.
	Launch      int64
	CreateIndex uint64
	ModifyIndex uint64
}

// SchedulerConfigEntry wraps the singleton scheduler configuration.
type SchedulerConfigEntry struct {
	ID     string
	Config *sdk.SchedulerConfiguration
}

// nsIDIndex indexes objects by namespace and an ID-like string field.
func nsIDIndex(name, field string, unique bool) *memdb.IndexSchema {
	return &memdb.IndexSchema{
		Name:   name,
		Unique: unique,
		Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
			&memdb.StringFieldIndex{Field: "Namespace"},
			&memdb.StringFieldIndex{Field: field},
		}},
	}
}

func idIndex(field string) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: field}}
}

// versionIndexer indexes a job version by namespace, ID and version.
type versionIndexer struct{}

func (versionIndexer) FromObject(obj any) (bool, []byte, error) {
	j, ok := obj.(*sdk.Job)
	if !ok {
		return false, nil, fmt.Errorf("state: job_version holds %T", obj)
	}
	return true, versionKey(j.Namespace, j.ID, j.Version), nil
}

func (versionIndexer) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("state: job_version index takes namespace, id, version")
	}
	ns, _ := args[0].(string)
	id, _ := args[1].(string)
	v, _ := args[2].(uint64)
	return versionKey(ns, id, v), nil
}

func (versionIndexer) PrefixFromArgs(args ...any) ([]byte, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("state: job_version prefix takes namespace, id")
	}
	ns, _ := args[0].(string)
	id, _ := args[1].(string)
	return append(append(append([]byte(ns), 0), id...), 0), nil
}

func versionKey(ns, id string, v uint64) []byte {
	b := append(append(append([]byte(ns), 0), id...), 0)
	for i := 7; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

func schema() *memdb.DBSchema {
	return &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		TableIndex: {Name: TableIndex, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex("Key"),
		}},
		TableNodes: {Name: TableNodes, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex("ID"),
		}},
		TableJobs: {Name: TableJobs, Indexes: map[string]*memdb.IndexSchema{
			"id": nsIDIndex("id", "ID", true),
		}},
		TableJobVersions: {Name: TableJobVersions, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: versionIndexer{}},
		}},
		TableAllocs: {Name: TableAllocs, Indexes: map[string]*memdb.IndexSchema{
			"id":   idIndex("ID"),
			"job":  nsIDIndex("job", "JobID", false),
			"node": {Name: "node", Indexer: &memdb.StringFieldIndex{Field: "NodeID"}},
			"eval": {Name: "eval", AllowMissing: true, Indexer: &memdb.StringFieldIndex{Field: "EvalID"}},
			"deployment": {Name: "deployment", AllowMissing: true,
				Indexer: &memdb.StringFieldIndex{Field: "DeploymentID"}},
		}},
		TableEvals: {Name: TableEvals, Indexes: map[string]*memdb.IndexSchema{
			"id":  idIndex("ID"),
			"job": nsIDIndex("job", "JobID", false),
		}},
		TableDeployments: {Name: TableDeployments, Indexes: map[string]*memdb.IndexSchema{
			"id":  idIndex("ID"),
			"job": nsIDIndex("job", "JobID", false),
		}},
		TableSchedConfig: {Name: TableSchedConfig, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex("ID"),
		}},
		TablePeriodic: {Name: TablePeriodic, Indexes: map[string]*memdb.IndexSchema{
			"id": nsIDIndex("id", "ID", true),
		}},
	}}
}
