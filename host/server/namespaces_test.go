package server_test

import (
	"errors"
	"testing"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// A new server makes namespaces and node pools written objects as it
// becomes leader, before any job is registered: a registration that
// passed the checks before its write (and so carries RefsMustExist) is
// refused as it applies if its namespace is gone, rather than making it
// again.
func TestServer_NamespacesAreWrittenObjectsFromTheStart(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if !s.Store().Snapshot().RefsExplicit() {
		t.Fatal("a new server's namespaces and node pools are still implicit")
	}
	servertest.Namespaces(t, s, "prod")
	if _, err := s.DeleteNamespace("prod"); err != nil {
		t.Fatal(err)
	}
	// What a registration checked before the namespace's deletion applies
	// after it.
	job := servertest.Job("web", sdk.JobTypeService, 1, 100, 64)
	job.Namespace, job.NodePool = "prod", sdk.DefaultNodePool
	_, err := s.Apply(fsm.JobRegisterRequestType, &fsm.JobRegisterRequest{Job: job, RefsMustExist: true})
	if !errors.Is(err, state.ErrNonexistent) {
		t.Fatalf("a registration into a namespace deleted since: %v", err)
	}
	if s.Store().Snapshot().Namespace("prod") != nil {
		t.Fatal("the registration made the deleted namespace again")
	}
}

// In a cluster, the leader makes them written objects once it knows every
// server applies namespace writes, and every server's state says so.
func TestCluster_NamespacesBecomeWrittenObjects(t *testing.T) {
	_, servers, _ := startCluster(t, 3)
	for _, s := range servers {
		servertest.WaitFor(t, s.Config().NodeName+"'s namespaces to be written objects", func() bool {
			return s.Store().Snapshot().RefsExplicit()
		})
	}
}
