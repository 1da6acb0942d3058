package server

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/sdk"
)

// CSI volumes are registered by an operator, as Nomad's: Drover calls no
// controller plugin to create, validate or delete one, it records that
// the volume exists and which plugin serves it. What the endpoints check
// here against one snapshot (the plugin, the namespace, what an update
// may change) the entry checks again as it applies where it matters to
// the claims (state.Txn.RegisterCSIVolumes): the plugin is fixed, and a
// volume in use keeps the modes it is claimed with.

// RegisterCSIVolumes registers CSI volumes, or updates registered ones,
// checked as Nomad's CSIVolume.Register checks them: an ID, a plugin, a
// namespace that exists, at least one capability of a known access and
// attachment mode (a volume given the legacy AccessMode and
// AttachmentMode instead gets them as its one capability), and a plugin
// some node runs, whose provider the volume records. An update keeps
// what Nomad keeps of a registered volume (its name, external ID, clone
// and snapshot IDs, topologies and parameters cannot change; its
// capabilities, mount options, secrets and context can). A volume's
// AccessMode and AttachmentMode are those of its claims, set by the first
// (state), never by a registration. It returns the write's index; none is
// written if any volume is refused.
func (s *Server) RegisterCSIVolumes(vols []*sdk.CSIVolume) (uint64, error) {
	if len(vols) == 0 {
		return 0, badRequest(errors.New("missing volume definition"))
	}
	snap := s.store.Snapshot()
	plugins := sdk.CSIPlugins(snap.Nodes())
	now := s.now().UnixNano()
	out := make([]*sdk.CSIVolume, 0, len(vols))
	for _, in := range vols {
		if in == nil {
			return 0, badRequest(errors.New("missing volume definition"))
		}
		v := *in
		if len(v.RequestedCapabilities) == 0 && v.AccessMode != "" && v.AttachmentMode != "" {
			v.RequestedCapabilities = []*sdk.CSIVolumeCapability{{AccessMode: v.AccessMode, AttachmentMode: v.AttachmentMode}}
		}
		v.AccessMode, v.AttachmentMode = "", ""
		if err := validateCSIVolume(&v); err != nil {
			return 0, badRequest(err)
		}
		if snap.Namespace(v.Namespace) == nil {
			return 0, badRequest(fmt.Errorf("volume %q is in nonexistent namespace %q", v.ID, v.Namespace))
		}
		p := plugins[v.PluginID]
		if p == nil {
			return 0, badRequest(fmt.Errorf("no CSI plugin named: %s could be found", v.PluginID))
		}
		if old := snap.CSIVolume(v.Namespace, v.ID); old != nil {
			merged, err := mergeCSIVolume(old, &v)
			if err != nil {
				return 0, badRequest(err)
			}
			v = *merged
		} else {
			v.ReadClaims, v.WriteClaims = nil, nil
		}
		v.Provider, v.ProviderVersion = p.Provider, p.Version
		v.CreateTime, v.ModifyTime = now, now // the state keeps a registered volume's CreateTime
		out = append(out, &v)
	}
	return s.Apply(fsm.CSIVolumeRegisterRequestType, &fsm.CSIVolumeRegisterRequest{Volumes: out})
}

// redacted is what the API shows of a volume's mount flags.
const redacted = "[REDACTED]"

// validateCSIVolume checks a volume as Nomad's CSIVolume.Validate does,
// and its capabilities' modes; the problems are reported together.
func validateCSIVolume(v *sdk.CSIVolume) error {
	var errs []string
	if v.ID == "" {
		errs = append(errs, "missing volume id")
	}
	if v.PluginID == "" {
		errs = append(errs, "missing plugin id")
	}
	if v.Namespace == "" {
		errs = append(errs, "missing namespace")
	}
	if v.SnapshotID != "" && v.CloneID != "" {
		errs = append(errs, "only one of snapshot_id and clone_id is allowed")
	}
	if len(v.RequestedCapabilities) == 0 {
		errs = append(errs, "must include at least one capability block")
	}
	for i, c := range v.RequestedCapabilities {
		switch {
		case c == nil:
			errs = append(errs, fmt.Sprintf("capability %d is empty", i+1))
			continue
		case !slices.Contains(sdk.CSIAccessModes, c.AccessMode):
			errs = append(errs, fmt.Sprintf("capability %d has invalid access mode %q (one of: %s)",
				i+1, c.AccessMode, strings.Join(sdk.CSIAccessModes, ", ")))
		}
		if c.AttachmentMode != sdk.CSIAttachmentModeFilesystem && c.AttachmentMode != sdk.CSIAttachmentModeBlockDevice {
			errs = append(errs, fmt.Sprintf("capability %d has invalid attachment mode %q (one of: %s, %s)",
				i+1, c.AttachmentMode, sdk.CSIAttachmentModeFilesystem, sdk.CSIAttachmentModeBlockDevice))
		}
	}
	if m := v.MountOptions; m != nil && slices.Contains(m.MountFlags, redacted) {
		// What the API shows of a volume's flags, read back as a
		// specification: the flags would be lost.
		errs = append(errs, fmt.Sprintf("mount flag %q is what the API shows of a volume's mount flags: give the flags themselves", redacted))
	}
	for _, t := range v.Topologies {
		if t == nil || len(t.Segments) == 0 {
			errs = append(errs, "required topology is missing segments field")
			break
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("validation: %s", strings.Join(errs, ", "))
	}
	return nil
}

// mergeCSIVolume is the registered volume old updated by nv, as Nomad's
// CSIVolume.Merge makes it: the fields that name the storage cannot
// change (nv may leave them out), the capacity range must still hold the
// volume's capacity; capabilities, mount options, secrets and context are
// nv's. Topologies are set when a volume is first registered: nv may
// repeat them, not change them.
func mergeCSIVolume(old, nv *sdk.CSIVolume) (*sdk.CSIVolume, error) {
	var errs []string
	changed := func(was, now, what string) {
		if now != "" && now != was {
			errs = append(errs, what+" cannot be updated")
		}
	}
	changed(old.Name, nv.Name, "volume name")
	changed(old.ExternalID, nv.ExternalID, "volume external ID")
	changed(old.CloneID, nv.CloneID, "volume clone ID")
	changed(old.SnapshotID, nv.SnapshotID, "volume snapshot ID")
	if old.PluginID != nv.PluginID {
		errs = append(errs, "volume plugin ID cannot be updated")
	}
	v := *old
	if old.Capacity != 0 {
		if nv.RequestedCapacityMax < old.Capacity || nv.RequestedCapacityMin > old.Capacity {
			errs = append(errs, "volume requested capacity update was not compatible with existing capacity")
		} else {
			v.RequestedCapacityMin, v.RequestedCapacityMax = nv.RequestedCapacityMin, nv.RequestedCapacityMax
		}
	}
	if len(nv.Topologies) > 0 && !sameTopologies(old.Topologies, nv.Topologies) {
		errs = append(errs, "volume topology request update was not compatible with existing topology")
	}
	if len(nv.Parameters) != 0 && !maps.Equal(old.Parameters, nv.Parameters) {
		errs = append(errs, "volume parameters cannot be updated")
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("volume %q: %s", old.ID, strings.Join(errs, ", "))
	}
	v.RequestedCapabilities = nv.RequestedCapabilities
	v.MountOptions, v.Secrets, v.Context = nv.MountOptions, nv.Secrets, nv.Context
	v.AccessMode, v.AttachmentMode = nv.AccessMode, nv.AttachmentMode
	return &v, nil
}

// sameTopologies reports whether a and b hold the same topologies, in
// any order.
func sameTopologies(a, b []*sdk.CSITopology) bool {
	contains := func(ts []*sdk.CSITopology, t *sdk.CSITopology) bool { return slices.ContainsFunc(ts, t.Equal) }
	for _, t := range a {
		if !contains(b, t) {
			return false
		}
	}
	for _, t := range b {
		if !contains(a, t) {
			return false
		}
	}
	return true
}

// DeregisterCSIVolume removes a CSI volume from namespace ns: one that
// does not exist is ErrNotFound before anything is written; one a live
// allocation claims is refused as the entry applies (state.ErrInUse). The
// storage itself is left alone, as Nomad's deregister leaves it.
func (s *Server) DeregisterCSIVolume(ns, id string) (uint64, error) {
	if id == "" {
		return 0, badRequest(errors.New("missing volume IDs"))
	}
	if s.store.Snapshot().CSIVolume(ns, id) == nil {
		return 0, fmt.Errorf("%w: volume not found: %s", ErrNotFound, id)
	}
	return s.Apply(fsm.CSIVolumeDeregisterRequestType, &fsm.CSIVolumeDeregisterRequest{Namespace: ns, IDs: []string{id}})
}

// DetachCSIVolume releases the claims the allocations on node nodeID hold
// on a CSI volume of namespace ns, as Nomad's volume detach does for a
// node that can no longer release them itself: refused while one of them
// still runs on the node (state.ErrInUse); a volume that does not exist
// is ErrNotFound before anything is written. A node that holds no claim
// on the volume has nothing to release.
func (s *Server) DetachCSIVolume(ns, id, nodeID string) (uint64, error) {
	switch {
	case id == "":
		return 0, badRequest(errors.New("missing volume ID"))
	case nodeID == "":
		return 0, badRequest(errors.New("detach requires node ID"))
	}
	if s.store.Snapshot().CSIVolume(ns, id) == nil {
		return 0, fmt.Errorf("%w: volume not found: %s", ErrNotFound, id)
	}
	return s.Apply(fsm.CSIVolumeDetachRequestType, &fsm.CSIVolumeDetachRequest{Namespace: ns, ID: id, NodeID: nodeID})
}
