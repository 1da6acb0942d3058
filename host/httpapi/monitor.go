package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"time"

	"github.com/drover-sched/drover/host/logmon"
	"github.com/rs/zerolog"
)

// StreamFrame is one frame of a streamed log, as Nomad's: Data holds
// log lines (base64 in JSON). A frame without data is a heartbeat.
type StreamFrame struct {
	Offset int64  `json:",omitempty"`
	Data   []byte `json:",omitempty"`
}

// monitorHeartbeat is how often a quiet monitor stream sends an empty
// frame.
const monitorHeartbeat = 10 * time.Second

// SetLogs makes /v1/agent/monitor stream the agent's log from hub.
func (a *API) SetLogs(hub *logmon.Hub) { a.logs = hub }

// monitor serves GET /v1/agent/monitor as Nomad does: the agent's log as
// it is written, in frames, from log_level (default info; the agent's own
// level still applies) up, as text or, with log_json, as JSON lines.
func (a *API) monitor(w http.ResponseWriter, r *http.Request) (any, error) {
	if a.logs == nil {
		return nil, errorf(http.StatusNotImplemented, "this agent does not stream its log")
	}
	q := r.URL.Query()
	level := zerolog.InfoLevel
	if v := q.Get("log_level"); v != "" {
		l, err := zerolog.ParseLevel(v)
		if err != nil || l == zerolog.NoLevel {
			return nil, errorf(http.StatusBadRequest, "log_level=%q: want trace, debug, info, warn or error", v)
		}
		level = l
	}
	asJSON, err := boolParam(r, "log_json")
	if err != nil {
		return nil, err
	}
	sub := a.logs.Subscribe(level, 512)
	defer sub.Close()
	ctx, stop, send := a.startStream(w, r)
	defer stop()
	var text bytes.Buffer
	console := zerolog.ConsoleWriter{Out: &text, NoColor: true, TimeFormat: time.RFC3339}
	heartbeat := time.NewTicker(monitorHeartbeat)
	defer heartbeat.Stop()
	var offset int64
	if !send(StreamFrame{}) {
		return streamed, nil
	}
	for {
		var line []byte
		select {
		case <-ctx.Done():
			return streamed, nil
		case <-heartbeat.C:
			if !send(StreamFrame{}) {
				return streamed, nil
			}
			continue
		case line = <-sub.Lines():
		}
		if !asJSON {
			text.Reset()
			if _, err := console.Write(line); err != nil {
				continue
			}
			line = bytes.Clone(text.Bytes())
		}
		if n := sub.Dropped(); n > 0 {
			line = append([]byte(fmt.Sprintf("[%d log lines dropped: the monitor did not keep up]\n", n)), line...)
		}
		if !send(StreamFrame{Offset: offset, Data: line}) {
			return streamed, nil
		}
		offset += int64(len(line))
	}
}
