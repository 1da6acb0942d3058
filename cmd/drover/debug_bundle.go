package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
)

// bundle is the directory operator debug writes into, and the list of the
// files it holds (index.json, as Nomad's). Its methods may be called from
// several goroutines: the log, the event stream, the profiles and the
// state are captured at once, each into files of its own.
type bundle struct {
	dir string
	// secrets are removed from every text file written (the CLI's own
	// token; the API never answers it, but a log line might hold it).
	secrets []string

	mu    sync.Mutex
	files []string
	// errors counts the answers recorded as errors.
	errors int
}

// bundlePerm and bundleDirPerm keep a bundle's files, and the archive's
// once extracted, to the user who made them: the state, logs and profiles
// of a cluster are no one else's to read.
const (
	bundlePerm    fs.FileMode = 0o600
	bundleDirPerm fs.FileMode = 0o700
)

// redacted is what a secret is replaced with.
const redacted = "<redacted>"

// secretKeys are the JSON fields whose values a bundle never holds,
// wherever they appear: ACL tokens' and nodes' secret IDs, OIDC client
// secrets, and the Vault and Consul tokens a job may carry. The API leaves
// them out of what operator debug reads already; this is the second line.
var secretKeys = []string{"SecretID", "OIDCClientSecret", "VaultToken", "ConsulToken"}

// errorFile is what a file holds in place of an answer that was an error,
// as in Nomad's bundles.
type errorFile struct {
	Error string
}

// path is rel's path on disk; rel is slash-separated, made of names
// cleanName made safe.
func (b *bundle) path(rel string) string { return filepath.Join(b.dir, filepath.FromSlash(rel)) }

// create creates the file rel and lists it in the index; writes to it
// have the secrets removed.
func (b *bundle) create(rel string) (io.WriteCloser, error) {
	f, err := b.open(rel)
	if err != nil {
		return nil, err
	}
	return &redactingWriter{f: f, secrets: b.secrets}, nil
}

// open creates the file rel, readable by its user alone (see
// bundlePerm), and lists it in the index.
func (b *bundle) open(rel string) (*os.File, error) {
	p := b.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), bundleDirPerm); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, bundlePerm)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.files = append(b.files, rel)
	b.mu.Unlock()
	return f, nil
}

// write writes a text file, without the secrets.
func (b *bundle) write(rel string, data []byte) error {
	w, err := b.create(rel)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return errors.Join(err, w.Close())
}

// writeBinary writes a file as it is (a profile: gzipped protocol
// buffers, which no text replacement may touch).
func (b *bundle) writeBinary(rel string, data []byte) error {
	f, err := b.open(rel)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// writeJSON writes v as JSON.
func (b *bundle) writeJSON(rel string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return b.write(rel, redactJSON(buf.Bytes()))
}

// writeError records err in rel, in place of the answer it stands for.
func (b *bundle) writeError(rel string, err error) error {
	b.mu.Lock()
	b.errors++
	b.mu.Unlock()
	return b.writeJSON(rel, errorFile{Error: err.Error()})
}

// answer writes an API answer to rel: its JSON without secrets (a list
// one element a line, as Nomad's bundles write lists), or the error it
// got instead.
func (b *bundle) answer(rel string, raw []byte, err error, list bool) error {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusTooManyRequests && json.Valid(apiErr.Body) {
		// The autopilot's health of an unhealthy cluster: a 429 whose body
		// is the answer.
		raw, err = apiErr.Body, nil
	}
	if err != nil {
		return b.writeError(rel, err)
	}
	raw = redactJSON(raw)
	if list {
		raw = jsonLines(raw)
	}
	return b.write(rel, raw)
}

// errorCount is how many answers were recorded as errors.
func (b *bundle) errorCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.errors
}

// manifest is the list of the files written, sorted.
func (b *bundle) manifest() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	files := slices.Clone(b.files)
	slices.Sort(files)
	return slices.Compact(files)
}

// writeIndex writes index.json (the files, as a JSON list) and
// index.html (links to them), as Nomad's bundles have.
func (b *bundle) writeIndex(title string) error {
	files := b.manifest()
	raw, err := json.Marshal(files)
	if err != nil {
		return err
	}
	if err := os.WriteFile(b.path("index.json"), append(raw, '\n'), bundlePerm); err != nil {
		return err
	}
	var page bytes.Buffer
	if err := indexPage.Execute(&page, struct {
		Title string
		Files []string
	}{title, files}); err != nil {
		return err
	}
	return os.WriteFile(b.path("index.html"), page.Bytes(), bundlePerm)
}

var indexPage = template.Must(template.New("index").Parse(`<html><head><title>{{.Title}}</title></head>
<body><h1>{{.Title}}</h1>
<ul>
{{range .Files}}<li><a href="{{.}}">{{.}}</a></li>
{{end}}</ul></body></html>
`))

// archive writes the bundle's files to a gzipped tar at dst, each under
// prefix/ (the bundle's name), as Nomad's archives hold them. It is
// written beside dst (CreateTemp: its user's alone) and renamed once
// complete.
func (b *bundle) archive(dst, prefix string) error {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	zw := gzip.NewWriter(tmp)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(b.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(b.dir, p)
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = path.Join(prefix, filepath.ToSlash(rel))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		return errors.Join(err, f.Close())
	})
	err = errors.Join(err, tw.Close(), zw.Close(), tmp.Sync(), tmp.Close())
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// redactingWriter removes secrets from what is written through it. A
// secret split between two writes would pass: the CLI writes whole log
// lines and whole JSON documents.
type redactingWriter struct {
	f       *os.File
	secrets []string
}

func (w *redactingWriter) Write(p []byte) (int, error) {
	out := p
	for _, s := range w.secrets {
		if s != "" && bytes.Contains(out, []byte(s)) {
			out = bytes.ReplaceAll(out, []byte(s), []byte(redacted))
		}
	}
	if _, err := w.f.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *redactingWriter) Close() error { return w.f.Close() }

// redactJSON returns raw with the values of secretKeys replaced, at any
// depth; raw as it is (its fields in their order) when it holds none, or
// is not JSON.
func redactJSON(raw []byte) []byte {
	if !slices.ContainsFunc(secretKeys, func(k string) bool { return bytes.Contains(raw, []byte(`"`+k+`"`)) }) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || !redactValue(v) {
		return raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return raw
	}
	if !bytes.HasSuffix(raw, []byte("\n")) {
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	return buf.Bytes()
}

// redactValue replaces the secrets in v, a decoded JSON value, and
// reports whether there were any.
func redactValue(v any) bool {
	changed := false
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && s != "" && slices.Contains(secretKeys, k) {
				v[k] = redacted
				changed = true
				continue
			}
			changed = redactValue(e) || changed
		}
	case []any:
		for _, e := range v {
			changed = redactValue(e) || changed
		}
	}
	return changed
}

// jsonLines writes a JSON list one element a line; anything else is
// left as it is.
func jsonLines(raw []byte) []byte {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return raw
	}
	var buf bytes.Buffer
	for _, it := range items {
		if err := json.Compact(&buf, it); err != nil {
			buf.Write(it)
		}
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// cleanName makes s safe as one file or directory name: what is not a
// letter, a digit, '.', '-' or '_' becomes '_', as Nomad's bundles clean
// theirs, and a name of dots alone is not kept as such.
func cleanName(s string) string {
	out := []rune(s)
	for i, r := range out {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			out[i] = '_'
		}
	}
	name := string(out)
	if strings.Trim(name, ".") == "" {
		return strings.Repeat("_", max(len(name), 1))
	}
	return name
}

// errorLine is how a stream file (a log, the event stream) records an
// error in its course.
func errorLine(what string, err error) []byte {
	return fmt.Appendf(nil, "%s: %v\n", what, err)
}
