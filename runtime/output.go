package runtime

import (
	"bytes"
	"io"
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
