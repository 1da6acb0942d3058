package sdk

import "testing"

// TestCSIVolume_CanClaim: whether a volume takes a request, by the access
// mode it is claimed with (the request's own while no claim lives), its
// live claims, the modes it offers and its plugin's health, with Nomad's
// words.
func TestCSIVolume_CanClaim(t *testing.T) {
	const fs, block = CSIAttachmentModeFilesystem, CSIAttachmentModeBlockDevice
	vol := func(claimed string, attach string, caps ...string) *CSIVolume {
		v := &CSIVolume{ID: "data", AccessMode: claimed, AttachmentMode: attach}
		for _, c := range caps {
			v.RequestedCapabilities = append(v.RequestedCapabilities, &CSIVolumeCapability{AccessMode: c, AttachmentMode: fs},
				&CSIVolumeCapability{AccessMode: c, AttachmentMode: block})
		}
		return v
	}
	req := func(mode string, ro bool) CSIVolumeRequest {
		return CSIVolumeRequest{Source: "data", AccessMode: mode, AttachmentMode: fs, ReadOnly: ro}
	}
	snw, mnr, mnsw, mnmw, snr := CSIAccessModeSingleNodeWriter, CSIAccessModeMultiNodeReader, CSIAccessModeMultiNodeSingleWriter,
		CSIAccessModeMultiNodeMultiWriter, CSIAccessModeSingleNodeReader
	for _, tc := range []struct {
		name          string
		v             *CSIVolume
		r             CSIVolumeRequest
		schedulable   bool
		reads, writes int
		want          string
	}{
		{"a free single writer", vol("", "", snw), req(snw, false), true, 0, 0, ""},
		{"a second writer", vol(snw, fs, snw), req(snw, false), true, 0, 1, "CSI volume data has exhausted its available writer claims"},
		{"a reader of a single-node-writer volume in use", vol(snw, fs, snw), req(snw, true), true, 0, 1,
			"CSI volume data is unschedulable or has exhausted its available reader claims"},
		{"the plugin unhealthy, for a write", vol("", "", snw), req(snw, false), false, 0, 0, "CSI volume data is unschedulable or is read-only"},
		{"the plugin unhealthy, for a read", vol("", "", mnr), req(mnr, true), false, 0, 0,
			"CSI volume data is unschedulable or has exhausted its available reader claims"},
		{"many readers", vol(mnr, fs, mnr), req(mnr, true), true, 5, 0, ""},
		{"a single-node reader taken", vol(snr, fs, snr), req(snr, true), true, 1, 0,
			"CSI volume data is unschedulable or has exhausted its available reader claims"},
		{"a write to a reader-only volume", vol("", "", mnr), req(mnr, false), true, 0, 0, "CSI volume data is unschedulable or is read-only"},
		{"a mode not offered", vol("", "", snw), req(mnmw, false), true, 0, 0,
			"CSI volume data does not offer access mode multi-node-multi-writer with attachment mode file-system"},
		{"multi-writers", vol(mnmw, fs, mnmw), req(mnmw, false), true, 0, 3, ""},
		{"a second multi-node single writer", vol(mnsw, fs, mnsw), req(mnsw, false), true, 2, 1, "CSI volume data has exhausted its available writer claims"},
		// The modes of claims that no longer live (a replaced allocation's)
		// do not bind: the request's do.
		{"stale modes without a live claim", vol(mnr, block, mnr, snw), req(snw, false), true, 0, 0, ""},
		{"another attachment mode while claimed", vol(mnr, block, mnr), req(mnr, true), true, 1, 0,
			"CSI volume data cannot change attachment mode of claimed volume"},
	} {
		if got := tc.v.CanClaim(tc.r, tc.schedulable, tc.reads, tc.writes); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCSIVolume_ReleaseClaim: the volume's modes are its first claim's;
// released, they become the remaining claims' (the lowest allocation
// ID's), or none once no claim is left (unless the volume was registered
// with those modes alone).
func TestCSIVolume_ReleaseClaim(t *testing.T) {
	v := &CSIVolume{ID: "data", RequestedCapabilities: []*CSIVolumeCapability{{AccessMode: CSIAccessModeSingleNodeWriter}}}
	old := &CSIClaim{AllocationID: "a1", Mode: CSIClaimWrite, AccessMode: CSIAccessModeSingleNodeWriter, AttachmentMode: CSIAttachmentModeFilesystem}
	repl := &CSIClaim{AllocationID: "b2", Mode: CSIClaimWrite, AccessMode: CSIAccessModeMultiNodeSingleWriter, AttachmentMode: CSIAttachmentModeBlockDevice}
	v.AddClaim(old)
	v.AddClaim(repl)
	if v.AccessMode != CSIAccessModeSingleNodeWriter || v.AttachmentMode != CSIAttachmentModeFilesystem {
		t.Fatalf("modes after two claims: %s %s", v.AccessMode, v.AttachmentMode)
	}
	v.ReleaseClaim("a1")
	if v.AccessMode != CSIAccessModeMultiNodeSingleWriter || v.AttachmentMode != CSIAttachmentModeBlockDevice {
		t.Fatalf("modes after the first claim went: %s %s", v.AccessMode, v.AttachmentMode)
	}
	v.ReleaseClaim("b2")
	if v.AccessMode != "" || v.AttachmentMode != "" || v.InUse(nil) {
		t.Fatalf("after the last claim: %+v", v)
	}
	legacy := &CSIVolume{ID: "old", AccessMode: CSIAccessModeSingleNodeWriter, AttachmentMode: CSIAttachmentModeFilesystem}
	legacy.AddClaim(old)
	legacy.ReleaseClaim("a1")
	if legacy.AccessMode != CSIAccessModeSingleNodeWriter {
		t.Fatal("a volume registered with its modes alone forgot them")
	}
}
