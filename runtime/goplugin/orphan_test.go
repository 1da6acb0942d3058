package goplugin_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime/goplugin"
	"github.com/drover-sched/drover/runtime/goplugin/goplugintest"
)

// helperEnv names the plugin a helper process (this test binary, re-run)
// starts, as an agent would, before printing the plugin's pid and waiting
// to be killed.
const helperEnv = "DROVER_GOPLUGIN_HELPER_PLUGIN"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		os.Exit(helper(path))
	}
	os.Exit(m.Run())
}

func helper(path string) int {
	ctx := context.Background()
	f, err := goplugin.Load(ctx, path, goplugin.DefaultConfig())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	inst, err := f.NewInstance(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(goplugin.PID(inst))
	select {}
}

// alive reports whether pid runs (a zombie no longer runs).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] != "Z"
}

// waitDead fails t unless process pid (what, for the message) is gone or
// a zombie within a few seconds; one still running is killed, so that it
// does not outlive the test.
func waitDead(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("%s %d still runs", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestGoPlugin_NoOrphanWhenTheAgentIsKilled(t *testing.T) {
	path := goplugintest.Build(t, "./plugins/service")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("helper: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 || !alive(pid) {
		_ = cmd.Process.Kill()
		t.Fatalf("helper reported plugin pid %q", line)
	}
	// SIGKILL: the agent gets no chance to stop its plugins.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitDead(t, pid, "the plugin process, after its agent's SIGKILL,")
}

func TestGoPlugin_CloseStopsTheProcess(t *testing.T) {
	ctx := context.Background()
	f := load(t, "./plugins/service")
	inst, err := f.NewInstance(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := goplugin.PID(inst)
	if pid <= 0 || !alive(pid) {
		t.Fatalf("pid %d not running", pid)
	}
	if err := inst.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pid, "the plugin process, after Close,")
}
