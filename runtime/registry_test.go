package runtime_test

import (
	"errors"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime"
)

func TestRegistry_Refusals(t *testing.T) {
	r := runtime.NewRegistry()
	at := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	r.Refuse("/p/b.wasm", errors.New("b is broken"), at)
	r.Refuse("/p/a.wasm", errors.New("a is broken"), at)
	r.Refuse("/p/a.wasm", errors.New("a is still broken"), at.Add(time.Second))
	got := r.Refused()
	if len(got) != 2 || got[0].Path != "/p/a.wasm" || got[0].Error != "a is still broken" || !got[0].Time.Equal(at.Add(time.Second)) ||
		got[1].Path != "/p/b.wasm" {
		t.Fatalf("Refused = %+v, want a (latest reason) then b", got)
	}
	r.ClearRefusal("/p/a.wasm")
	if _, ok := r.Refusal("/p/a.wasm"); ok {
		t.Fatal("a is still refused after ClearRefusal")
	}
	if f, ok := r.Refusal("/p/b.wasm"); !ok || f.Error != "b is broken" {
		t.Fatalf("Refusal(b) = %+v, %v", f, ok)
	}
}
