package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/agent"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
	"github.com/rs/zerolog"
)

// The requests of var lock, its arguments and the child's exit code,
// against the fake agent.
func TestVarLock(t *testing.T) {
	dir := t.TempDir()
	hclSpec := writeFile(t, dir, "lock.hcl", "items {\n  owner = \"ops\"\n}\n")
	jsonSpec := writeFile(t, dir, "lock.json", `{"Path": "app/spec", "Lock": {"ID": "stale", "TTL": "20s", "LockDelay": "1m"}}`)
	locked := func(path string) agentAnswer {
		return agentAnswer{body: &api.Variable{Namespace: "default", Path: path, ModifyIndex: 7,
			Lock: &api.VariableLock{ID: "L1", TTL: "10s", LockDelay: "5s"}}}
	}
	released := agentAnswer{body: &api.Variable{Namespace: "default", Path: "app/db", ModifyIndex: 8}}
	acquire := func(uri, body string) aclRequest {
		return aclRequest{method: "PUT", path: uri + "?lock-acquire", body: body}
	}
	release := aclRequest{method: "PUT", path: "/v1/var/app/db?lock-release", body: `{"Lock": {"ID": "L1", "TTL": "", "LockDelay": ""}}`}
	ok := map[string]agentAnswer{"PUT /v1/var/app/db?lock-acquire": locked("app/db"), "PUT /v1/var/app/db?lock-release": released}
	runCLICases(t, []cliCase{
		{name: "the child's exit code, once the lock is released", args: []string{"var", "lock", "-ttl", "10s", "-delay", "5s", "app/db", "echo", "hi;", "exit", "3"},
			answers: ok, code: 3, out: "hi\n",
			want: []aclRequest{acquire("/v1/var/app/db", `{"Path": "app/db", "Items": null, "Lock": {"ID": "", "TTL": "10s", "LockDelay": "5s"}}`), release}},
		{name: "Nomad's defaults, items from a specification", args: []string{"var", "lock", "/app/db/", "@" + hclSpec, "true"},
			answers: ok,
			want:    []aclRequest{acquire("/v1/var/app/db", `{"Path": "app/db", "Items": {"owner": "ops"}, "Lock": {"ID": "", "TTL": "15s", "LockDelay": "15s"}}`), release}},
		{name: "the path and lock from a specification, flags winning", args: []string{"var", "lock", "-delay", "2m", "@" + jsonSpec, "true"},
			answers: map[string]agentAnswer{"PUT /v1/var/app/spec?lock-acquire": locked("app/spec"),
				"PUT /v1/var/app/spec?lock-release": released},
			want: []aclRequest{acquire("/v1/var/app/spec", `{"Path": "app/spec", "Lock": {"ID": "", "TTL": "20s", "LockDelay": "2m0s"}}`),
				{method: "PUT", path: "/v1/var/app/spec?lock-release", body: `{"Lock": {"ID": "L1", "TTL": "", "LockDelay": ""}}`}}},
		{name: "-shell=false runs the words themselves", args: []string{"var", "lock", "-shell=false", "-verbose", "app/db", "sh", "-c", "exit 4"},
			answers: ok, code: 4, want: []aclRequest{acquire("/v1/var/app/db", `{"Path": "app/db"}`), release},
			errHas: []string{"Attempting to acquire the lock", `Variable "app/db" locked (lock ID L1), ready to execute: sh -c exit 4`,
				"The child exited with 4", "Releasing the lock"}},
		{name: "a child that cannot start: the lock is released", args: []string{"var", "lock", "-shell=false", "app/db", filepath.Join(dir, "nope")},
			answers: ok, code: exitError, errHas: []string{"Error: starting the child:", "no such file"},
			want: []aclRequest{acquire("/v1/var/app/db", `{"Path": "app/db"}`), release}},
		{name: "-early-return: a lock another holds runs nothing", args: []string{"var", "lock", "-early-return", "app/db", "touch", filepath.Join(dir, "ran")},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?lock-acquire": {status: http.StatusConflict, body: locked("app/db").body}},
			want:    []aclRequest{acquire("/v1/var/app/db", `{"Path": "app/db"}`)},
			code:    exitError, errHas: []string{`Variable "app/db" is locked by another`, "not running the child (-early-return)"}},
		{name: "an agent that cannot answer is tried -max-retry times more", args: []string{"var", "lock", "-max-retry", "1", "app/db", "true"},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?lock-acquire": {status: http.StatusServiceUnavailable, body: "no leader"}},
			want:    []aclRequest{acquire("/v1/var/app/db", `{"Path": "app/db"}`), acquire("/v1/var/app/db", `{"Path": "app/db"}`)},
			code:    exitError, errHas: []string{`Error: acquiring the lock on variable "app/db": API error (503): no leader`}},
		{name: "a refusal is not tried again", args: []string{"var", "lock", "app/db", "true"},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?lock-acquire": {status: http.StatusForbidden, body: "Permission denied"}},
			want:    []aclRequest{acquire("/v1/var/app/db", `{"Path": "app/db"}`)},
			code:    exitError, errHas: []string{"API error (403): Permission denied"}},
		{name: "no child", args: []string{"var", "lock", "app/db"}, code: exitError, errHas: []string{"Not enough arguments"}},
		{name: "a specification but no child", args: []string{"var", "lock", "app/db", "@" + hclSpec}, code: exitError,
			errHas: []string{"No child command to run"}},
		{name: "a bad TTL", args: []string{"var", "lock", "-ttl", "soon", "app/db", "true"}, code: exitError,
			errHas: []string{`Error: lock TTL "soon": give a positive duration`}},
		{name: "a negative retry count", args: []string{"var", "lock", "-max-retry", "-1", "app/db", "true"}, code: exitError,
			errHas: []string{"-max-retry=-1"}},
		{name: "wildcard namespace", args: []string{"var", "lock", "-namespace", "*", "app/db", "true"},
			code: exitError, errHas: []string{`The wildcard namespace ("*") is not valid for this command.`}},
	})
}

// startLockAgent starts an in-process dev agent without nodes (variables
// and their locks are all var lock needs) and returns its address.
func startLockAgent(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(wasmtest.Build(t, "./plugins/service"), filepath.Join(dir, "service.wasm")); err != nil {
		t.Fatal(err)
	}
	cfg := agent.DefaultConfig()
	cfg.Dev, cfg.DevNodes, cfg.HTTPAddr, cfg.PluginDir = true, 0, "127.0.0.1:0", dir
	cfg.Server.NumWorkers = 1
	a, err := agent.New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.Disabled))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	return a.Addr()
}

// lockRun is a var lock command running in the background, its output
// (the child's too) in ui.
type lockRun struct {
	ui   *cli.MockUi
	code chan int
}

// startVarLock runs var lock against the agent at addr with args, with no
// token and in the default namespace whatever the environment says (the
// tests that use it run in parallel, so cannot set it).
func startVarLock(t *testing.T, addr string, args ...string) *lockRun {
	t.Helper()
	ui := cli.NewMockUi()
	cmd, err := commands(&meta{ui: ui, out: ui.OutputWriter, errOut: ui.ErrorWriter, in: strings.NewReader("")})["var lock"]()
	if err != nil {
		t.Fatal(err)
	}
	r := &lockRun{ui: ui, code: make(chan int, 1)}
	go func() {
		r.code <- cmd.Run(append([]string{"-address", addr, "-token", "", "-namespace", "default"}, args...))
	}()
	return r
}

// exit is the command's exit code, which it must give within the time.
func (r *lockRun) exit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case code := <-r.code:
		return code
	case <-time.After(within):
		t.Fatalf("var lock still runs after %s; stderr:\n%s", within, r.ui.ErrorWriter.String())
		return 0
	}
}

// exited reports whether the command has exited (its code kept).
func (r *lockRun) exited() bool {
	select {
	case code := <-r.code:
		r.code <- code
		return true
	default:
		return false
	}
}

// varAt reads the variable at path with var get, as an operator would.
func varAt(t *testing.T, addr, path string) *api.Variable {
	t.Helper()
	ui := cli.NewMockUi()
	cmd, err := commands(&meta{ui: ui, out: ui.OutputWriter})["var get"]()
	if err != nil {
		t.Fatal(err)
	}
	if code := cmd.Run([]string{"-address", addr, "-token", "", "-namespace", "default", "-out", "json", path}); code != exitOK {
		t.Fatalf("var get %s: exit %d: %s", path, code, ui.ErrorWriter.String())
	}
	var v api.Variable
	if err := json.Unmarshal([]byte(ui.OutputWriter.String()), &v); err != nil {
		t.Fatalf("var get %s: %v", path, err)
	}
	return &v
}

func exists(path string) func() bool {
	return func() bool { _, err := os.Stat(path); return err == nil }
}

// waitingChild is a shell script that says it runs, touches started,
// and once proceed exists runs then and exits with code (after 30s
// without proceed, it exits anyway: a failed test leaves it behind).
func waitingChild(started, proceed, then string, code int) string {
	return fmt.Sprintf("echo the child runs; touch %s; i=0; while [ ! -e %s ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; %s; exit %d",
		started, proceed, then, code)
}

// childPID waits for a child to write its PID to pidFile and returns it;
// should the test fail, the child is killed.
func childPID(t *testing.T, pidFile string) int {
	t.Helper()
	var pid int
	waitUntil(t, 10*time.Second, "the child to start", func() bool {
		b, err := os.ReadFile(pidFile)
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	t.Cleanup(func() {
		if t.Failed() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pid
}

// The child runs while the lock is held, in a variable var lock made with
// the specification's items; once it exits, the lock is released and the
// command exits with the child's code.
func TestVarLock_RunsTheChildWhileHeld(t *testing.T) {
	t.Parallel()
	addr := startLockAgent(t)
	dir := t.TempDir()
	spec := writeFile(t, dir, "spec.json", `{"Items": {"owner": "first"}}`)
	started, proceed := filepath.Join(dir, "started"), filepath.Join(dir, "proceed")
	r := startVarLock(t, addr, "-ttl", "10s", "-delay", "12s", "app/leader", "@"+spec, waitingChild(started, proceed, "true", 3))
	waitUntil(t, 10*time.Second, "the child to start", exists(started))
	held := varAt(t, addr, "app/leader")
	if held.LockID() == "" || held.Lock.TTL != "10s" || held.Lock.LockDelay != "12s" || held.Items["owner"] != "first" {
		t.Fatalf("while the child runs the variable is %+v (lock %+v), want it locked for 10s with its items", held, held.Lock)
	}
	writeFile(t, dir, "proceed", "")
	if code := r.exit(t, 10*time.Second); code != 3 {
		t.Fatalf("exit %d, want the child's 3; stderr:\n%s", code, r.ui.ErrorWriter.String())
	}
	if v := varAt(t, addr, "app/leader"); v.Lock != nil || v.Items["owner"] != "first" {
		t.Errorf("after the child exited the variable is %+v (lock %+v), want it unlocked", v, v.Lock)
	}
	if out := r.ui.OutputWriter.String(); out != "the child runs\n" {
		t.Errorf("stdout %q, want the child's", out)
	}
}

// A second var lock on a variable the first holds runs its child only
// once the first has released the lock; one with -early-return runs none.
func TestVarLock_SecondWaitsForTheFirst(t *testing.T) {
	t.Parallel()
	addr := startLockAgent(t)
	dir := t.TempDir()
	started, proceed, firstDone := filepath.Join(dir, "started"), filepath.Join(dir, "proceed"), filepath.Join(dir, "first-done")
	first := startVarLock(t, addr, "-ttl", "10s", "app/queue", waitingChild(started, proceed, "touch "+firstDone, 0))
	waitUntil(t, 10*time.Second, "the first child to start", exists(started))

	early := startVarLock(t, addr, "-early-return", "app/queue", "touch", filepath.Join(dir, "early-ran"))
	if code := early.exit(t, 10*time.Second); code != exitError || !strings.Contains(early.ui.ErrorWriter.String(), "is locked by another") {
		t.Fatalf("-early-return on a held lock: exit %d, stderr:\n%s", code, early.ui.ErrorWriter.String())
	}
	// The first child's file is checked rather than taken on trust: the
	// second child fails unless the first has finished.
	secondRan := filepath.Join(dir, "second-ran")
	second := startVarLock(t, addr, "-ttl", "10s", "-backoff", "100ms", "app/queue", "test -e "+firstDone+" && touch "+secondRan)
	waitUntil(t, 10*time.Second, "the second to say it waits", func() bool {
		return strings.Contains(second.ui.ErrorWriter.String(), `Variable "app/queue" is locked by another`)
	})
	time.Sleep(time.Second) // ten tries
	if second.exited() || exists(secondRan)() || exists(filepath.Join(dir, "early-ran"))() {
		t.Fatalf("a child ran while the first held the lock; second's stderr:\n%s", second.ui.ErrorWriter.String())
	}
	writeFile(t, dir, "proceed", "")
	if code := first.exit(t, 10*time.Second); code != exitOK {
		t.Fatalf("first: exit %d; stderr:\n%s", code, first.ui.ErrorWriter.String())
	}
	if code := second.exit(t, 10*time.Second); code != exitOK || !exists(secondRan)() {
		t.Fatalf("second: exit %d, ran %v; stderr:\n%s", code, exists(secondRan)(), second.ui.ErrorWriter.String())
	}
	if v := varAt(t, addr, "app/queue"); v.Lock != nil {
		t.Errorf("the lock is still held: %+v", v.Lock)
	}
}

// A lock released behind the command's back is lost at its next renewal
// (half the TTL): the child is sent SIGTERM, killed if it ignores it, and
// the command exits with 1.
func TestVarLock_LostLockStopsTheChild(t *testing.T) {
	t.Parallel()
	addr := startLockAgent(t)
	cl, err := client.New(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		child string // $1 the file to write the child's PID to
	}{
		{"a child that SIGTERM ends", `echo $$ > "$1"; exec sleep 60`},
		{"a child that ignores SIGTERM is killed", `trap "" TERM; echo $$ > "$1"; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done`},
		// The PID is the grandchild's: a shell SIGTERM ends leaves what it
		// runs behind unless the signal reaches that too.
		{"what the child runs is stopped with it", `sleep 60 & echo $! > "$1"; wait`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := "app/" + strings.ReplaceAll(tc.name, " ", "-")
			pidFile := filepath.Join(t.TempDir(), "pid")
			r := startVarLock(t, addr, "-ttl", "10s", "-shell=false", path, "sh", "-c", tc.child, "child", pidFile)
			pid := childPID(t, pidFile)
			id := varAt(t, addr, path).LockID()
			if id == "" {
				t.Fatal("the child runs and the variable is not locked")
			}
			if _, err := cl.Put(context.Background(), "/v1/var/"+path+"?lock-release", &api.Variable{Lock: &api.VariableLock{ID: id}}, nil); err != nil {
				t.Fatalf("releasing the lock behind the command's back: %v", err)
			}
			// The next renewal is at most 5s away; the kill 5s after it.
			if code := r.exit(t, 15*time.Second); code != exitError {
				t.Fatalf("exit %d, want 1; stderr:\n%s", code, r.ui.ErrorWriter.String())
			}
			if stderr := r.ui.ErrorWriter.String(); !strings.Contains(stderr, fmt.Sprintf("Lock on variable %q lost", path)) {
				t.Errorf("stderr does not say the lock was lost:\n%s", stderr)
			}
			// The signal is sent as the command exits; a process ends
			// some time after it is delivered (on a loaded machine, after
			// the command has returned).
			for end := time.Now().Add(5 * time.Second); processRuns(pid) && time.Now().Before(end); {
				time.Sleep(20 * time.Millisecond)
			}
			if processRuns(pid) {
				t.Errorf("the child (PID %d) still runs 5s after the command exited", pid)
			}
		})
	}
}

// processRuns reports whether the process pid runs: it exists and is no
// zombie (a grandchild, once ended, waits for whoever adopted it).
func processRuns(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) state ...: comm may hold spaces, the state follows its ')'.
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// The lease is renewed while the child runs past the TTL, and SIGINT is
// passed on to the child: the command exits as the child did (130), with
// the lock released. Not parallel: the signal goes to the test process,
// and every var lock running then passes it on.
func TestVarLock_RenewsAndPassesSignalsOn(t *testing.T) {
	addr := startLockAgent(t)
	// Should the command have stopped listening, the signal lands here
	// rather than ending the test binary.
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, os.Interrupt)
	defer signal.Stop(guard)

	pidFile := filepath.Join(t.TempDir(), "pid")
	r := startVarLock(t, addr, "-ttl", "10s", "-shell=false", "app/renewed", "sh", "-c", `echo $$ > "$1"; exec sleep 60`, "child", pidFile)
	childPID(t, pidFile)
	id := varAt(t, addr, "app/renewed").LockID()
	if id == "" {
		t.Fatal("the child runs and the variable is not locked")
	}
	// Unrenewed, the lock would be gone a second after its TTL.
	time.Sleep(12 * time.Second)
	if v := varAt(t, addr, "app/renewed"); v.LockID() != id || r.exited() {
		t.Fatalf("past the TTL: lock %+v (want ID %s), command exited %v; stderr:\n%s", v.Lock, id, r.exited(), r.ui.ErrorWriter.String())
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := r.exit(t, 10*time.Second); code != 128+int(syscall.SIGINT) {
		t.Fatalf("exit %d, want 130 (the child ended by SIGINT); stderr:\n%s", code, r.ui.ErrorWriter.String())
	}
	if v := varAt(t, addr, "app/renewed"); v.Lock != nil {
		t.Errorf("the lock is still held: %+v", v.Lock)
	}
}
