package jobspec

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

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
		if deref(t.SourcePath) == "" && deref(t.EmbeddedTmpl) == "" {
			c.add(tp, "a template needs something to render: data, or a source file")
		}
		if deref(t.DestPath) == "" {
			c.add(tp.Attr("destination"), "a template needs a destination to render to")
		}
	}
}

// envReference matches a reference to a variable of the task's environment
// (`${NOMAD_META_sum}`), which the client fills in after validation.
var envReference = regexp.MustCompile(`\$\{[a-zA-Z0-9_.\-]+\}`)

// digestBytes returns the length of a digest of a checksum type go-getter
// verifies, and whether it verifies that type.
func digestBytes(typ string) (int, bool) {
	switch typ {
	case "md5":
		return 16, true
	case "sha1":
		return 20, true
	case "sha256":
		return 32, true
	case "sha512":
		return 64, true
	}
	return 0, false
}

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
	want, ok := digestBytes(typ)
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

// csiPlugin checks a task's csi_plugin block as Nomad's Task.Validate: a
// plugin needs an ID and one of the three types.
func (c *checker) csiPlugin(p Path, o sdk.Opaque) {
	if o == nil {
		return
	}
	cp, err := readOpaque[api.TaskCSIPluginConfig](o)
	if err != nil {
		c.add(p, "cannot be read as a CSI plugin: %v", err)
		return
	}
	if cp.ID == "" {
		c.add(p.Attr("id"), "a CSI plugin needs an id")
	}
	switch cp.Type {
	case api.CSIPluginTypeNode, api.CSIPluginTypeController, api.CSIPluginTypeMonolith:
	default:
		c.add(p.Attr("type"), "%q is not node, controller or monolith", cp.Type)
	}
}

// minCheckPeriod is the shortest interval and timeout of a service check
// (Consul's minimum, which Nomad applies to both providers).
const minCheckPeriod = time.Second

// checkTypes returns the check types a service provider runs, or nil for
// a provider it does not know.
func checkTypes(provider string) []string {
	switch provider {
	case "consul":
		return []string{"grpc", "http", "script", "tcp"}
	case "nomad":
		return []string{"http", "tcp"}
	}
	return nil
}

// services checks a group's or a task's services. Of a task's (t not nil),
// it also checks that check names are unique within a service and that
// ports name a port of the group's or the task's network.
func (c *checker) services(tg *sdk.TaskGroup, t *sdk.Task, p Path, ss []sdk.Opaque) {
	var labels map[string]bool
	if t != nil {
		labels = portLabels(tg, t)
	}
	for i, o := range ss {
		sp := p.Item("service", i)
		s, err := readOpaque[api.Service](o)
		if err != nil {
			c.add(sp, "cannot be read as a service: %v", err)
			continue
		}
		if t != nil && s.PortLabel != "" && !labels[s.PortLabel] {
			if _, err := strconv.Atoi(s.PortLabel); err != nil || s.AddressMode != "driver" {
				c.add(sp.Attr("port"), "%q is not a port label of the group's network or the task's", s.PortLabel)
			}
		}
		names := map[string]int{}
		for j := range s.Checks {
			ch := &s.Checks[j]
			cp := sp.Item("check", j)
			c.check(cp, s, ch)
			if t == nil {
				continue
			}
			// An unnamed check is named after its service when the job is
			// registered.
			name := cmpOr(ch.Name, fmt.Sprintf("service: %q check", s.Name))
			if prev, ok := names[name]; ok {
				c.add(cp.Attr("name"), "check %d has the same name, %q, as check %d of this service", j+1, name, prev+1)
			} else {
				names[name] = j
			}
			c.checkPort(cp, s, ch, labels)
		}
	}
}

// requiresPort reports whether a check of type typ connects to a port.
// The type is matched as written: `HTTP` is an http check that needs no
// port, as in Nomad.
func requiresPort(typ string) bool { return typ == "grpc" || typ == "http" || typ == "tcp" }

// check checks one check of service s for what its type requires.
func (c *checker) check(p Path, s *api.Service, ch *api.ServiceCheck) {
	if requiresPort(ch.Type) && ch.PortLabel == "" && s.PortLabel == "" {
		c.add(p.Attr("port"), "a %s check needs a port; neither it nor its service has one", ch.Type)
	}
	typ := strings.ToLower(ch.Type)
	if allowed := checkTypes(s.Provider); allowed != nil && !slices.Contains(allowed, typ) {
		if typ == "" {
			c.add(p.Attr("type"), "a check type is required (%s for %s services)", strings.Join(allowed, ", "), s.Provider)
		} else {
			c.add(p.Attr("type"), "%q is not a check type of %s services (%s)", ch.Type, s.Provider, strings.Join(allowed, ", "))
		}
	}
	switch typ {
	case "http":
		if ch.Path == "" {
			c.add(p.Attr("path"), "an http check needs a path")
		} else if u, err := url.Parse(ch.Path); err != nil {
			c.add(p.Attr("path"), "%q is not a URL path: %v", ch.Path, err)
		} else if u.IsAbs() {
			c.add(p.Attr("path"), "%q must be a path on the service, without a scheme", ch.Path)
		}
	case "script":
		if ch.Command == "" {
			c.add(p.Attr("command"), "a script check needs a command")
		}
	}
	if ch.Interval < minCheckPeriod {
		c.add(p.Attr("interval"), "an interval of at least %s is required, not %s", minCheckPeriod, ch.Interval)
	}
	if ch.Timeout < minCheckPeriod {
		c.add(p.Attr("timeout"), "a timeout of at least %s is required, not %s", minCheckPeriod, ch.Timeout)
	}
}

// checkPort checks that a task service's check that connects to a port
// names one of the task's ports, or a port number with address_mode =
// "driver".
func (c *checker) checkPort(p Path, s *api.Service, ch *api.ServiceCheck, labels map[string]bool) {
	if !requiresPort(ch.Type) {
		return
	}
	port, pp := ch.PortLabel, p.Attr("port")
	inherited := port == ""
	if inherited {
		port, pp = s.PortLabel, p
	}
	if port == "" {
		return // reported by check
	}
	n, err := strconv.Atoi(port)
	switch {
	case err == nil && ch.AddressMode == "driver":
		if n <= 0 {
			c.add(pp, "%d is not a port", n)
		}
	case err == nil:
		c.add(pp, "a port number (%d) is only for checks with address_mode = \"driver\"; name a port label", n)
	case !labels[port] && !inherited: // the service's own port is reported with the service
		c.add(pp, "%q is not a port label of the group's network or the task's", port)
	}
}

// portLabels returns the port labels a task's services may name: those of
// the group's first network and of the task's own networks.
func portLabels(tg *sdk.TaskGroup, t *sdk.Task) map[string]bool {
	labels := map[string]bool{}
	add := func(n *sdk.NetworkResource) {
		for _, port := range append(append([]sdk.Port{}, n.ReservedPorts...), n.DynamicPorts...) {
			labels[port.Label] = true
		}
	}
	if len(tg.Networks) > 0 {
		add(tg.Networks[0])
	}
	if t.Resources != nil {
		for _, n := range t.Resources.Networks {
			add(n)
		}
	}
	return labels
}
