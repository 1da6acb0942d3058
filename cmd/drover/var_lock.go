package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/hashicorp/nomad/api"
)

// var lock, as Nomad 1.7's: a child command runs while the command holds
// a lock on a variable (PUT /v1/var/<path>?lock-acquire, ?lock-renew,
// ?lock-release), so that of the commands that lock the same variable
// only one runs its child at a time.
//
// The loop is written against the CLI's client rather than with the api
// package's Locks and LockLeaser: those speak through Nomad's client (its
// own TLS and token settings), and the leaser does not stop what it
// protects when a renewal is refused, which is what var lock must do.

// childKillGrace is how long a child has to exit once sent SIGTERM on a
// lost lock before it is killed: Nomad's default kill_timeout.
const childKillGrace = 5 * time.Second

// The lock requests' conflicts (409s).
var (
	// errLockHeld is an acquisition refused: another holds the lock, or a
	// lost lock's delay lasts.
	errLockHeld = errors.New("the variable is locked by another, or a lost lock's delay lasts")
	// errLockNotHeld is a renewal or release refused: the lock is not
	// (or no longer) the one held.
	errLockNotHeld = errors.New("the lock is not held")
)

type varLockCommand struct{ *meta }

func (c *varLockCommand) Synopsis() string {
	return "Hold a lock on a variable while a child command runs"
}

func (c *varLockCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover var lock [options] <path> [@<spec>] <child>...
       drover var lock [options] @<spec> <child>...

  Locks the variable at <path> (PUT /v1/var/<path>?lock-acquire), making
  it if it does not exist, runs the child command while the lock is held,
  renewing the lock every half TTL, then releases the lock and exits with
  the child's exit code (128+N if signal N ended it). Of the var lock
  commands on one variable, only one runs its child at a time.

  A specification (@file, HCL or JSON by its extension .hcl or .json,
  else -in; as var put reads them) gives items to write with the lock,
  the path if <path> is not given, and, in JSON, the Lock's TTL and
  LockDelay. Standard input is the child's.

  While another holds the lock, or a lost lock's delay lasts, the command
  waits and tries again every -backoff (-early-return: exits with 1 at
  once; Nomad's exits with 0). Once the child runs, the lock is lost when
  a renewal is refused, or none succeeds within the TTL: the child and
  what it runs (its process group) are sent SIGTERM, killed once it has
  exited or 5 seconds later, and the command exits with 1. SIGINT and
  SIGTERM are passed on to the child's process group; while the command
  waits for the lock, they end it.

  The child runs in a shell, $SHELL or else /bin/sh, given its words
  joined by spaces; -shell=false runs the words directly. With ACLs, the
  token needs the variables write capability for the path.
` + apiOptions + `

Lock options:

  -ttl=DURATION      How long the lock lasts unless renewed: 10s to 24h
                     (default 15s).
  -delay=DURATION    How long no lock may be taken once a lock is lost
                     without a release (default 15s).
  -max-retry=N       How many times a lock request the agent did not
                     answer (unreachable, 429, 5xx) is tried again, after
                     1s, 2s, 4s...; 0 for none (default 5). A renewal
                     still failing then loses the lock.
  -backoff=DURATION  How long to wait before trying again to take a lock
                     held by another (default 1.1 times the TTL).
  -early-return      Exit with 1, without running the child, if the lock
                     is held by another.
  -in=FORMAT         hcl or json (the default): how to read a specification
                     file with neither extension.
  -shell             Run the child in a shell (default true).
  -verbose           Say what is done on standard error.`)
}

func (c *varLockCommand) Run(args []string) int {
	fs := c.flags("var lock", false)
	ttlStr := fs.String("ttl", "", "")
	delayStr := fs.String("delay", "", "")
	maxRetry := fs.Int("max-retry", 5, "")
	backoff := fs.Duration("backoff", 0, "")
	earlyReturn := fs.Bool("early-return", false, "")
	in := fs.String("in", outJSON, "")
	shell := fs.Bool("shell", true, "")
	verbose := fs.Bool("verbose", false, "")
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	say := func(string) {}
	if *verbose {
		say = func(msg string) { c.ui.Warn(msg) }
	}
	if c.namespace == "*" {
		c.ui.Error(errWildcardNamespace)
		return exitError
	}
	switch {
	case *in != outHCL && *in != outJSON:
		c.ui.Error(errInvalidInFormat)
		return exitError
	case *maxRetry < 0:
		return c.errorf("-max-retry=%d: give 0 or more retries", *maxRetry)
	case *backoff < 0:
		return c.errorf("-backoff=%s: give a positive duration", *backoff)
	}
	inSet := false
	fs.Visit(func(f *flag.Flag) { inSet = inSet || f.Name == "in" })

	// <path> or @spec, then @spec after a path, then the child's words.
	args = fs.Args()
	if len(args) < 2 {
		c.ui.Error(fmt.Sprintf("Not enough arguments (expected a path or @spec, then the child command; got %d)", len(args)))
		return exitError
	}
	spec := varSpec{in: *in}
	if isFileArg(args[0]) {
		if err := spec.readFile(args[0][1:], inSet, say); err != nil {
			c.ui.Error(err.Error())
			return exitError
		}
	} else {
		spec.path = cleanVarPath(args[0])
		say(fmt.Sprintf("Locking the variable at path %q", spec.path))
		if isFileArg(args[1]) {
			if err := spec.readFile(args[1][1:], inSet, say); err != nil {
				c.ui.Error(err.Error())
				return exitError
			}
			args = args[1:]
		}
	}
	child := args[1:]
	if len(child) == 0 {
		c.ui.Error("No child command to run while the lock is held")
		return exitError
	}
	v, err := c.makeVariable(spec)
	if err != nil {
		c.ui.Error(fmt.Sprintf("Failed to parse variable data: %v", err))
		return exitError
	}
	if v.Path == "" {
		c.ui.Error("A variable path is required: give it as the first argument, or as path in the specification")
		return exitError
	}
	if len(v.Items) == 0 {
		v.Items = nil // an existing variable keeps its items
	}
	if v.Lock == nil {
		v.Lock = &api.VariableLock{}
	}
	v.Lock.ID = ""
	// -ttl and -delay win over the specification's Lock, which wins over
	// Nomad's defaults.
	for _, d := range []struct {
		name, given string
		field       *string
		def         time.Duration
	}{{"TTL", *ttlStr, &v.Lock.TTL, api.DefaultLockTTL}, {"delay", *delayStr, &v.Lock.LockDelay, api.DefaultLockDelay}} {
		if d.given != "" {
			*d.field = d.given
		}
		if *d.field == "" {
			*d.field = d.def.String()
		}
		parsed, err := time.ParseDuration(*d.field)
		if err != nil || parsed <= 0 {
			return c.errorf("lock %s %q: give a positive duration, such as 15s", d.name, *d.field)
		}
		*d.field = parsed.String()
	}
	say(fmt.Sprintf("Lock TTL %s, delay %s", v.Lock.TTL, v.Lock.LockDelay))
	ttl, _ := time.ParseDuration(v.Lock.TTL)
	if *backoff == 0 {
		*backoff = ttl + ttl/10
	}

	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	// As var put: the specification's namespace unless -namespace says.
	if v.Namespace != "" {
		cl.Namespace = v.Namespace
	}
	l := &varLocker{cl: cl, path: v.Path, maxRetry: *maxRetry, say: say}

	// The signals are the child's once it runs; until then they end the
	// wait for the lock.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	waitCtx, stopWait := signal.NotifyContext(bg, os.Interrupt, syscall.SIGTERM)
	say("Attempting to acquire the lock")
	held, acquired, err := c.waitForLock(waitCtx, l, v, *backoff, *earlyReturn)
	interrupted := waitCtx.Err() != nil
	stopWait()
	switch {
	case err == nil && interrupted:
		// Interrupted as the lock was taken: the child is not run.
		c.release(l, held.LockID(), say)
		c.ui.Error("Interrupted before the child ran")
		return exitError
	case interrupted:
		c.ui.Error("Interrupted while waiting for the lock")
		return exitError
	case errors.Is(err, errLockHeld):
		c.ui.Error(fmt.Sprintf("Variable %q is locked by another (or a lost lock's delay lasts); not running the child (-early-return)", v.Path))
		return exitError
	case err != nil:
		return c.errorf("acquiring the lock on variable %q: %v", v.Path, err)
	}
	if held.Lock != nil {
		if d, err := time.ParseDuration(held.Lock.TTL); err == nil && d > 0 {
			ttl = d // the agent's word for it
		}
	}
	say(fmt.Sprintf("Variable %q locked (lock ID %s), ready to execute: %s", v.Path, held.LockID(), strings.Join(child, " ")))
	return c.runChild(l, held.LockID(), acquired, ttl, childCommand(child, *shell), sigs, say)
}

// waitForLock acquires the lock, trying again every backoff while another
// holds it (unless earlyReturn), until ctx ends. It returns the locked
// variable and when the request that locked it was sent, from which its
// lease runs.
func (c *varLockCommand) waitForLock(ctx context.Context, l *varLocker, v *api.Variable, backoff time.Duration, earlyReturn bool) (*api.Variable, time.Time, error) {
	for warned := false; ; warned = true {
		sent := time.Now()
		held, err := l.acquire(ctx, v)
		if err == nil || !errors.Is(err, errLockHeld) || earlyReturn {
			return held, sent, err
		}
		if !warned {
			c.ui.Warn(fmt.Sprintf("Variable %q is locked by another (or a lost lock's delay lasts); trying again every %s", v.Path, backoff))
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, sent, ctx.Err()
		case <-t.C:
		}
	}
}

// runChild runs the child while the lock id, taken at acquired, is held:
// a goroutine renews it, the signals are passed on to the child. It
// returns the command's exit code: the child's once it exits (and the
// lock is released), 1 if the lock is lost (and the child stopped).
func (c *varLockCommand) runChild(l *varLocker, id string, acquired time.Time, ttl time.Duration, cmd *exec.Cmd, sigs <-chan os.Signal, say func(string)) int {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.stdin(), c.out, c.stderr()
	// A grandchild left holding the CLI's output (when it is no file)
	// does not keep the command waiting.
	cmd.WaitDelay = childKillGrace
	// The child leads a process group of its own, so that what it runs
	// (a shell's commands) is stopped with it when the lock is lost: a
	// SIGTERM to the shell alone ends it and leaves them running without
	// the lock. The terminal's signals reach the group through sigs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.release(l, id, say)
		return c.errorf("starting the child: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ctx, cancel := context.WithCancel(bg)
	lost := make(chan error, 1)
	go func() { lost <- l.keep(ctx, id, acquired, ttl) }()
	for {
		select {
		case s := <-sigs:
			say(fmt.Sprintf("Passing %s on to the child", s))
			signalChild(cmd, s)
		case err := <-lost:
			cancel()
			c.ui.Error(fmt.Sprintf("Lock on variable %q lost (%v): stopping the child", l.path, err))
			stopChild(cmd, exited)
			return exitError
		case err := <-exited:
			cancel()
			<-lost
			if cmd.ProcessState == nil {
				c.release(l, id, say)
				return c.errorf("waiting for the child: %v", err)
			}
			code := exitCode(cmd.ProcessState)
			say(fmt.Sprintf("The child exited with %d", code))
			c.release(l, id, say)
			return code
		}
	}
}

// release releases the lock id; a failure is said, not fatal: the lock
// ends with its TTL anyway.
func (c *varLockCommand) release(l *varLocker, id string, say func(string)) {
	say("Releasing the lock")
	err := l.release(bg, id)
	switch {
	case errors.Is(err, errLockNotHeld):
		c.ui.Warn(fmt.Sprintf("The lock on variable %q was lost before the child exited", l.path))
	case err != nil:
		c.ui.Warn(fmt.Sprintf("Releasing the lock on variable %q: %v (it ends with its TTL)", l.path, err))
	}
}

// childCommand is the child to run: in $SHELL (else /bin/sh) given its
// words joined by spaces, as Nomad's, or the words themselves.
func childCommand(words []string, shell bool) *exec.Cmd {
	if !shell {
		return exec.Command(words[0], words[1:]...)
	}
	sh := os.Getenv("SHELL")
	if sh == "" {
		sh = "/bin/sh"
	}
	return exec.Command(sh, "-c", strings.Join(words, " "))
}

// signalChild sends sig to the child's process group: the child and what
// it runs.
func signalChild(cmd *exec.Cmd, sig os.Signal) {
	if s, ok := sig.(syscall.Signal); ok {
		_ = syscall.Kill(-cmd.Process.Pid, s)
		return
	}
	_ = cmd.Process.Signal(sig)
}

// stopChild stops a child whose lock is lost, and what it runs: SIGTERM,
// then SIGKILL once the child has exited or childKillGrace has passed
// (what it runs may outlive it). It returns once the child has exited.
func stopChild(cmd *exec.Cmd, exited <-chan error) {
	signalChild(cmd, syscall.SIGTERM)
	t := time.NewTimer(childKillGrace)
	defer t.Stop()
	select {
	case <-exited:
		signalChild(cmd, syscall.SIGKILL)
	case <-t.C:
		signalChild(cmd, syscall.SIGKILL)
		<-exited
	}
}

// exitCode is the exit code of a child that exited, as a shell reports
// it: 128+N when signal N ended it.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// varLocker makes the lock requests on the variable at path through the
// CLI's client. A request the agent did not answer (unreachable, 429,
// 5xx) is tried again up to maxRetry times, as Nomad's lock helpers do.
type varLocker struct {
	cl       *client.Client
	path     string
	maxRetry int
	say      func(string)
}

// acquire locks the variable v (its Lock's TTL and LockDelay; its items,
// if any, written) and returns it with its lock's ID; errLockHeld if
// another holds it.
func (l *varLocker) acquire(ctx context.Context, v *api.Variable) (*api.Variable, error) {
	var held api.Variable
	if err := l.put(ctx, "lock-acquire", v, &held); err != nil {
		if isConflict(err) {
			return nil, errLockHeld
		}
		return nil, err
	}
	if held.LockID() == "" {
		return nil, errors.New("the agent answered the acquisition without a lock ID")
	}
	return &held, nil
}

// renew extends the lock id's lease by its TTL; errLockNotHeld if it is
// not held.
func (l *varLocker) renew(ctx context.Context, id string) error {
	return l.byID(ctx, "lock-renew", id)
}

// release takes the lock id off; errLockNotHeld if it is not held.
func (l *varLocker) release(ctx context.Context, id string) error {
	return l.byID(ctx, "lock-release", id)
}

func (l *varLocker) byID(ctx context.Context, op, id string) error {
	err := l.put(ctx, op, &api.Variable{Lock: &api.VariableLock{ID: id}}, nil)
	if isConflict(err) {
		return errLockNotHeld
	}
	return err
}

// put sends the lock operation op, trying it again after retryDelay while
// the agent does not answer it, at most maxRetry times and until ctx ends.
func (l *varLocker) put(ctx context.Context, op string, in, out any) error {
	uri := varURL(l.path, 0, false) + "?" + op
	for attempt := 0; ; attempt++ {
		_, err := l.cl.Put(ctx, uri, in, out)
		if err == nil || attempt >= l.maxRetry || !retriable(err) || ctx.Err() != nil {
			return err
		}
		delay := retryDelay(attempt)
		l.say(fmt.Sprintf("%s: %v; trying again in %s", op, err, delay))
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// keep renews the lock id every half TTL from when it was last renewed
// (acquired, at first), until ctx ends (nil), or until the lock is lost
// (the error says why): a renewal refused, failing after its retries, or
// not answered before the lease ended.
func (l *varLocker) keep(ctx context.Context, id string, renewed time.Time, ttl time.Duration) error {
	for {
		t := time.NewTimer(time.Until(renewed.Add(ttl / 2)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		sent := time.Now()
		lease, cancel := context.WithDeadline(ctx, renewed.Add(ttl))
		err := l.renew(lease, id)
		ended := errors.Is(lease.Err(), context.DeadlineExceeded)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			renewed = sent
		case errors.Is(err, errLockNotHeld):
			return fmt.Errorf("renewal refused: %w", err)
		case ended:
			return fmt.Errorf("no renewal succeeded within the lock's TTL of %s: %w", ttl, err)
		default:
			return fmt.Errorf("renewal failed: %w", err)
		}
	}
}

// retryDelay is how long to wait before trying a request again after its
// attempt-th try (from 0) failed: 1s, doubling, at most 30s.
func retryDelay(attempt int) time.Duration {
	return min(time.Second<<min(attempt, 5), 30*time.Second)
}

// retriable reports whether a failed request may succeed if tried again:
// the agent was not reached or could not answer it (429, 5xx).
func retriable(err error) bool {
	var e *client.APIError
	if !errors.As(err, &e) {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	return e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// isConflict reports whether err is the API's 409.
func isConflict(err error) bool {
	var e *client.APIError
	return errors.As(err, &e) && e.Status == http.StatusConflict
}
