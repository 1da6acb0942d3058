package main

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGHUP reads the configuration file again for its log level: an agent
// started at "error" logs no info line, and after its file says "info" and
// it is sent SIGHUP, it does; a file that no longer parses keeps the level,
// with an error in the log.
func TestE2E_SIGHUPReloadsTheLogLevel(t *testing.T) {
	bin := droverBin(t)
	dir := t.TempDir()
	conf := writeFile(t, dir, "agent.hcl", "log_level = \"error\"\n")
	addr := freeAddr(t)
	cmd, logs, exited := runAgentProcess(t, bin, nil, "agent", "-dev", "-dev-nodes", "1", "-http-addr", addr, "-config", conf)
	waitFor(t, "the agent to come up", exited, func() bool {
		resp, err := http.Get("http://" + addr + "/v1/status/leader")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	hup := func() {
		t.Helper()
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	// Each SIGHUP logs "reload: no TLS to reload" at info (the agent has
	// no TLS), which shows whether info lines are logged.
	const infoLine = "no TLS to reload"
	hup()
	waitFor(t, "the first SIGHUP", exited, func() bool { return strings.Count(logs.String(), "Caught SIGHUP") == 1 })

	writeFile(t, dir, "agent.hcl", "log_level = \"info\"\n")
	hup()
	waitFor(t, "the level to change", exited, func() bool {
		return strings.Contains(logs.String(), "log level changed") && strings.Contains(logs.String(), infoLine)
	})
	// Reloads run one after the other: had the first, at level error,
	// logged its info line, it would be there before the second's.
	if n := strings.Count(logs.String(), infoLine); n != 1 {
		t.Fatalf("%d info lines of reloads, want the second's only:\n%s", n, logs.String())
	}

	writeFile(t, dir, "agent.hcl", "log_level = \n")
	hup()
	waitFor(t, "the refused configuration", exited, func() bool {
		return strings.Contains(logs.String(), "configuration refused") && strings.Count(logs.String(), infoLine) == 2
	})
	if !strings.Contains(logs.String(), "agent.hcl:1") {
		t.Fatalf("the refusal does not say where:\n%s", logs.String())
	}
}

// waitFor polls cond until it holds, failing the test if the agent exits
// or 60 s pass.
func waitFor(t *testing.T, what string, exited <-chan struct{}, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		select {
		case <-exited:
			t.Fatalf("agent exited waiting for %s", what)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
