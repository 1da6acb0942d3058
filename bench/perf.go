package bench

import (
	"bufio"
	"fmt"
	"os"
	"sync"
)

// perfWindow lets Linux perf sample only the timed evals, which is how
// the wasm guest's own functions can be profiled: Go's profiler sees
// compiled guest code only as "_ExternalCode", while perf resolves it
// through the perf map wazero writes when built with the perfmap tag.
// Set DROVER_PERF_CTL and DROVER_PERF_ACK to perf record's control and
// acknowledgement fifos, started with events disabled:
//
//	mkfifo /tmp/ctl /tmp/ack
//	go test -tags perfmap -c -o bench.test ./bench
//	DROVER_PERF_CTL=/tmp/ctl DROVER_PERF_ACK=/tmp/ack DROVER_PLUGIN_DIR=$PWD/bin/plugins \
//	  perf record -D -1 --control fifo:/tmp/ctl,/tmp/ack -o perf.data \
//	  ./bench.test -test.run '^$' -test.bench 'Wasm/system-1/nodes=5000' -test.benchtime 20x
//	perf report -i perf.data --sort sym
type perfWindow struct {
	ctl *os.File
	ack *bufio.Reader
}

var (
	perfOnce sync.Once
	perf     *perfWindow
	perfErr  error
)

// perfControl returns the perf window the environment asks for, or nil.
func perfControl() (*perfWindow, error) {
	perfOnce.Do(func() {
		ctlPath, ackPath := os.Getenv("DROVER_PERF_CTL"), os.Getenv("DROVER_PERF_ACK")
		if ctlPath != "" && ackPath != "" {
			perf, perfErr = openPerfWindow(ctlPath, ackPath)
		}
	})
	return perf, perfErr
}

// openPerfWindow opens perf's control and acknowledgement fifos.
func openPerfWindow(ctlPath, ackPath string) (*perfWindow, error) {
	ctl, err := os.OpenFile(ctlPath, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("bench: perf control fifo: %w", err)
	}
	ack, err := os.Open(ackPath)
	if err != nil {
		ctl.Close()
		return nil, fmt.Errorf("bench: perf ack fifo: %w", err)
	}
	return &perfWindow{ctl: ctl, ack: bufio.NewReader(ack)}, nil
}

// command sends one perf control command and waits for its ack.
func (p *perfWindow) command(cmd string) error {
	if _, err := fmt.Fprintln(p.ctl, cmd); err != nil {
		return fmt.Errorf("bench: perf %s: %w", cmd, err)
	}
	if _, err := p.ack.ReadString('\n'); err != nil {
		return fmt.Errorf("bench: perf %s ack: %w", cmd, err)
	}
	return nil
}

// sampled runs fn with perf's events enabled, when a window is set up.
func sampled(fn func()) error {
	p, err := perfControl()
	if err != nil {
		return err
	}
	if p == nil {
		fn()
		return nil
	}
	return p.around(fn)
}

// around runs fn with perf's events enabled.
func (p *perfWindow) around(fn func()) error {
	if err := p.command("enable"); err != nil {
		return err
	}
	fn()
	return p.command("disable")
}
