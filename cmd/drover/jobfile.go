package main

import (
	"encoding/json"
	"flag"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/jobspec"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/nomad/api"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// jobFile reads the jobspec a command is given, with -var, -var-file and
// -json, and checks it as the server will.
type jobFile struct {
	vars     stringList
	varFiles stringList
	apiJSON  bool
	// source is the jobspec as load read it.
	source []byte
}

// jobFileOptions documents the flags of jobFile.
const jobFileOptions = `
  -var 'name=value'  Set a variable the jobspec declares (repeatable).
                     NOMAD_VAR_name and DROVER_VAR_name also set variables.
  -var-file=PATH     Read variable values from an HCL file (repeatable).
  -json              The file is a job in Nomad's API JSON (as printed by
                     job inspect); such files are also recognised unasked.`

func (f *jobFile) flags(fs *flag.FlagSet) {
	fs.Var(&f.vars, "var", "")
	fs.Var(&f.varFiles, "var-file", "")
	fs.BoolVar(&f.apiJSON, "json", false, "")
}

// load reads path ("-" is standard input), parses it, converts it and
// validates it. Problems are printed as located diagnostics and load
// returns ok=false. It returns the parse (with the job as submitted) and
// the job as the server will hold it.
func (m *meta) load(path string, f *jobFile) (p *jobspec.Parsed, job *sdk.Job, ok bool) {
	var src []byte
	var err error
	if path == "-" {
		src, err = io.ReadAll(os.Stdin)
		path = "<stdin>"
	} else {
		src, err = os.ReadFile(path)
	}
	if err != nil {
		m.errorf("reading the jobspec: %v", err)
		return nil, nil, false
	}
	f.source = src
	var diags hcl.Diagnostics
	if f.apiJSON {
		p = &jobspec.Parsed{Sources: map[string][]byte{path: src}}
		p.Job, diags = jobspec.DecodeJSON(path, src)
	} else {
		p, diags = jobspec.Parse(jobspec.Config{Path: path, Body: src, Vars: f.vars, VarFiles: f.varFiles,
			Env: os.Environ(), AllowFS: true})
	}
	if len(diags) > 0 {
		m.ui.Error(jobspec.FormatDiagnostics(p.Sources, diags))
	}
	if diags.HasErrors() {
		return p, nil, false
	}
	job, err = p.Job.SDK()
	if err == nil {
		err = jobspec.Validate(job)
	}
	if err != nil {
		m.ui.Error(jobspec.FormatDiagnostics(p.Sources, p.Locate(err)))
		return p, nil, false
	}
	return p, job, true
}

// submission is what the server keeps with the job version a run
// registers, as Nomad's CLI sends it: the jobspec as load read it, the
// -var arguments (a name without "=" with an empty value), and the
// -var-file contents the parse read, one after the other.
func (f *jobFile) submission(p *jobspec.Parsed) *api.JobSubmission {
	format := jobspec.SourceFormat(f.source)
	if f.apiJSON {
		format = "json"
	}
	sub := &api.JobSubmission{Source: string(f.source), Format: format}
	if format == "json" {
		return sub
	}
	sub.VariableFlags = make(map[string]string, len(f.vars))
	for _, v := range f.vars {
		name, value, _ := strings.Cut(v, "=")
		sub.VariableFlags[name] = value
	}
	var b strings.Builder
	for _, path := range f.varFiles {
		b.Write(p.Sources[path])
		b.WriteString("\n")
	}
	sub.Variables = b.String()
	return sub
}

// resolve finds the full ID of an object from a prefix, through the
// listing at list.
func resolve(cl *client.Client, list, prefix string) (string, error) {
	return cl.Resolve(bg, list, prefix, func(raw []byte) ([]string, error) {
		var items []struct{ ID string }
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, err
		}
		ids := make([]string, len(items))
		for i, it := range items {
			ids[i] = it.ID
		}
		return ids, nil
	})
}

// readJob reads a job by ID, or by the prefix of one job's ID.
func readJob(cl *client.Client, id string) (*sdk.Job, error) {
	var job sdk.Job
	_, err := cl.Get(bg, "/v1/job/"+url.PathEscape(id), &job)
	if client.IsNotFound(err) {
		var full string
		if full, err = resolve(cl, "/v1/jobs", id); err == nil {
			_, err = cl.Get(bg, "/v1/job/"+url.PathEscape(full), &job)
		}
	}
	if err != nil {
		return nil, err
	}
	return &job, nil
}

// register submits a job and returns the registration's answer.
func register(cl *client.Client, req *httpapi.JobRegisterRequest) (*httpapi.JobRegisterResponse, error) {
	var resp httpapi.JobRegisterResponse
	if _, err := cl.Put(bg, "/v1/jobs", req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// clientAndJob returns an API client and the job id names (its ID or a
// unique prefix), or prints why it cannot and reports false.
func (m *meta) clientAndJob(id string) (*client.Client, *sdk.Job, bool) {
	cl, err := m.client()
	if err != nil {
		m.errorf("%v", err)
		return nil, nil, false
	}
	job, err := readJob(cl, id)
	if err != nil {
		m.errorf("reading job %q: %v", id, err)
		return nil, nil, false
	}
	return cl, job, true
}
