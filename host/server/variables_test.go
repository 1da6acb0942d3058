package server_test

import (
	"bytes"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/state"
)

// A variable is stored encrypted (its items appear nowhere in the state's
// bytes) and decrypts to what was written; check-and-set writes and
// deletes compare modify indexes, and a lost one names the variable as it
// is.
func TestVariables_EncryptedWithCheckAndSet(t *testing.T) {
	s := servertest.New(t, nil, nil)
	items := map[string]string{"user": "admin", "password": "s3cret-value"}
	v, index, err := s.SetVariable("default", "app/db", items, server.VariableCheck{CAS: true})
	if err != nil {
		t.Fatal(err)
	}
	if v.CreateIndex != index || v.ModifyIndex != index || v.CreateTime == 0 || v.KeyID == "" {
		t.Fatalf("stored variable = %+v at %d", v, index)
	}
	snap := s.Store().Snapshot()
	stored := snap.Variable("default", "app/db")
	if bytes.Contains(stored.Data, []byte("s3cret-value")) || bytes.Contains(stored.Data, []byte("password")) {
		t.Fatal("the variable's items are stored in the clear")
	}
	got, err := s.DecryptVariable(snap, stored)
	if err != nil || !maps.Equal(got, items) {
		t.Fatalf("decrypted = %v, %v; want %v", got, err, items)
	}
	// Data moved to another path does not decrypt there.
	moved := *stored
	moved.Path = "app/other"
	if _, err := s.DecryptVariable(snap, &moved); err == nil {
		t.Error("a variable's data decrypted under another path")
	}
	if keys := snap.RootKeys(); len(keys) != 1 || keys[0].State != state.RootKeyActive || keys[0].KeyID != v.KeyID {
		t.Fatalf("keyring after the first write = %+v", keys)
	}

	var c *server.VariableConflict
	_, _, err = s.SetVariable("default", "app/db", map[string]string{"user": "x"}, server.VariableCheck{CAS: true})
	if !errors.As(err, &c) || c.Current == nil || c.Current.ModifyIndex != index || !errors.Is(err, server.ErrConflict) {
		t.Fatalf("create over an existing variable: err = %v", err)
	}
	_, _, err = s.SetVariable("default", "app/db", map[string]string{"user": "x"}, server.VariableCheck{CAS: true, Index: index + 100})
	if !errors.As(err, &c) {
		t.Fatalf("write at a stale index: err = %v", err)
	}
	v2, index2, err := s.SetVariable("default", "app/db", map[string]string{"user": "x"}, server.VariableCheck{CAS: true, Index: index})
	if err != nil || v2.CreateIndex != index || v2.ModifyIndex != index2 || v2.CreateTime != v.CreateTime {
		t.Fatalf("check-and-set at the current index: %+v, %v", v2, err)
	}
	if _, err := s.DeleteVariable("default", "app/db", server.VariableCheck{CAS: true, Index: index}); !errors.As(err, &c) || c.Current.ModifyIndex != index2 {
		t.Fatalf("delete at a stale index: err = %v", err)
	}
	if _, err := s.DeleteVariable("default", "nope", server.VariableCheck{CAS: true, Index: 3}); !errors.As(err, &c) || c.Current != nil {
		t.Fatalf("delete of no variable at index 3: err = %v", err)
	}
	if _, err := s.DeleteVariable("default", "app/db", server.VariableCheck{CAS: true, Index: index2}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteVariable("default", "app/db", server.VariableCheck{}); err != nil {
		t.Fatalf("a delete of what is not there: %v", err)
	}
	if s.Store().Snapshot().Variable("default", "app/db") != nil {
		t.Fatal("deleted variable still stored")
	}
}

// Writes are checked as Nomad checks them.
func TestVariables_Validation(t *testing.T) {
	s := servertest.New(t, nil, nil)
	one := map[string]string{"k": "v"}
	for _, c := range []struct {
		ns, path string
		items    map[string]string
		want     string
	}{
		{"default", "", one, "variable requires path"},
		{"default", "a b", one, "invalid path"},
		{"default", strings.Repeat("a", 129), one, "invalid path"},
		{"default", "nomad", one, `"nomad" is a reserved top-level directory path`},
		{"default", "nomad/other", one, `only paths at "nomad/jobs"`},
		{"default", "nomad/job-templates", one, `"nomad/job-templates" is a reserved directory path`},
		{"default", "nomad/job-templates/a/b", one, `"nomad/job-templates" is a reserved directory path`},
		{"*", "a", one, `can not target wildcard ("*") namespace`},
		{"a.b", "a", one, "invalid namespace"},
		{"default", "a", nil, "empty variables are invalid"},
		{"default", "a", map[string]string{"k": strings.Repeat("v", 64<<10)}, "limited to 64KiB"},
	} {
		if _, _, err := s.SetVariable(c.ns, c.path, c.items, server.VariableCheck{}); !errors.Is(err, server.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SetVariable(%q, %q): err = %v, want ErrInvalid saying %q", c.ns, c.path, err, c.want)
		}
	}
	for _, path := range []string{"nomad/jobs", "nomad/jobs/web/g/t", "nomad/job-templates/t", "a-b_c~d/e"} {
		if _, _, err := s.SetVariable("default", path, one, server.VariableCheck{}); err != nil {
			t.Errorf("SetVariable(%q): %v", path, err)
		}
	}
}

// A rotation makes a new active key and keeps the old one, which still
// decrypts; a full one re-encrypts every variable with the new key, keeps
// their indexes, and leaves the old key inactive, which can then be
// removed. A key in use is not removed.
func TestVariables_KeyringRotation(t *testing.T) {
	s := servertest.New(t, nil, nil)
	for _, p := range []string{"a", "b", "c"} {
		if _, _, err := s.SetVariable("default", p, map[string]string{"k": p}, server.VariableCheck{}); err != nil {
			t.Fatal(err)
		}
	}
	first := s.Store().Snapshot().ActiveRootKey()
	k2, _, err := s.RotateRootKey("", false)
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Store().Snapshot()
	if snap.ActiveRootKey().KeyID != k2.KeyID || snap.RootKey(first.KeyID).State != state.RootKeyInactive {
		t.Fatalf("keyring after a rotation: %+v", snap.RootKeys())
	}
	if items, err := s.DecryptVariable(snap, snap.Variable("default", "a")); err != nil || items["k"] != "a" {
		t.Fatalf("a variable of the old key: %v, %v", items, err)
	}
	if _, err := s.DeleteRootKey(first.KeyID); !errors.Is(err, server.ErrConflict) {
		t.Fatalf("removing a key variables use: err = %v", err)
	}
	if _, err := s.DeleteRootKey(k2.KeyID); !errors.Is(err, server.ErrConflict) {
		t.Fatalf("removing the active key: err = %v", err)
	}
	if _, _, err := s.RotateRootKey("xchacha20", false); !errors.Is(err, server.ErrInvalid) {
		t.Fatalf("an unknown algorithm: err = %v", err)
	}
	before := snap.Variable("default", "b")
	k3, _, err := s.RotateRootKey(server.RootKeyAlgorithm, true)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap = s.Store().Snapshot()
		if len(snap.VariablesEncryptedWith(k3.KeyID, 0)) == 3 && snap.RootKey(k2.KeyID).State == state.RootKeyInactive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("variables not re-encrypted: keyring %+v", snap.RootKeys())
		}
		time.Sleep(20 * time.Millisecond)
	}
	after := snap.Variable("default", "b")
	if after.ModifyIndex != before.ModifyIndex || after.ModifyTime != before.ModifyTime || bytes.Equal(after.Data, before.Data) {
		t.Fatalf("re-encrypted variable %+v, before %+v", after, before)
	}
	if items, err := s.DecryptVariable(snap, after); err != nil || items["k"] != "b" {
		t.Fatalf("re-encrypted variable decrypts to %v, %v", items, err)
	}
	for _, id := range []string{first.KeyID, k2.KeyID} {
		if _, err := s.DeleteRootKey(id); err != nil {
			t.Fatalf("removing unused key %s: %v", id, err)
		}
	}
	if _, err := s.DeleteRootKey(first.KeyID); !errors.Is(err, server.ErrNotFound) {
		t.Fatalf("removing a key twice: err = %v", err)
	}
}

// A variable lock: acquired on a new variable without items (as Nomad's
// lock helpers do) or with some; while held, only its holder writes the
// variable; another's acquisition, renewal or release is a conflict; a
// renewal extends the lease; a lease that ends loses the lock, and none is
// acquired during its delay; a release frees it at once.
func TestVariables_Locks(t *testing.T) {
	s := servertest.New(t, nil, nil)
	var mu sync.Mutex
	clock := time.Now()
	at := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(d)
	}
	start := clock
	server.SetVariableLockClock(s, func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	})
	expire := func() {
		t.Helper()
		if err := server.ExpireVariableLocks(s); err != nil {
			t.Fatal(err)
		}
	}
	var c *server.VariableConflict
	v, _, err := s.AcquireVariableLock("default", "leader", nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if v.Lock == nil || len(v.Lock.ID) != 36 || v.Lock.TTL != int64(15*time.Second) || v.Lock.LockDelay != int64(15*time.Second) {
		t.Fatalf("lock = %+v", v.Lock)
	}
	id := v.Lock.ID
	if items, err := s.DecryptVariable(s.Store().Snapshot(), v); err != nil || len(items) != 0 {
		t.Fatalf("a lock's new variable holds %v, %v", items, err)
	}
	if _, _, err := s.AcquireVariableLock("default", "leader", nil, 0, 0); !errors.As(err, &c) || c.Current.Lock.ID != id {
		t.Fatalf("second acquisition: err = %v", err)
	}
	for _, tc := range []struct {
		name    string
		ttl     time.Duration
		delay   time.Duration
		want    string
		another string
	}{
		{"short", 5 * time.Second, 0, "TTL must be between 10 seconds and 24 hours", "x"},
		{"long", 25 * time.Hour, 0, "TTL must be between 10 seconds and 24 hours", "x"},
		{"negative", 0, -time.Second, "Lock delay and TTL must be positive", "x"},
	} {
		if _, _, err := s.AcquireVariableLock("default", tc.another, nil, tc.ttl, tc.delay); !errors.Is(err, server.ErrInvalid) ||
			!strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}

	// Only the holder writes it.
	if _, _, err := s.SetVariable("default", "leader", map[string]string{"k": "v"}, server.VariableCheck{}); !errors.As(err, &c) {
		t.Fatalf("a write without the lock: err = %v", err)
	}
	if _, err := s.DeleteVariable("default", "leader", server.VariableCheck{}); !errors.As(err, &c) {
		t.Fatalf("a delete without the lock: err = %v", err)
	}
	w, _, err := s.SetVariable("default", "leader", map[string]string{"k": "v"}, server.VariableCheck{LockID: id})
	if err != nil || w.Lock == nil || w.Lock.ID != id {
		t.Fatalf("the holder's write = %+v, %v", w, err)
	}
	if _, err := s.RenewVariableLock("default", "leader", "other"); !errors.As(err, &c) {
		t.Fatalf("another's renewal: err = %v", err)
	}
	if _, _, err := s.ReleaseVariableLock("default", "leader", "other"); !errors.As(err, &c) {
		t.Fatalf("another's release: err = %v", err)
	}

	// The lease: 15 s from the acquisition, then from the renewal.
	at(10 * time.Second)
	expire()
	if got := s.Store().Snapshot().Variable("default", "leader"); got.Lock == nil {
		t.Fatal("the lock was lost within its TTL")
	}
	if _, err := s.RenewVariableLock("default", "leader", id); err != nil {
		t.Fatal(err)
	}
	at(10 * time.Second) // 20 s after the acquisition, 10 after the renewal
	expire()
	if got := s.Store().Snapshot().Variable("default", "leader"); got.Lock == nil {
		t.Fatal("the lock was lost within the TTL its renewal gave")
	}
	at(6 * time.Second)
	expire()
	lost := start.Add(26 * time.Second)
	got := s.Store().Snapshot().Variable("default", "leader")
	if got.Lock != nil || got.LockDelayUntil != lost.Add(15*time.Second).UnixNano() {
		t.Fatalf("after its lease ended: %+v", got)
	}
	if items, _ := s.DecryptVariable(s.Store().Snapshot(), got); items["k"] != "v" {
		t.Fatalf("the lost lock took the items: %v", items)
	}
	// The delay lasts (the server's clock is behind the leases'); the holder's renewal
	// finds no lock; anyone writes the variable.
	if _, _, err := s.AcquireVariableLock("default", "leader", nil, 0, 0); !errors.As(err, &c) {
		t.Fatalf("an acquisition during the delay: err = %v", err)
	}
	if _, err := s.RenewVariableLock("default", "leader", id); !errors.As(err, &c) {
		t.Fatalf("a renewal of a lost lock: err = %v", err)
	}
	if _, _, err := s.SetVariable("default", "leader", map[string]string{"k": "w"}, server.VariableCheck{}); err != nil {
		t.Fatal(err)
	}

	// A release frees it at once.
	l, _, err := s.AcquireVariableLock("default", "other", map[string]string{"a": "b"}, 10*time.Second, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r, _, err := s.ReleaseVariableLock("default", "other", l.Lock.ID); err != nil || r.Lock != nil || r.LockDelayUntil != 0 {
		t.Fatalf("release = %+v, %v", r, err)
	}
	if _, _, err := s.AcquireVariableLock("default", "other", nil, 0, 0); err != nil {
		t.Fatalf("acquisition after a release: %v", err)
	}

	// The leader's own loop takes a lock off once its lease ends.
	at(time.Minute)
	servertest.WaitFor(t, "the leader to take the lock off", func() bool {
		return s.Store().Snapshot().Variable("default", "other").Lock == nil
	})
}

// TestVariables_LockRenewedAfterItsTTLIsLost: a lock whose TTL passed
// without a renewal is lost, whether or not the leader's loop has taken it
// off yet: a renewal that comes later is a conflict, as Nomad's (its TTL
// timer has fired), not a lease that brings it back. Otherwise a renewal
// made while the loop's expiry was being committed succeeded, and its
// holder went on for a whole TTL with a lock that was gone.
func TestVariables_LockRenewedAfterItsTTLIsLost(t *testing.T) {
	s := servertest.New(t, nil, nil)
	var mu sync.Mutex
	clock := time.Now()
	server.SetVariableLockClock(s, func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	})
	v, _, err := s.AcquireVariableLock("default", "leader", nil, 10*time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	clock = clock.Add(11 * time.Second)
	mu.Unlock()
	var c *server.VariableConflict
	if _, err := s.RenewVariableLock("default", "leader", v.Lock.ID); !errors.As(err, &c) {
		t.Fatalf("a renewal 1 s after the TTL: err = %v, want a conflict", err)
	}
	if err := server.ExpireVariableLocks(s); err != nil {
		t.Fatal(err)
	}
	if got := s.Store().Snapshot().Variable("default", "leader"); got.Lock != nil {
		t.Fatalf("the lock outlived its TTL: %+v", got.Lock)
	}
}

// A new variable needs its namespace, checked before the write: before
// any namespace or node pool is written, the write's entry does not check
// it (a server's rows may still be those an older version's entries
// made), so the check before it is what refuses. A variable that exists
// is written as ever.
func TestVariables_NewVariableNeedsItsNamespace(t *testing.T) {
	s := servertest.New(t, nil, nil)
	items := map[string]string{"k": "v"}
	if _, _, err := s.SetVariable("staging", "app/db", items, server.VariableCheck{}); !errors.Is(err, server.ErrInvalid) ||
		!strings.Contains(err.Error(), `variable "app/db" is in nonexistent namespace "staging"`) {
		t.Fatalf("set in a namespace that does not exist: %v", err)
	}
	if _, _, err := s.AcquireVariableLock("staging", "app/lock", items, 0, 0); !errors.Is(err, server.ErrInvalid) ||
		!strings.Contains(err.Error(), `nonexistent namespace "staging"`) {
		t.Fatalf("lock in a namespace that does not exist: %v", err)
	}
	if s.Store().Snapshot().Namespace("staging") != nil {
		t.Fatal("a refused variable made its namespace")
	}
	servertest.Namespaces(t, s, "staging")
	if _, _, err := s.SetVariable("staging", "app/db", items, server.VariableCheck{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AcquireVariableLock("staging", "app/lock", items, 0, 0); err != nil {
		t.Fatal(err)
	}
}
