package fsm

import (
	"errors"
	"fmt"
	"time"

	"github.com/drover-sched/drover/host/state"
)

// applyVariable applies a variable operation, checking a check-and-set's
// index, a write's key and the variable's lock against the state the entry
// applies to.
func applyVariable(tx *state.Txn, req *VariableApplyRequest) error {
	v := req.Var
	cur := tx.Variable(v.Namespace, v.Path)
	var curIndex uint64
	if cur != nil {
		curIndex = cur.ModifyIndex
	}
	switch req.Op {
	case VarOpCAS, VarOpDeleteCAS, VarOpRekey:
		if curIndex != req.CheckIndex {
			return fmt.Errorf("%w: variable %q is at modify index %d, not %d", ErrConflict, v.Path, curIndex, req.CheckIndex)
		}
	case VarOpSet, VarOpDelete:
	case VarOpLockAcquire, VarOpLockRelease, VarOpLockExpire:
		return applyVariableLock(tx, req, cur)
	default:
		return fmt.Errorf("%w: unknown variable operation %q", ErrBadEntry, req.Op)
	}
	if req.Op != VarOpRekey && cur != nil && cur.Lock != nil && (v.Lock == nil || v.Lock.ID != cur.Lock.ID) {
		return fmt.Errorf("%w: variable %q is locked", ErrConflict, v.Path)
	}
	switch req.Op {
	case VarOpDelete, VarOpDeleteCAS:
		if cur == nil {
			return nil
		}
		return tx.DeleteVariable(v.Namespace, v.Path)
	}
	if err := activeKey(tx, v); err != nil {
		return err
	}
	if req.Op == VarOpRekey {
		if cur == nil {
			return fmt.Errorf("%w: variable %q to re-encrypt", state.ErrNotFound, v.Path)
		}
		return tx.RekeyVariable(v)
	}
	c := *v
	c.Lock = nil
	if cur != nil {
		c.Lock, c.LockDelayUntil = cur.Lock, cur.LockDelayUntil
	} else if err := variableNamespace(tx, req); err != nil {
		return err
	}
	return tx.SetVariable(&c)
}

// variableNamespace checks that a new variable's namespace exists, or
// makes it (an older version's entry, or namespaces not yet written
// objects: see VariableApplyRequest).
func variableNamespace(tx *state.Txn, req *VariableApplyRequest) error {
	ns := req.Var.Namespace
	if !req.RefsMustExist || !tx.RefsExplicit() {
		return tx.EnsureNamespace(ns)
	}
	if tx.Namespace(ns) == nil {
		return state.Refuse(state.ErrNonexistent, "variable %q is in nonexistent namespace %q", req.Var.Path, ns)
	}
	return nil
}

// activeKey refuses data sealed with another key than the active one.
func activeKey(tx *state.Txn, v *state.Variable) error {
	if k := tx.RootKey(v.KeyID); k == nil || k.State != state.RootKeyActive {
		return fmt.Errorf("%w: variable %q is encrypted with root key %q", ErrInactiveRootKey, v.Path, v.KeyID)
	}
	return nil
}

// applyVariableLock acquires, releases or expires a variable's lock.
func applyVariableLock(tx *state.Txn, req *VariableApplyRequest, cur *state.Variable) error {
	v := req.Var
	if v.Lock == nil || v.Lock.ID == "" {
		return fmt.Errorf("%w: a lock operation without a lock ID", ErrBadEntry)
	}
	held := cur != nil && cur.Lock != nil && cur.Lock.ID == v.Lock.ID
	switch req.Op {
	case VarOpLockAcquire:
		switch {
		case cur != nil && cur.Lock != nil && !held:
			return fmt.Errorf("%w: variable %q is locked", ErrConflict, v.Path)
		case cur != nil && cur.LockDelayUntil > req.Now:
			return fmt.Errorf("%w: variable %q lost its lock, which may not be acquired again for %v", ErrConflict, v.Path,
				time.Duration(cur.LockDelayUntil-req.Now))
		case cur == nil && len(v.Data) == 0:
			return fmt.Errorf("%w: a lock on a new variable %q without items", ErrBadEntry, v.Path)
		case cur == nil:
			if err := variableNamespace(tx, req); err != nil {
				return err
			}
		}
		c := *v
		if len(v.Data) == 0 {
			c.KeyID, c.Data = cur.KeyID, cur.Data
		} else if err := activeKey(tx, v); err != nil {
			return err
		}
		lock := *v.Lock
		c.Lock, c.LockDelayUntil = &lock, 0
		return tx.SetVariable(&c)
	case VarOpLockRelease:
		if !held {
			return fmt.Errorf("%w: variable %q is not locked by lock %s", ErrConflict, v.Path, v.Lock.ID)
		}
		c := *cur
		c.Lock, c.ModifyTime = nil, v.ModifyTime
		return tx.SetVariable(&c)
	default: // VarOpLockExpire
		if !held {
			return nil // released, or taken by another since the leader saw it
		}
		c := *cur
		c.Lock, c.ModifyTime, c.LockDelayUntil = nil, v.ModifyTime, req.Now+cur.Lock.LockDelay
		return tx.SetVariable(&c)
	}
}

// ErrInactiveRootKey refuses a variable encrypted with a root key that is
// not the keyring's active one (a rotation, or a removal, since the writer
// read it): so no write lands on a key a full rotation has moved every
// variable off. Unlike ErrConflict, it says nothing of the variable's
// modify index; the writer may seal the items again with the active key.
var ErrInactiveRootKey = errors.New("fsm: not the keyring's active root key")

// ErrRootKeyInUse refuses to delete a root key that is active or still
// encrypts variables.
var ErrRootKeyInUse = errors.New("root key is in use")

// applyRootKeyUpsert writes root keys; after it, at most one is active.
func applyRootKeyUpsert(tx *state.Txn, req *RootKeyUpsertRequest) error {
	for _, k := range req.Keys {
		switch k.State {
		case state.RootKeyActive, state.RootKeyRekeying, state.RootKeyInactive:
		default:
			return fmt.Errorf("%w: root key %s has state %q", ErrBadEntry, k.KeyID, k.State)
		}
		c := *k
		if err := tx.UpsertRootKey(&c); err != nil {
			return err
		}
	}
	active := 0
	for _, k := range tx.RootKeys() {
		if k.State == state.RootKeyActive {
			active++
		}
	}
	if active > 1 {
		return fmt.Errorf("%w: the keyring would have %d active root keys", ErrConflict, active)
	}
	return nil
}

// applyRootKeyDelete deletes a root key that is neither active nor
// encrypting a variable.
func applyRootKeyDelete(tx *state.Txn, req *RootKeyDeleteRequest) error {
	k := tx.RootKey(req.KeyID)
	if k == nil {
		return fmt.Errorf("%w: root key %q", state.ErrNotFound, req.KeyID)
	}
	if k.State == state.RootKeyActive {
		return fmt.Errorf("%w: root key %s is the active key", ErrRootKeyInUse, k.KeyID)
	}
	if n := len(tx.VariablesEncryptedWith(k.KeyID, 1)); n > 0 {
		return fmt.Errorf("%w: variables are encrypted with root key %s", ErrRootKeyInUse, k.KeyID)
	}
	return tx.DeleteRootKey(k.KeyID)
}
