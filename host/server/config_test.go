package server_test

import (
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/server"
)

// The search limits must be at least 1: Nomad's agent ignores a lower one,
// which here would refuse every fuzzy search or examine nothing.
func TestConfig_ValidateSearch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*server.SearchConfig)
	}{
		{"no objects examined", func(c *server.SearchConfig) { c.LimitQuery = 0 }},
		{"no results", func(c *server.SearchConfig) { c.LimitResults = 0 }},
		{"empty terms", func(c *server.SearchConfig) { c.MinTermLength = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := server.DefaultConfig()
			cfg.Dev = true
			tc.modify(&cfg.Search)
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "search") {
				t.Fatalf("err = %v, want one about search", err)
			}
		})
	}
	cfg := server.DefaultConfig()
	cfg.Dev = true
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}
