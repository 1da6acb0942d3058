package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/cli"
)

// operator api sends one request with the CLI's address, token and
// namespace, prints the body, and exits 1 on an answer of 400 or more;
// -X, -H, -d (the data, @file, -), piped standard input, -filter,
// -verbose and -dryrun as Nomad's.
func TestOperatorAPICommand(t *testing.T) {
	_, addr, root := nsAgent(t)

	out, _ := mustRun(t, 0, addr, root, "operator", "api", "/v1/namespaces")
	var nss []struct{ Name string }
	if err := json.Unmarshal([]byte(out), &nss); err != nil || len(nss) != 1 || nss[0].Name != "default" {
		t.Fatalf("GET /v1/namespaces: %v\n%s", err, out)
	}
	// The address's host:port with no scheme works too.
	host := strings.TrimPrefix(addr, "http://")
	out, _ = mustRun(t, 0, addr, root, "operator", "api", host+"/v1/namespace/default")
	checkContains(t, "GET by host:port", out, `"Name":"default"`)

	// -X PUT with -d @file, -d itself, then -d - and piped data (POST).
	spec := writeFile(t, t.TempDir(), "ns.json", `{"Name": "from-file", "Description": "file"}`)
	mustRun(t, 0, addr, root, "operator", "api", "-X", "PUT", "-d", "@"+spec, "/v1/namespace/from-file")
	mustRun(t, 0, addr, root, "operator", "api", "-X", "put", "-d", `{"Name": "inline"}`, "/v1/namespace/inline")
	if code, out, errOut := runWithStdin(t, addr, root, `{"Name": "dash"}`, "operator", "api", "-d", "-", "/v1/namespace/dash"); code != 0 {
		t.Fatalf("-d -: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runWithStdin(t, addr, root, `{"Name": "piped", "Description": "p"}`, "operator", "api", "-verbose", "/v1/namespace/piped"); code != 0 {
		t.Fatalf("piped: exit %d\n%s%s", code, out, errOut)
	} else {
		checkContains(t, "piped -verbose", errOut, "* Reading request body from stdin.", "> POST "+addr+"/v1/namespace/piped",
			"> X-Nomad-Token: <redacted>", "< HTTP/1.1 200 OK", "< X-Nomad-Index: ")
		if strings.Contains(errOut, root) {
			t.Errorf("-verbose prints the token:\n%s", errOut)
		}
	}
	out, _ = mustRun(t, 0, addr, root, "operator", "api", "-filter", `Description == "file" or Description == "p"`, "/v1/namespaces")
	if err := json.Unmarshal([]byte(out), &nss); err != nil || len(nss) != 2 || nss[0].Name != "from-file" || nss[1].Name != "piped" {
		t.Errorf("-filter: %v %+v\n%s", err, nss, out)
	}
	out, _ = mustRun(t, 0, addr, root, "operator", "api", "/v1/namespace/inline")
	checkContains(t, "-d's namespace", out, `"Name":"inline"`)
	out, _ = mustRun(t, 0, addr, root, "operator", "api", "/v1/namespace/dash")
	checkContains(t, "-d -'s namespace", out, `"Name":"dash"`)

	// Errors: the body is printed, and the exit code is 1.
	out, errOut := mustRun(t, 1, addr, root, "operator", "api", "/v1/namespace/nowhere")
	checkContains(t, "404", errOut, "Error: the API answered 404 Not Found")
	checkContains(t, "404's body", out, "not found")
	_, errOut = mustRun(t, 1, addr, "", "operator", "api", "-X", "DELETE", "/v1/namespace/inline")
	checkContains(t, "no token", errOut, "403 Forbidden")
	_, errOut = mustRun(t, 1, addr, root, "operator", "api", "-H", "X-Nomad-Token: not-a-token", "/v1/namespaces")
	checkContains(t, "-H over -token", errOut, "403 Forbidden")
	_, errOut = mustRun(t, 1, addr, root, "operator", "api")
	checkContains(t, "no path", errOut, "A path or URL is required")
	_, errOut = mustRun(t, 1, addr, root, "operator", "api", "/a", "/b")
	checkContains(t, "two paths", errOut, "operator api accepts exactly 1 argument, but 2 arguments were found")
	_, errOut = mustRun(t, 1, addr, root, "operator", "api", "-H", "no-colon", "/v1/jobs")
	checkContains(t, "a bad header", errOut, "headers must be in the form 'Key: Value'")

	// -dryrun prints curl's command and sends nothing.
	out, _ = mustRun(t, 0, addr, root, "operator", "api", "-dryrun", "-namespace", "prod", "-region", "global",
		"-filter", `Name == "x"`, "-H", "Accept: text/plain", "-d", "@"+spec, "/v1/namespace/never")
	want := "curl \\\n  -X POST \\\n  --data-binary @" + spec + " \\\n  -H 'Accept: text/plain' \\\n  -H 'X-Nomad-Token: " + root + "' \\\n  '" +
		addr + "/v1/namespace/never?filter=Name+%3D%3D+%22x%22&namespace=prod&region=global'\n"
	if out != want {
		t.Errorf("-dryrun:\n%s\nwant:\n%s", out, want)
	}
	mustRun(t, 1, addr, root, "operator", "api", "/v1/namespace/never")
}

// -dryrun names a token from the environment by its variable, and turns
// the TLS options into curl's.
func TestOperatorAPICommand_DryrunEnvAndTLS(t *testing.T) {
	setTokenEnv(t, map[string]string{"NOMAD_TOKEN": "secret"})
	ui := cli.NewMockUi()
	m := &meta{ui: ui, out: ui.OutputWriter, in: strings.NewReader(""), now: time.Now}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	code := (&operatorAPICommand{meta: m}).Run([]string{"-address", "127.0.0.1:4646", "-ca-cert", ca,
		"-tls-server-name", "server.global.nomad", "-tls-skip-verify", "-dryrun", "/v1/jobs"})
	want := "curl \\\n  -X GET \\\n  --cacert " + ca + " \\\n  --connect-to server.global.nomad:4646:127.0.0.1:4646 \\\n  --insecure \\\n" +
		"  -H \"X-Nomad-Token: ${NOMAD_TOKEN}\" \\\n  https://server.global.nomad:4646/v1/jobs\n"
	if code != 0 || ui.OutputWriter.String() != want {
		t.Errorf("exit %d:\n%s\nwant:\n%s\n%s", code, ui.OutputWriter.String(), want, ui.ErrorWriter.String())
	}
}
