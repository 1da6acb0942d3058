package state

import (
	"fmt"
	"strings"
)

// SetVariable inserts or replaces the variable at v's namespace and path,
// keeping a replaced one's create index and time.
func (t *Txn) SetVariable(v *Variable) error {
	if v.Namespace == "" || v.Path == "" {
		return fmt.Errorf("state: variable without namespace or path")
	}
	if !t.restore {
		v.CreateIndex = t.index
		if old := t.Variable(v.Namespace, v.Path); old != nil {
			v.CreateIndex, v.CreateTime = old.CreateIndex, old.CreateTime
		}
		v.ModifyIndex = t.index
	}
	return t.insert(TableVariables, v)
}

// RekeyVariable replaces the variable at v's namespace and path with v,
// the same items encrypted with another key: its indexes and times stay,
// so a check-and-set made with the index read before still applies.
func (t *Txn) RekeyVariable(v *Variable) error {
	old := t.Variable(v.Namespace, v.Path)
	if old == nil {
		return fmt.Errorf("%w: variable %q in namespace %q", ErrNotFound, v.Path, v.Namespace)
	}
	c := *old
	c.KeyID, c.Data = v.KeyID, v.Data
	return t.insert(TableVariables, &c)
}

// DeleteVariable removes the variable at path in namespace ns; one that
// is not there is ErrNotFound.
func (t *Txn) DeleteVariable(ns, path string) error {
	old := t.Variable(ns, path)
	if old == nil {
		return fmt.Errorf("%w: variable %q in namespace %q", ErrNotFound, path, ns)
	}
	return t.delete(TableVariables, old)
}

// UpsertRootKey inserts or replaces a root key (by key ID), keeping a
// replaced one's create index.
func (t *Txn) UpsertRootKey(k *RootKey) error {
	if k.KeyID == "" {
		return fmt.Errorf("state: root key without a key ID")
	}
	if !t.restore {
		k.CreateIndex = t.index
		if old := t.RootKey(k.KeyID); old != nil {
			k.CreateIndex = old.CreateIndex
		}
		k.ModifyIndex = t.index
	}
	return t.insert(TableRootKeys, k)
}

// DeleteRootKey removes a root key by ID; an unknown ID is ErrNotFound.
func (t *Txn) DeleteRootKey(id string) error {
	old := t.RootKey(id)
	if old == nil {
		return fmt.Errorf("%w: root key %q", ErrNotFound, id)
	}
	return t.delete(TableRootKeys, old)
}

// LockedVariables returns the variables that hold a lock, ordered by
// namespace and path.
func (r reader) LockedVariables() []*Variable {
	var out []*Variable
	each(r, func(v *Variable) bool {
		if v.Lock != nil {
			out = append(out, v)
		}
		return true
	}, TableVariables, "id")
	return out
}

// Variable returns the variable at path in namespace ns.
func (r reader) Variable(ns, path string) *Variable {
	if ns == "" || path == "" {
		return nil
	}
	return first[Variable](r, TableVariables, "id", ns, path)
}

// Variables returns the variables of namespace ns ("*": every namespace)
// whose path starts with prefix, ordered by namespace, then path.
func (r reader) Variables(ns, prefix string) []*Variable {
	if ns != "*" {
		return all[Variable](r, TableVariables, "id_prefix", ns, prefix)
	}
	var out []*Variable
	each(r, func(v *Variable) bool {
		if strings.HasPrefix(v.Path, prefix) {
			out = append(out, v)
		}
		return true
	}, TableVariables, "id")
	return out
}

// VariablesEncryptedWith returns the variables encrypted with the root
// key of ID keyID, at most limit of them (0: all).
func (r reader) VariablesEncryptedWith(keyID string, limit int) []*Variable {
	var out []*Variable
	each(r, func(v *Variable) bool {
		if v.KeyID == keyID {
			out = append(out, v)
		}
		return limit == 0 || len(out) < limit
	}, TableVariables, "id")
	return out
}

// RootKey returns a root key by ID.
func (r reader) RootKey(id string) *RootKey {
	if id == "" {
		return nil
	}
	return first[RootKey](r, TableRootKeys, "id", id)
}

// RootKeys returns the keyring's root keys, ordered by key ID.
func (r reader) RootKeys() []*RootKey {
	return all[RootKey](r, TableRootKeys, "id")
}

// ActiveRootKey returns the active root key, nil if there is none yet.
func (r reader) ActiveRootKey() *RootKey {
	for _, k := range r.RootKeys() {
		if k.State == RootKeyActive {
			return k
		}
	}
	return nil
}
