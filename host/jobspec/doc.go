// Package jobspec reads jobs as users and Nomad's tools write them, and
// turns them into the jobs Drover's servers and schedulers hold.
//
// A job arrives in one of three forms, and all three end as a [Job]: Nomad's
// API job (every field a pointer, unset is nil) plus Drover's additions.
//
//   - HCL in Nomad's job language, with variables, locals, functions and
//     dynamic blocks: [Parse].
//   - The same language in HCL's JSON syntax ({"job": {"web": {...}}}):
//     [Parse] recognises it.
//   - Nomad's API JSON ({"Job": {...}} or a bare job), as `nomad job run
//     -json`, `drover job inspect` and Nomad's Go client produce it:
//     [DecodeJSON], which is strict (unknown fields are errors) yet accepts
//     everything Nomad's official client sends, because it decodes into that
//     client's own types.
//
// A [Job] becomes the server's model, an [sdk.Job], through [Job.SDK]: Nomad's
// API canonicalisation (defaults that depend on whether a field was set at
// all, the job's update block merged into its groups, restart and reschedule
// policies per job type), the conversion Nomad's HTTP agent performs, and
// the server-side defaults of [Canonicalize]. [Validate] then checks the
// result and returns a [ValidationError] whose problems name the part of the
// job they concern; [Parsed.Locate] turns them into HCL diagnostics that
// point at the file, line and column of that part.
//
// The usual loop, as `drover job run` runs it:
//
//	p, diags := jobspec.Parse(jobspec.Config{Path: path, Body: src, Vars: vars})
//	if diags.HasErrors() {
//		fmt.Println(jobspec.FormatDiagnostics(p.Sources, diags))
//		return
//	}
//	job := p.Job.SDK()
//	if err := jobspec.Validate(job); err != nil {
//		fmt.Println(jobspec.FormatDiagnostics(p.Sources, p.Locate(err)))
//		return
//	}
//	// submit p.Job (the API form) to the server, which does the same.
package jobspec
