package fsm

import (
	"errors"
	"fmt"

	"github.com/drover-sched/drover/host/state"
)

// applyVariable applies a variable operation, checking a check-and-set's
// index and a write's key against the state the entry applies to.
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
	default:
		return fmt.Errorf("%w: unknown variable operation %q", ErrBadEntry, req.Op)
	}
	switch req.Op {
	case VarOpDelete, VarOpDeleteCAS:
		if cur == nil {
			return nil
		}
		return tx.DeleteVariable(v.Namespace, v.Path)
	}
	if k := tx.RootKey(v.KeyID); k == nil || k.State != state.RootKeyActive {
		return fmt.Errorf("%w: variable %q is encrypted with root key %q", ErrInactiveRootKey, v.Path, v.KeyID)
	}
	if req.Op == VarOpRekey {
		if cur == nil {
			return fmt.Errorf("%w: variable %q to re-encrypt", state.ErrNotFound, v.Path)
		}
		return tx.RekeyVariable(v)
	}
	c := *v
	return tx.SetVariable(&c)
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
