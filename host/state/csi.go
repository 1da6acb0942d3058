package state

import (
	"fmt"
	"maps"
	"slices"

	"github.com/drover-sched/drover/sdk"
)

// CSIVolume returns a CSI volume by namespace and ID, nil if there is none.
func (r reader) CSIVolume(ns, id string) *sdk.CSIVolume {
	return first[sdk.CSIVolume](r, TableCSIVolumes, "id", ns, id)
}

// CSIVolumes returns the CSI volumes of a namespace ("*": of every
// namespace), ordered by namespace and ID.
func (r reader) CSIVolumes(ns string) []*sdk.CSIVolume {
	if ns == "*" {
		return all[sdk.CSIVolume](r, TableCSIVolumes, "id")
	}
	return all[sdk.CSIVolume](r, TableCSIVolumes, "id_prefix", ns, "")
}

// CSIVolumesByPlugin returns the volumes of a CSI plugin, in every
// namespace.
func (r reader) CSIVolumesByPlugin(pluginID string) []*sdk.CSIVolume {
	return all[sdk.CSIVolume](r, TableCSIVolumes, "plugin", pluginID)
}

// CSIClaimLive reports whether the allocation holding a claim still uses
// its volume: it exists and has not finished on its node. (A placement's
// checks also let a claim of its own job's allocation being stopped pass
// to it: sdk/stack and sdk/verify.)
func (r reader) CSIClaimLive(allocID string) bool {
	a := r.Alloc(allocID)
	return a != nil && !a.ClientTerminalStatus()
}

// RegisterCSIVolumes registers CSI volumes, as Nomad's CSIVolumeRegister:
// a new one, or one already registered whose claims and identity are kept
// (its plugin cannot change, nor, while it is in use, its access and
// attachment modes or its capabilities drop the mode it is used with).
func (t *Txn) RegisterCSIVolumes(vols []*sdk.CSIVolume) error {
	for _, v := range vols {
		if v == nil || v.ID == "" || v.Namespace == "" {
			return fmt.Errorf("state: CSI volume without namespace or ID")
		}
		if !t.restore && t.RefsExplicit() && t.Namespace(v.Namespace) == nil {
			return Refuse(ErrNonexistent, "volume %q is in nonexistent namespace %q", v.ID, v.Namespace)
		}
		c := *v
		if old := t.CSIVolume(v.Namespace, v.ID); old != nil && !t.restore {
			if old.PluginID != v.PluginID {
				return Refuse(ErrInUse, "volume %q: plugin ID cannot be changed (registered with %q)", v.ID, old.PluginID)
			}
			if err := checkClaimedModes(old, &c, t.CSIClaimLive); err != nil {
				return err
			}
			c.ReadClaims, c.WriteClaims = old.ReadClaims, old.WriteClaims
			c.CreateIndex, c.CreateTime = old.CreateIndex, old.CreateTime
			if old.InUse(t.CSIClaimLive) {
				c.AccessMode, c.AttachmentMode = old.AccessMode, old.AttachmentMode
			}
		} else if !t.restore {
			c.ReadClaims, c.WriteClaims = nil, nil
			c.CreateIndex = t.index
		}
		if !t.restore {
			c.ModifyIndex = t.index
		}
		t.record(KindCSIVolume, jobKey(c.Namespace, c.ID))
		if err := t.insert(TableCSIVolumes, &c); err != nil {
			return err
		}
	}
	return nil
}

// checkClaimedModes refuses a registration that would take away the modes
// a volume in use is claimed with.
func checkClaimedModes(old, nv *sdk.CSIVolume, live sdk.CSIClaimLive) error {
	for _, claims := range []map[string]*sdk.CSIClaim{old.ReadClaims, old.WriteClaims} {
		for _, id := range slices.Sorted(maps.Keys(claims)) {
			c := claims[id]
			if live(id) && !nv.Capable(c.AccessMode, c.AttachmentMode) {
				return Refuse(ErrInUse, "volume %q is in use with access mode %q and attachment mode %q, "+
					"which its new capabilities do not offer", old.ID, c.AccessMode, c.AttachmentMode)
			}
		}
	}
	return nil
}

// DeregisterCSIVolumes removes CSI volumes of a namespace, as Nomad's
// CSIVolumeDeregister: refused (ErrInUse) for a volume a live allocation
// claims; an unknown ID is ErrNotFound. Any refusal removes none.
func (t *Txn) DeregisterCSIVolumes(ns string, ids []string) error {
	for _, id := range ids {
		old := t.CSIVolume(ns, id)
		if old == nil {
			return fmt.Errorf("%w: volume not found: %s", ErrNotFound, id)
		}
		if old.InUse(t.CSIClaimLive) {
			return Refuse(ErrInUse, "volume in use: %s", id)
		}
		t.record(KindCSIVolume, jobKey(ns, id))
		if err := t.delete(TableCSIVolumes, old); err != nil {
			return err
		}
	}
	return nil
}

// DetachCSIVolume releases the claims a node's allocations hold on a
// volume, as Nomad's `volume detach` does once they are finished: refused
// (ErrInUse) while one of them is still live on the node.
func (t *Txn) DetachCSIVolume(ns, id, nodeID string) error {
	old := t.CSIVolume(ns, id)
	if old == nil {
		return fmt.Errorf("%w: volume not found: %s", ErrNotFound, id)
	}
	var release []string
	for _, claims := range []map[string]*sdk.CSIClaim{old.ReadClaims, old.WriteClaims} {
		for allocID, c := range claims {
			if c.NodeID == nodeID {
				release = append(release, allocID)
			}
		}
	}
	slices.Sort(release) // the refusal names the same allocation on every server
	for _, allocID := range release {
		if t.CSIClaimLive(allocID) {
			return Refuse(ErrInUse, "volume %q is in use by allocation %s on node %s", id, allocID, nodeID)
		}
	}
	return t.changeClaims(old, func(v *sdk.CSIVolume) {
		for _, allocID := range release {
			v.ReleaseClaim(allocID)
		}
	})
}

// claimCSIVolumes records the claims a newly placed allocation makes on
// the CSI volumes its group requests. The plan applier has checked them
// against the state the plan commits over; a volume deregistered since is
// skipped (the allocation will not find it on its node).
func (t *Txn) claimCSIVolumes(a *sdk.Allocation) error {
	if a.ClientTerminalStatus() {
		return nil
	}
	for _, r := range sdk.CSIAllocRequests(a.Job, a) {
		v := t.CSIVolume(a.Namespace, r.Source)
		if v == nil || v.Claim(a.ID) != nil {
			continue
		}
		if err := t.changeClaims(v, func(c *sdk.CSIVolume) { c.AddClaim(r.Claim(a)) }); err != nil {
			return err
		}
	}
	return nil
}

// releaseCSIClaims drops the claims of an allocation that finished on its
// node or was collected (the volume's modes become those of the claims
// left: sdk.CSIVolume.ReleaseClaim).
func (t *Txn) releaseCSIClaims(a *sdk.Allocation) error {
	for _, r := range sdk.CSIAllocRequests(a.Job, a) {
		v := t.CSIVolume(a.Namespace, r.Source)
		if v == nil || v.Claim(a.ID) == nil {
			continue
		}
		if err := t.changeClaims(v, func(c *sdk.CSIVolume) { c.ReleaseClaim(a.ID) }); err != nil {
			return err
		}
	}
	return nil
}

// changeClaims writes a copy of the volume with its claim maps copied and
// changed by change.
func (t *Txn) changeClaims(old *sdk.CSIVolume, change func(*sdk.CSIVolume)) error {
	c := *old
	c.ReadClaims, c.WriteClaims = maps.Clone(old.ReadClaims), maps.Clone(old.WriteClaims)
	if c.ReadClaims == nil {
		c.ReadClaims = map[string]*sdk.CSIClaim{}
	}
	if c.WriteClaims == nil {
		c.WriteClaims = map[string]*sdk.CSIClaim{}
	}
	change(&c)
	if len(c.ReadClaims) == 0 {
		c.ReadClaims = nil
	}
	if len(c.WriteClaims) == 0 {
		c.WriteClaims = nil
	}
	c.ModifyIndex = t.index
	t.record(KindCSIVolume, jobKey(c.Namespace, c.ID))
	return t.insert(TableCSIVolumes, &c)
}
