package fsm

import (
	"bytes"
	"errors"
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/rs/zerolog"
	"github.com/tinylib/msgp/msgp"
)

// Variable and root key entries, applied through the log: check-and-set
// compares modify indexes as the entry applies, a write needs a key the
// keyring holds, a rekey keeps indexes and times, one key at most is
// active, and a key in use is not deleted.
func TestFSM_VariableEntries(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	key := func(id, st string) *state.RootKey {
		return &state.RootKey{KeyID: id, Algorithm: "aes256-gcm", State: st, Key: []byte(id)}
	}
	v := func(path, keyID string, data byte) *state.Variable {
		return &state.Variable{Namespace: "default", Path: path, KeyID: keyID, Data: []byte{data}, CreateTime: 10, ModifyTime: int64(data)}
	}
	apply := func(op string, v *state.Variable, check uint64) *VariableApplyRequest {
		return &VariableApplyRequest{Op: op, Var: v, CheckIndex: check}
	}
	steps := []struct {
		typ  MessageType
		msg  msgp.Marshaler
		want error
	}{
		{VariableApplyRequestType, apply(VarOpSet, v("a", "k1", 1), 0), ErrInactiveRootKey}, // 1: no such key yet
		{RootKeyUpsertRequestType, &RootKeyUpsertRequest{Keys: []*state.RootKey{key("k1", state.RootKeyActive)}}, nil},
		{VariableApplyRequestType, apply(VarOpCAS, v("a", "k1", 3), 0), nil},                                                   // 3: create if absent
		{VariableApplyRequestType, apply(VarOpCAS, v("a", "k1", 4), 0), ErrConflict},                                           // exists now
		{VariableApplyRequestType, apply(VarOpCAS, v("a", "k1", 5), 4), ErrConflict},                                           // at 3, not 4
		{VariableApplyRequestType, apply(VarOpCAS, v("a", "k1", 6), 3), nil},                                                   // 6
		{VariableApplyRequestType, apply(VarOpSet, v("b", "k1", 7), 0), nil},                                                   // 7
		{RootKeyUpsertRequestType, &RootKeyUpsertRequest{Keys: []*state.RootKey{key("k2", state.RootKeyActive)}}, ErrConflict}, // two active
		{RootKeyUpsertRequestType, &RootKeyUpsertRequest{Keys: []*state.RootKey{key("k1", state.RootKeyRekeying), key("k2", state.RootKeyActive)}}, nil},
		{VariableApplyRequestType, apply(VarOpRekey, v("a", "k2", 99), 3), ErrConflict},  // a stale rekey
		{VariableApplyRequestType, apply(VarOpRekey, v("a", "k2", 99), 6), nil},          // 11: keeps index 6
		{RootKeyDeleteRequestType, &RootKeyDeleteRequest{KeyID: "k2"}, ErrRootKeyInUse},  // active
		{RootKeyDeleteRequestType, &RootKeyDeleteRequest{KeyID: "k1"}, ErrRootKeyInUse},  // b is encrypted with it
		{VariableApplyRequestType, apply(VarOpDeleteCAS, v("b", "", 0), 6), ErrConflict}, // at 7
		{VariableApplyRequestType, apply(VarOpDeleteCAS, v("b", "", 0), 7), nil},         // 15
		{VariableApplyRequestType, apply(VarOpDelete, v("b", "", 0), 0), nil},            // gone: no error
		{VariableApplyRequestType, apply(VarOpDeleteCAS, v("nope", "", 0), 0), nil},      // absent, as asked
		{RootKeyUpsertRequestType, &RootKeyUpsertRequest{Keys: []*state.RootKey{key("k1", "retired")}}, ErrBadEntry},
		{RootKeyDeleteRequestType, &RootKeyDeleteRequest{KeyID: "k1"}, nil},                  // 19
		{VariableApplyRequestType, apply(VarOpSet, v("c", "k1", 20), 0), ErrInactiveRootKey}, // deleted key
		{VariableApplyRequestType, apply("merge", v("c", "k2", 21), 0), ErrBadEntry},
	}
	for i, st := range steps {
		err := applyEntry(t, f, uint64(i+1), st.typ, st.msg)
		if !errors.Is(err, st.want) {
			t.Fatalf("step %d (%T): err = %v, want %v", i+1, st.msg, err, st.want)
		}
		// The server answers ErrConflict as a lost check-and-set (a 409
		// with the variable as it is): nothing else may look like one.
		if st.want != ErrConflict && errors.Is(err, ErrConflict) {
			t.Fatalf("step %d (%T): err = %v, a check-and-set conflict", i+1, st.msg, err)
		}
	}
	snap := store.Snapshot()
	a := snap.Variable("default", "a")
	if a == nil || a.KeyID != "k2" || a.Data[0] != 99 || a.CreateIndex != 3 || a.ModifyIndex != 6 || a.CreateTime != 10 || a.ModifyTime != 6 {
		t.Fatalf("variable a = %+v; want created at 3, modified at 6 (time 6), re-encrypted with k2", a)
	}
	if snap.Variable("default", "b") != nil || snap.Variable("default", "c") != nil {
		t.Error("a deleted or refused variable is in the state")
	}
	if keys := snap.RootKeys(); len(keys) != 1 || keys[0].KeyID != "k2" || snap.ActiveRootKey() != keys[0] {
		t.Errorf("keyring = %+v, want k2 alone and active", keys)
	}
	if got := snap.TableIndex(state.TableVariables); got != 15 {
		t.Errorf("variables table index = %d, want 15 (the last delete)", got)
	}
}

// A snapshot keeps variables and root keys with their indexes; one
// written before variables existed restores without them.
func TestSnapshot_Variables(t *testing.T) {
	src := richState(t)
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, src.Snapshot()); err != nil {
		t.Fatal(err)
	}
	full := buf.Bytes()
	dst, err := ReadSnapshot(bytes.NewReader(full))
	if err != nil {
		t.Fatal(err)
	}
	a, b := src.Snapshot(), dst.Snapshot()
	if d := compare(a, b); d != "" {
		t.Fatal(d)
	}
	v := b.Variable("prod", "nomad/jobs/web")
	if v == nil || v.KeyID != "k-2" || v.CreateIndex == 0 || v.CreateIndex != a.Variable("prod", "nomad/jobs/web").CreateIndex {
		t.Fatalf("variable = %+v", v)
	}
	for _, table := range []string{state.TableVariables, state.TableRootKeys} {
		if b.TableIndex(table) == 0 || b.TableIndex(table) != a.TableIndex(table) {
			t.Errorf("%s table index %d, want %d", table, b.TableIndex(table), a.TableIndex(table))
		}
	}

	old := withoutRecords(t, full, []byte{recVariable, recRootKey}, state.TableVariables, state.TableRootKeys)
	if len(old) >= len(full) {
		t.Fatal("found no variable records to leave out")
	}
	dst, err = ReadSnapshot(bytes.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	if s := dst.Snapshot(); len(s.Variables("*", "")) != 0 || len(s.RootKeys()) != 0 || s.TableIndex(state.TableVariables) != 0 {
		t.Error("a snapshot without variables restored some")
	}
}

// The autopilot configuration's entry: a check-and-set applies only at the
// stored configuration's modify index (0 before any); the first write's
// index stays its create index.
func TestFSM_AutopilotConfigEntry(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	set := func(cas bool, index uint64, logs uint64) *AutopilotConfigRequest {
		return &AutopilotConfigRequest{Config: &state.AutopilotConfig{MaxTrailingLogs: logs}, CAS: cas, ModifyIndex: index}
	}
	for i, st := range []struct {
		msg  *AutopilotConfigRequest
		want error
	}{
		{set(true, 5, 1), ErrConflict}, // nothing stored: only 0
		{set(true, 0, 2), nil},         // 2
		{set(true, 0, 3), ErrConflict},
		{set(false, 0, 4), nil}, // 4
		{set(true, 4, 5), nil},  // 5
	} {
		if err := applyEntry(t, f, uint64(i+1), AutopilotConfigRequestType, st.msg); !errors.Is(err, st.want) {
			t.Fatalf("step %d: err = %v, want %v", i+1, err, st.want)
		}
	}
	c := store.Snapshot().AutopilotConfig()
	if c == nil || c.MaxTrailingLogs != 5 || c.CreateIndex != 2 || c.ModifyIndex != 5 || c.Key != state.AutopilotConfigKey {
		t.Fatalf("autopilot configuration = %+v", c)
	}
}

// A variable is written only with the active key: one sealed with a key a
// rotation has since retired (rekeying or inactive) is refused, so no
// write lands on a key a full rotation is moving variables off.
func TestFSM_VariableWritesNeedTheActiveKey(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	keys := func(st1, st2 string) *RootKeyUpsertRequest {
		return &RootKeyUpsertRequest{Keys: []*state.RootKey{{KeyID: "k1", State: st1}, {KeyID: "k2", State: st2}}}
	}
	set := &VariableApplyRequest{Op: VarOpSet, Var: &state.Variable{Namespace: "default", Path: "a", KeyID: "k1", Data: []byte{1}}}
	steps := []struct {
		typ  MessageType
		msg  msgp.Marshaler
		want error
	}{
		{RootKeyUpsertRequestType, keys(state.RootKeyActive, state.RootKeyInactive), nil},
		{VariableApplyRequestType, set, nil},
		{RootKeyUpsertRequestType, keys(state.RootKeyRekeying, state.RootKeyActive), nil},
		{VariableApplyRequestType, set, ErrInactiveRootKey},
		{RootKeyUpsertRequestType, keys(state.RootKeyInactive, state.RootKeyActive), nil},
		{VariableApplyRequestType, set, ErrInactiveRootKey},
		{VariableApplyRequestType, &VariableApplyRequest{Op: VarOpRekey, CheckIndex: 2,
			Var: &state.Variable{Namespace: "default", Path: "a", KeyID: "k1", Data: []byte{2}}}, ErrInactiveRootKey},
	}
	for i, st := range steps {
		if err := applyEntry(t, f, uint64(i+1), st.typ, st.msg); !errors.Is(err, st.want) {
			t.Fatalf("step %d: err = %v, want %v", i+1, err, st.want)
		}
	}
	if v := store.Snapshot().Variable("default", "a"); v == nil || v.ModifyIndex != 2 {
		t.Fatalf("variable = %+v, want the one written at 2", v)
	}
}

// Variable locks, applied through the log: a lock is acquired on a new
// variable with items or an existing one; while held, only its holder
// changes the variable (a rekey aside); a release or an expiry needs the
// holder's ID; an expiry delays the next lock by the lock's delay, which
// holds at the entry's Now.
func TestFSM_VariableLocks(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	lock := func(id string) *state.VariableLock { return &state.VariableLock{ID: id, TTL: 15e9, LockDelay: 10} }
	v := func(data byte, l *state.VariableLock) *state.Variable {
		var d []byte
		if data != 0 {
			d = []byte{data}
		}
		return &state.Variable{Namespace: "default", Path: "leader", KeyID: "k1", Data: d, ModifyTime: int64(data), Lock: l}
	}
	op := func(op string, v *state.Variable, now int64) *VariableApplyRequest {
		return &VariableApplyRequest{Op: op, Var: v, Now: now}
	}
	steps := []struct {
		msg  *VariableApplyRequest
		want error
	}{
		/* 2 */ {op(VarOpLockAcquire, v(0, lock("A")), 100), ErrBadEntry}, // a new variable needs items
		/* 3 */ {op(VarOpLockAcquire, v(3, nil), 100), ErrBadEntry}, // no lock ID
		/* 4 */ {op(VarOpLockAcquire, v(4, lock("A")), 100), nil},
		/* 5 */ {op(VarOpLockAcquire, v(5, lock("B")), 100), ErrConflict}, // held by A
		/* 6 */ {op(VarOpSet, v(6, nil), 100), ErrConflict}, // a write without the lock
		/* 7 */ {op(VarOpSet, v(7, lock("B")), 100), ErrConflict}, // nor with another's
		/* 8 */ {op(VarOpDelete, v(0, nil), 100), ErrConflict},
		/* 9 */ {op(VarOpSet, v(9, &state.VariableLock{ID: "A"}), 100), nil}, // the holder writes; the lock stays
		/* 10 */ {op(VarOpLockRelease, v(0, lock("B")), 100), ErrConflict},
		/* 11 */ {op(VarOpLockExpire, v(0, lock("B")), 100), nil}, // not B's: nothing to do
		/* 12 */ {op(VarOpLockExpire, v(0, lock("A")), 200), nil}, // A's TTL passed: delayed until 210
		/* 13 */ {op(VarOpLockAcquire, v(0, lock("B")), 205), ErrConflict},
		/* 14 */ {op(VarOpLockAcquire, v(0, lock("B")), 211), nil}, // the items stay
		/* 15 */ {op(VarOpLockRelease, v(0, lock("B")), 212), nil},
		/* 16 */ {op(VarOpSet, v(16, nil), 213), nil}, // unlocked: anyone writes
	}
	if err := applyEntry(t, f, 1, RootKeyUpsertRequestType, &RootKeyUpsertRequest{Keys: []*state.RootKey{
		{KeyID: "k1", State: state.RootKeyActive, Key: []byte("k")}}}); err != nil {
		t.Fatal(err)
	}
	for i, st := range steps {
		err := applyEntry(t, f, uint64(i+2), VariableApplyRequestType, st.msg)
		if !errors.Is(err, st.want) {
			t.Fatalf("step %d (%s): err = %v, want %v", i+2, st.msg.Op, err, st.want)
		}
		if i+2 == 9 {
			if got := store.Snapshot().Variable("default", "leader"); got.Lock == nil || got.Lock.ID != "A" || got.Data[0] != 9 {
				t.Fatalf("after the holder's write: %+v", got)
			}
		}
		if i+2 == 12 {
			if got := store.Snapshot().Variable("default", "leader"); got.Lock != nil || got.LockDelayUntil != 210 || got.ModifyIndex != 12 {
				t.Fatalf("after the expiry: %+v", got)
			}
		}
		if i+2 == 14 {
			if got := store.Snapshot().Variable("default", "leader"); got.Lock == nil || got.Lock.ID != "B" || got.Data[0] != 9 || got.LockDelayUntil != 0 {
				t.Fatalf("after B's acquisition: %+v", got)
			}
		}
	}
	if got := store.Snapshot().Variable("default", "leader"); got.Lock != nil || got.Data[0] != 16 || got.CreateIndex != 4 {
		t.Fatalf("at the end: %+v", got)
	}
}
