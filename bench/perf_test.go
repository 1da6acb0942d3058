package bench

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestPerfWindow plays perf's side of the control protocol: it must see
// "enable" before the timed function runs and "disable" after, each
// acknowledged before the benchmark goes on.
func TestPerfWindow(t *testing.T) {
	dir := t.TempDir()
	ctlPath, ackPath := filepath.Join(dir, "ctl"), filepath.Join(dir, "ack")
	for _, p := range []string{ctlPath, ackPath} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Skipf("no fifos here: %v", err)
		}
	}
	var (
		mu  sync.Mutex
		log []string
	)
	record := func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	done := make(chan error, 1)
	go func() { // perf: reads commands, acknowledges each
		ctl, err := os.Open(ctlPath)
		if err != nil {
			done <- err
			return
		}
		defer ctl.Close()
		ack, err := os.OpenFile(ackPath, os.O_WRONLY, 0)
		if err != nil {
			done <- err
			return
		}
		defer ack.Close()
		r := bufio.NewScanner(ctl)
		for r.Scan() {
			record("perf " + r.Text())
			if _, err := fmt.Fprintln(ack, "ack"); err != nil {
				done <- err
				return
			}
		}
		done <- r.Err()
	}()
	w, err := openPerfWindow(ctlPath, ackPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.around(func() { record("timed") }); err != nil {
		t.Fatal(err)
	}
	w.ctl.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(log, ", "); got != "perf enable, timed, perf disable" {
		t.Fatalf("sequence %q", got)
	}
}
