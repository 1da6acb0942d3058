package httpapi

import (
	"cmp"
	"crypto/sha256"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/host/acl"
	"github.com/drover-sched/drover/host/services"
	"github.com/drover-sched/drover/host/state"
	"github.com/hashicorp/nomad/api"
)

// Nomad's service discovery endpoints: /v1/services, /v1/service/:name,
// a job's and an allocation's services. Registrations are those of the
// running allocations (services.OfAlloc); their JSON is
// Nomad's ServiceRegistration. A blocking query's index is the
// allocations table's.

func (a *API) registerServices() {
	readJob := inNS(acl.NamespaceCapabilityReadJob)
	a.on(http.MethodGet, "/v1/services", listIn(acl.NamespaceCapabilityReadJob), a.serviceList)
	a.on(http.MethodGet, "/v1/service/{name}", readJob, a.serviceRead)
	a.on(http.MethodDelete, "/v1/service/{name}/{id}", inNS(acl.NamespaceCapabilitySubmitJob), a.serviceDelete)
	a.on(http.MethodGet, "/v1/allocation/{id}/services", ofAlloc(acl.NamespaceCapabilityReadJob), a.allocServices)
}

func registrationOut(r *services.Registration) *api.ServiceRegistration {
	return &api.ServiceRegistration{ID: r.ID, ServiceName: r.ServiceName, Namespace: r.Namespace, NodeID: r.NodeID,
		Datacenter: r.Datacenter, JobID: r.JobID, AllocID: r.AllocID, Tags: r.Tags, Address: r.Address, Port: r.Port,
		CreateIndex: r.CreateIndex, ModifyIndex: r.ModifyIndex}
}

// serviceList serves GET /v1/services: per namespace (the request's, "*"
// for those the token may read jobs in), the services registered there
// and the union of their instances' tags, sorted, as Nomad's.
func (a *API) serviceList(w http.ResponseWriter, r *http.Request) (any, error) {
	ns := requestNamespace(r)
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		tags := map[string]map[string]map[string]bool{} // namespace, service, tag
		for reg := range services.All(snap, ns) {
			if !namespaced(r, reg.Namespace) {
				continue
			}
			if tags[reg.Namespace] == nil {
				tags[reg.Namespace] = map[string]map[string]bool{}
			}
			if tags[reg.Namespace][reg.ServiceName] == nil {
				tags[reg.Namespace][reg.ServiceName] = map[string]bool{}
			}
			for _, t := range reg.Tags {
				tags[reg.Namespace][reg.ServiceName][t] = true
			}
		}
		out := []*api.ServiceRegistrationListStub{}
		for _, n := range slices.Sorted(maps.Keys(tags)) {
			stub := &api.ServiceRegistrationListStub{Namespace: n}
			for _, name := range slices.Sorted(maps.Keys(tags[n])) {
				// [] for a service without tags, as Nomad's.
				t := append([]string{}, slices.Sorted(maps.Keys(tags[n][name]))...)
				stub.Services = append(stub.Services, &api.ServiceRegistrationStub{ServiceName: name, Tags: t})
			}
			out = append(out, stub)
		}
		return out, snap.TableIndex(state.TableAllocs), nil
	})
}

// serviceRead serves GET /v1/service/:name: the service's instances in the
// request's namespace, ordered by ID, with filter and paging, and
// Nomad's ?choose=N|key: N of them picked by rendezvous hashing with key,
// the same N for the same key while the instances stay.
func (a *API) serviceRead(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := listParams(r)
	if err != nil {
		return nil, err
	}
	choose := r.URL.Query().Get("choose")
	ns, name := requestNamespace(r), r.PathValue("name")
	return a.list(w, r, func(snap *state.Snapshot) (*listed, uint64, error) {
		var regs []*api.ServiceRegistration
		for reg := range services.All(snap, ns) {
			if reg.ServiceName == name {
				regs = append(regs, registrationOut(reg))
			}
		}
		slices.SortFunc(regs, func(x, y *api.ServiceRegistration) int { return strings.Compare(x.ID, y.ID) })
		if choose != "" {
			var err error
			if regs, err = chooseServices(regs, choose); err != nil {
				return nil, 0, err
			}
		}
		out, next, err := page(o, regs, func(s *api.ServiceRegistration) string { return s.ID }, nil)
		if err != nil {
			return nil, 0, err
		}
		return &listed{items: out, next: next}, snap.TableIndex(state.TableAllocs), nil
	})
}

// chooseServices picks n of regs by rendezvous hashing with key
// (parameter "n|key"), as Nomad's: each instance ranked by a hash of its
// ID and the key, the n first kept.
func chooseServices(regs []*api.ServiceRegistration, parameter string) ([]*api.ServiceRegistration, error) {
	malformed := errorf(http.StatusBadRequest, "failed to parse choose parameter")
	num, key, ok := strings.Cut(parameter, "|")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 0 || key == "" {
		return nil, malformed
	}
	rank := func(s *api.ServiceRegistration) [32]byte { return sha256.Sum256([]byte(s.ID + "\x00" + key)) }
	ranked := slices.Clone(regs)
	slices.SortStableFunc(ranked, func(x, y *api.ServiceRegistration) int {
		hx, hy := rank(x), rank(y)
		return cmp.Compare(string(hx[:]), string(hy[:]))
	})
	return ranked[:min(n, len(ranked))], nil
}

// serviceDelete serves DELETE /v1/service/:name/:id. A registration here
// is its allocation running, so it is not deleted on its own: it goes when
// its allocation stops. A 404 for one that is not registered.
func (a *API) serviceDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	ns, name, id := requestNamespace(r), r.PathValue("name"), r.PathValue("id")
	for reg := range services.All(a.srv.Store().Snapshot(), ns) {
		if reg.ServiceName == name && reg.ID == id {
			return nil, errorf(http.StatusBadRequest, "service registration %s is allocation %s running: it is removed when the allocation stops (drover alloc stop %s)",
				id, reg.AllocID, reg.AllocID)
		}
	}
	return nil, errorf(http.StatusNotFound, "service registration %q not found", id)
}

// allocServices serves GET /v1/allocation/:id/services.
func (a *API) allocServices(w http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		al := snap.Alloc(id)
		if al == nil {
			return nil, snap.TableIndex(state.TableAllocs), errorf(http.StatusNotFound, "alloc not found")
		}
		return stubsOf(services.OfAlloc(snap, al), registrationOut), al.ModifyIndex, nil
	})
}

// jobServices serves GET /v1/job/:id/services: the instances of the job's
// services, ordered by ID.
func (a *API) jobServices(w http.ResponseWriter, r *http.Request) (any, error) {
	ns, id := requestNamespace(r), r.PathValue("id")
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		out := []*api.ServiceRegistration{}
		for _, al := range snap.AllocsByJob(ns, id) {
			out = append(out, stubsOf(services.OfAlloc(snap, al), registrationOut)...)
		}
		slices.SortFunc(out, func(x, y *api.ServiceRegistration) int { return strings.Compare(x.ID, y.ID) })
		return out, snap.TableIndex(state.TableAllocs), nil
	})
}
