package goplugin_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime/goplugin"
	"github.com/drover-sched/drover/runtime/goplugin/goplugintest"
)

// wrapper writes an executable shell script that starts a child which
// outlives it and holds its output (sleep, in the background), writes the
// child's pid to a file, then runs body. It returns the script's path and
// the pid file's.
func wrapper(t *testing.T, body string) (path, pidFile string) {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	dir := t.TempDir()
	path, pidFile = filepath.Join(dir, "wrapper"), filepath.Join(dir, "child.pid")
	script := fmt.Sprintf("#!/bin/sh\n%s 300 &\necho $! > %s\n%s\n", sleep, pidFile, body)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, pidFile
}

// waitGone fails t unless the process whose pid is in pidFile is gone
// within a few seconds.
func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	waitDead(t, pid, "the plugin's child")
}

// TestGoPlugin_AChildHoldingTheOutputDoesNotHoldTheLoad: a plugin
// executable whose child outlives it holding its output (a shell
// wrapper's command) fails its load when its handshake fails or at the
// start timeout, not when the child exits, and the child is killed.
// Before the plugin ran in a process group of its own, the load waited
// for the child: go-plugin reads the output to its end.
func TestGoPlugin_AChildHoldingTheOutputDoesNotHoldTheLoad(t *testing.T) {
	for _, tt := range []struct {
		name, body, want string
	}{
		{"stdout before the handshake", "echo hello\nwait", "Unrecognized remote plugin message: hello"},
		{"silent until the start timeout", "wait", "timeout while waiting for plugin to start"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path, pidFile := wrapper(t, tt.body)
			cfg := goplugin.DefaultConfig()
			cfg.StartTimeout = time.Second
			errc := make(chan error, 1)
			go func() {
				_, err := goplugin.Load(context.Background(), path, cfg)
				errc <- err
			}()
			select {
			case err := <-errc:
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
			case <-time.After(time.Minute): // the child sleeps 300 s
				t.Fatal("the load waits for the plugin's child")
			}
			waitGone(t, pidFile)
		})
	}
}

// TestGoPlugin_CloseStopsWhatThePluginStarted: a plugin run by a shell
// wrapper that also started a child holding the output starts (its
// handshake and attach go through the wrapper), and Close returns and
// kills the child. (That Close does not wait out its grace period for the
// child rests on zombie, TestZombie.)
func TestGoPlugin_CloseStopsWhatThePluginStarted(t *testing.T) {
	path, pidFile := wrapper(t, goplugintest.Build(t, "./plugins/service"))
	ctx := context.Background()
	f, err := goplugin.Load(ctx, path, goplugin.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	inst, err := f.NewInstance(ctx)
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- inst.Close(ctx) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close waits for the plugin's child")
	}
	waitGone(t, pidFile)
}
