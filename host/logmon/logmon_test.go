package logmon

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestHub_LevelsAndSlowSubscribers(t *testing.T) {
	h := NewHub()
	log := zerolog.New(h).Level(zerolog.DebugLevel)
	info := h.Subscribe(zerolog.InfoLevel, 10)
	debug := h.Subscribe(zerolog.DebugLevel, 1)
	log.Debug().Msg("details")
	log.Info().Msg("news")

	if got := string(<-info.Lines()); !strings.Contains(got, `"message":"news"`) {
		t.Fatalf("info subscriber got %s first, want the info line", got)
	}
	if got := string(<-debug.Lines()); !strings.Contains(got, `"message":"details"`) {
		t.Fatalf("debug subscriber got %s", got)
	}
	// The debug subscriber's buffer of one was full when "news" came.
	if n := debug.Dropped(); n != 1 {
		t.Fatalf("dropped %d, want 1", n)
	}
	if n := debug.Dropped(); n != 0 {
		t.Fatalf("Dropped did not reset: %d", n)
	}
	info.Close()
	log.Info().Msg("after close")
	select {
	case l := <-info.Lines():
		t.Fatalf("a closed subscription got %s", l)
	default:
	}
}
