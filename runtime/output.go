package runtime

import (
	"bytes"
	"io"
	"strings"
	"sync"

	"github.com/rs/zerolog"
)

// maxOutputLine bounds one logged line of plugin output; longer lines are
// split, so a plugin that never writes a newline cannot grow the buffer.
const maxOutputLine = 16 << 10

// OutputLog returns a writer that logs what a plugin writes to stream
// (stdout, stderr) on log, one entry per line, tagged with the plugin's
// name. It is safe for concurrent use.
func OutputLog(log zerolog.Logger, plugin, stream string) io.Writer {
	return &outputLog{log: log.With().Str("plugin", plugin).Str("stream", stream).Logger()}
}

type outputLog struct {
	log zerolog.Logger
	mu  sync.Mutex
	buf []byte
}

func (o *outputLog) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(o.buf, p...)
	for {
		i := bytes.IndexByte(o.buf, '\n')
		if i < 0 {
			if len(o.buf) < maxOutputLine {
				break
			}
			i = maxOutputLine
		}
		o.log.Info().Msg(string(bytes.TrimRight(o.buf[:i], "\r")))
		if i < len(o.buf) && o.buf[i] == '\n' {
			i++
		}
		o.buf = append(o.buf[:0], o.buf[i:]...)
	}
	return len(p), nil
}

// Capture keeps the first bytes an instance writes to stderr during one
// call (a Go runtime's "fatal error: ..." or "panic: ..." line comes
// first), to explain a crash in the error it causes. It is safe for
// concurrent use.
type Capture struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// NewCapture returns a Capture keeping up to max bytes.
func NewCapture(max int) *Capture { return &Capture{max: max} }

// Write implements io.Writer.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Reset forgets what was kept; call it before each call.
func (c *Capture) Reset() {
	c.mu.Lock()
	c.buf = c.buf[:0]
	c.mu.Unlock()
}

// Contains reports whether what was kept holds s.
func (c *Capture) Contains(s string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Contains(c.buf, []byte(s))
}

// HasPrefix reports whether what was kept starts with s.
func (c *Capture) HasPrefix(s string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.HasPrefix(c.buf, []byte(s))
}

// Explain adds what was kept, if anything, to an error: after its first
// line, since an eval's description keeps only that line and a trap's
// error goes on with wazero's stack trace, which says less about the
// failure than the plugin's own "panic: ..." or "fatal error: ...".
func (c *Capture) Explain(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := bytes.TrimSpace(c.buf); len(s) > 0 {
		return &explained{err: err, stderr: string(s)}
	}
	return err
}

// explained is an error with the start of the plugin's stderr quoted.
type explained struct {
	err    error
	stderr string
}

func (e *explained) Error() string {
	first, rest, multiline := strings.Cut(e.err.Error(), "\n")
	msg := first + " (plugin stderr: " + e.stderr + ")"
	if multiline {
		msg += "\n" + rest
	}
	return msg
}

func (e *explained) Unwrap() error { return e.err }
