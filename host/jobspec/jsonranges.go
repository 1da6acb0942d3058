package jobspec

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"unicode"

	"github.com/hashicorp/hcl/v2"
)

// apiJSONRanges locates the parts of a job written as Nomad's API JSON, so
// that validation problems point at a line and column there as they do in
// a jobspec: each field is recorded under the Path the job language gives
// it (TaskGroups[i] is `group "<Name>"`, Count is `count`, RestartPolicy is
// `restart`, ...). A field the table does not know is recorded under its
// name in snake case, which is what the language calls most of them; a
// problem in a part not recorded is located at the nearest recorded
// enclosing part. It records nothing for JSON it cannot read: the decoder
// reports that.
func apiJSONRanges(filename string, src []byte) map[string]hcl.Range {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	root, err := readJSONNode(dec, src)
	if err != nil || root.obj == nil {
		return nil
	}
	if job := root.obj["Job"]; job != nil && job.obj != nil {
		root = job
	}
	r := &jsonRanger{filename: filename, src: src, out: map[string]hcl.Range{}}
	r.lines = lineStarts(src)
	r.record(nil, root.start)
	r.object(nil, root)
	return r.out
}

// jsonNode is a JSON value with where it starts, and for objects where
// each key starts.
type jsonNode struct {
	start  int
	obj    map[string]*jsonNode
	keyAt  map[string]int
	arr    []*jsonNode
	str    string
	isText bool
}

// readJSONNode reads one value from dec. The decoder's offset after a
// token is where the next one may start, after white space and a comma or
// colon: the value starts at the first byte that is none of those.
func readJSONNode(dec *json.Decoder, src []byte) (*jsonNode, error) {
	n := &jsonNode{start: skipJSONSpace(src, int(dec.InputOffset()))}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.obj, n.keyAt = map[string]*jsonNode{}, map[string]int{}
			for dec.More() {
				at := skipJSONSpace(src, int(dec.InputOffset()))
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := k.(string)
				v, err := readJSONNode(dec, src)
				if err != nil {
					return nil, err
				}
				n.obj[key], n.keyAt[key] = v, at
			}
		case '[':
			for dec.More() {
				v, err := readJSONNode(dec, src)
				if err != nil {
					return nil, err
				}
				n.arr = append(n.arr, v)
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.str, n.isText = t, true
	}
	return n, nil
}

func skipJSONSpace(src []byte, i int) int {
	for i < len(src) && strings.IndexByte(" \t\r\n,:", src[i]) >= 0 {
		i++
	}
	return i
}

// lineStarts returns the offset of each line of src.
func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, b := range src {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

type jsonRanger struct {
	filename string
	src      []byte
	lines    []int
	out      map[string]hcl.Range
}

// pos turns a byte offset into a position.
func (r *jsonRanger) pos(off int) hcl.Pos {
	line := sort.Search(len(r.lines), func(i int) bool { return r.lines[i] > off }) - 1
	return hcl.Pos{Line: line + 1, Column: off - r.lines[line] + 1, Byte: off}
}

// record locates p at what starts at off: a key with its value when the
// value is a scalar, a key alone when it opens an object or array, an
// array element's opening brace.
func (r *jsonRanger) record(p Path, off int) {
	end := off + 1
	if off < len(r.src) && r.src[off] == '"' {
		for end < len(r.src) && r.src[end] != '"' {
			if r.src[end] == '\\' {
				end++
			}
			end++
		}
		end++ // the closing quote
		if v := skipJSONSpace(r.src, end); v < len(r.src) && r.src[v] != '{' && r.src[v] != '[' {
			end = v
			for end < len(r.src) && strings.IndexByte(",}]\n", r.src[end]) < 0 {
				end++
			}
		}
	}
	end = min(end, len(r.src))
	r.out[p.key()] = hcl.Range{Filename: r.filename, Start: r.pos(off), End: r.pos(end)}
}

// jsonBlocks are the API's arrays of labelled blocks: the block type and
// the field that holds the label.
var jsonBlocks = map[string][2]string{
	"TaskGroups": {"group", "Name"}, "Tasks": {"task", "Name"}, "Devices": {"device", "Name"},
	"ReservedPorts": {"port", "Label"}, "DynamicPorts": {"port", "Label"}, "SpreadTarget": {"target", "Value"},
}

// jsonItems are the API's arrays of unlabelled blocks.
var jsonItems = map[string]string{
	"Constraints": "constraint", "Affinities": "affinity", "Spreads": "spread", "Networks": "network",
	"Templates": "template", "Artifacts": "artifact", "VolumeMounts": "volume_mount", "Services": "service",
	"Checks": "check",
}

// jsonKeyed are the API's objects of labelled blocks, keyed by label.
var jsonKeyed = map[string]string{"Volumes": "volume"}

// jsonNames are the API's field names the job language spells otherwise
// than in snake case.
var jsonNames = map[string]string{
	"RestartPolicy": "restart", "ReschedulePolicy": "reschedule", "ParameterizedJob": "parameterized",
	"MemoryMB": "memory", "MemoryMaxMB": "memory_max", "SizeMB": "size", "DiskMB": "disk", "CPU": "cpu",
	"Operand": "operator", "LTarget": "attribute", "RTarget": "value", "Spec": "cron", "ID": "id",
	"DestPath": "destination", "SourcePath": "source", "EmbeddedTmpl": "data", "GetterSource": "source",
	"GetterOptions": "options", "GetterHeaders": "headers", "GetterMode": "mode", "RelativeDest": "destination",
	"PortLabel": "port",
}

func (r *jsonRanger) object(p Path, n *jsonNode) {
	for key, v := range n.obj {
		switch {
		case jsonBlocks[key] != [2]string{} && v.arr != nil:
			b := jsonBlocks[key]
			for i, e := range v.arr {
				var ep Path
				if l := e.obj[b[1]]; l != nil && l.isText {
					ep = p.Block(b[0], l.str)
				} else {
					ep = p.Item(b[0], i)
				}
				r.element(ep, e)
			}
		case jsonItems[key] != "" && v.arr != nil:
			for i, e := range v.arr {
				r.element(p.Item(jsonItems[key], i), e)
			}
		case jsonKeyed[key] != "" && v.obj != nil:
			for label, e := range v.obj {
				r.record(p.Block(jsonKeyed[key], label), v.keyAt[label])
				if e.obj != nil {
					r.object(p.Block(jsonKeyed[key], label), e)
				}
			}
		default:
			name := jsonNames[key]
			if name == "" {
				name = snakeCase(key)
			}
			fp := p.Attr(name)
			r.record(fp, n.keyAt[key])
			if v.obj != nil {
				r.object(fp, v)
			}
		}
	}
}

func (r *jsonRanger) element(p Path, e *jsonNode) {
	r.record(p, e.start)
	if e.obj != nil {
		r.object(p, e)
	}
}

// snakeCase spells an API field name as the job language does:
// MaxClientDisconnect is max_client_disconnect, HealthCheck health_check.
func snakeCase(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, c := range rs {
		if unicode.IsUpper(c) && i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) ||
			(i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
