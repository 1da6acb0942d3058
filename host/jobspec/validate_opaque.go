package jobspec

import (
	"encoding/hex"
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/nomad/api"
)

// The blocks Drover keeps opaque (templates, artifacts, volumes, services)
// are not interpreted by its schedulers, but Nomad's server refuses some
// of them at submission, and a task run with them would fail on its node.
// These checks read such a block as Nomad's API type and refuse what Nomad
// refuses; what they do not check is listed in docs/api.md.

// readOpaque reads a block kept in Nomad's API JSON form as the API type T.
func readOpaque[T any](o sdk.Opaque) (*T, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, err
	}
	return v, nil
}

func (c *checker) templates(p Path, ts []sdk.Opaque) {
	for i, o := range ts {
		tp := p.Item("template", i)
		t, err := readOpaque[api.Template](o)
		if err != nil {
			c.add(tp, "cannot be read as a template: %v", err)
			continue
		}
		if deref(t.DestPath) == "" {
			c.add(tp.Attr("destination"), "a template needs a destination to render to")
		}
	}
}

// envReference matches a reference to a variable of the task's environment
// (`${NOMAD_META_sum}`), which the client fills in after validation.
var envReference = regexp.MustCompile(`\$\{[a-zA-Z0-9_.\-]+\}`)

// checksumBytes is the length of a digest of each checksum type go-getter
// verifies.
var checksumBytes = map[string]int{"md5": 16, "sha1": 20, "sha256": 32, "sha512": 64}

func (c *checker) artifacts(p Path, as []sdk.Opaque) {
	for i, o := range as {
		ap := p.Item("artifact", i)
		a, err := readOpaque[api.TaskArtifact](o)
		if err != nil {
			c.add(ap, "cannot be read as an artifact: %v", err)
			continue
		}
		if deref(a.GetterSource) == "" {
			c.add(ap.Attr("source"), "an artifact needs a source to fetch")
		}
		if sum, ok := a.GetterOptions["checksum"]; ok {
			c.checksum(ap.Attr("options").Attr("checksum"), sum)
		}
	}
}

// checksum checks an artifact's checksum option, `type:hex digest`, unless
// it refers to the task's environment.
func (c *checker) checksum(p Path, sum string) {
	if envReference.MatchString(sum) {
		return
	}
	sum = strings.TrimSpace(sum)
	if sum == "" {
		c.add(p, "must not be empty")
		return
	}
	parts := strings.Split(sum, ":")
	if len(parts) != 2 {
		c.add(p, "%q is not a checksum; write it as type:digest (sha256:...)", sum)
		return
	}
	typ, digest := parts[0], parts[1]
	raw, err := hex.DecodeString(digest)
	if err != nil {
		c.add(p, "the digest %q is not hexadecimal: %v", digest, err)
		return
	}
	want, ok := checksumBytes[typ]
	switch {
	case !ok:
		c.add(p, "%q is not a checksum type (md5, sha1, sha256 or sha512)", typ)
	case len(raw) != want:
		c.add(p, "the %s digest %q is %d hex digits long, not %d", typ, digest, len(digest), 2*want)
	}
}

// volumes checks the group's volume requests.
func (c *checker) volumes(tg *sdk.TaskGroup, p Path) {
	names := make([]string, 0, len(tg.Volumes))
	for name := range tg.Volumes {
		names = append(names, name)
	}
	sort.Strings(names)
	canaries := 0
	if tg.Update != nil {
		canaries = tg.Update.Canary
	}
	for _, name := range names {
		vp := p.Block("volume", name)
		v, err := readOpaque[api.VolumeRequest](tg.Volumes[name])
		if err != nil {
			c.add(vp, "cannot be read as a volume: %v", err)
			continue
		}
		if v.Type == "csi" {
			if v.AccessMode == "" {
				c.add(vp.Attr("access_mode"), "a CSI volume needs an access mode (such as single-node-writer)")
			}
			if v.AttachmentMode == "" {
				c.add(vp.Attr("attachment_mode"), "a CSI volume needs an attachment mode (file-system or block-device)")
			}
		}
		if v.PerAlloc && canaries > 0 {
			c.add(vp.Attr("per_alloc"), "a per-allocation volume cannot be used with canaries (the group's update has canary = %d)", canaries)
		}
	}
}

func (c *checker) volumeMounts(tg *sdk.TaskGroup, p Path, ms []sdk.Opaque) {
	for i, o := range ms {
		mp := p.Item("volume_mount", i)
		m, err := readOpaque[api.VolumeMount](o)
		if err != nil {
			c.add(mp, "cannot be read as a volume mount: %v", err)
			continue
		}
		// A mount without a volume attribute is dropped when the job is
		// registered; one that names the empty string is refused.
		switch name := deref(m.Volume); {
		case m.Volume == nil:
		case name == "":
			c.add(mp.Attr("volume"), "a volume mount needs the name of one of the group's volumes")
		case tg.Volumes[name] == nil:
			c.add(mp.Attr("volume"), "the group declares no volume %q", name)
		}
	}
}
