package state

import (
	"errors"
	"fmt"
)

// ErrDefaultAuthMethod refuses a second default auth method: a login
// that names no method must find one.
var ErrDefaultAuthMethod = errors.New("state: another ACL auth method is the default")

// UpsertACLAuthMethods inserts or replaces auth methods (by name), keeping
// each one's create index and create time. After the write at most one
// method may be the default (ErrDefaultAuthMethod refuses the whole
// write otherwise).
func (t *Txn) UpsertACLAuthMethods(ms []*ACLAuthMethod) error {
	for _, m := range ms {
		if m.Name == "" || m.Config == nil {
			return fmt.Errorf("state: ACL auth method without name or config")
		}
		if !t.restore {
			m.CreateIndex = t.index
			if old := t.ACLAuthMethod(m.Name); old != nil {
				m.CreateIndex, m.CreateTime = old.CreateIndex, old.CreateTime
			}
			m.ModifyIndex = t.index
			if m.Default {
				if d := t.DefaultACLAuthMethod(); d != nil && d.Name != m.Name {
					return fmt.Errorf("%w: %q", ErrDefaultAuthMethod, d.Name)
				}
			}
		}
		t.record(KindACLAuthMethod, m.Name)
		if err := t.insert(TableACLAuthMethods, m); err != nil {
			return err
		}
	}
	return nil
}

// DeleteACLAuthMethods removes auth methods by name, with their binding
// rules; an unknown name is ErrNotFound and deletes none. Nomad leaves the
// rules of a deleted method in place, where they would grant again to a
// method made later under the same name; here they go with it.
func (t *Txn) DeleteACLAuthMethods(names []string) error {
	for _, name := range names {
		old := t.ACLAuthMethod(name)
		if old == nil {
			return fmt.Errorf("%w: ACL auth method %q", ErrNotFound, name)
		}
		t.record(KindACLAuthMethod, name)
		if err := t.delete(TableACLAuthMethods, old); err != nil {
			return err
		}
		for _, r := range t.ACLBindingRulesOf(name) {
			t.record(KindACLBindingRule, r.ID)
			if err := t.delete(TableACLBindingRules, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// UpsertACLBindingRules inserts or replaces binding rules (by ID), keeping
// each one's create index and create time. Each rule's auth method must
// exist (ErrNotFound refuses the whole write), but for a restore, which
// writes what was.
func (t *Txn) UpsertACLBindingRules(rs []*ACLBindingRule) error {
	for _, r := range rs {
		if r.ID == "" {
			return fmt.Errorf("state: ACL binding rule without ID")
		}
		if !t.restore {
			if t.ACLAuthMethod(r.AuthMethod) == nil {
				return fmt.Errorf("%w: ACL auth method %q (binding rule %s)", ErrNotFound, r.AuthMethod, r.ID)
			}
			r.CreateIndex = t.index
			if old := t.ACLBindingRule(r.ID); old != nil {
				r.CreateIndex, r.CreateTime = old.CreateIndex, old.CreateTime
			}
			r.ModifyIndex = t.index
		}
		t.record(KindACLBindingRule, r.ID)
		if err := t.insert(TableACLBindingRules, r); err != nil {
			return err
		}
	}
	return nil
}

// DeleteACLBindingRules removes binding rules by ID; an unknown ID is
// ErrNotFound and deletes none.
func (t *Txn) DeleteACLBindingRules(ids []string) error {
	for _, id := range ids {
		old := t.ACLBindingRule(id)
		if old == nil {
			return fmt.Errorf("%w: ACL binding rule %q", ErrNotFound, id)
		}
		t.record(KindACLBindingRule, id)
		if err := t.delete(TableACLBindingRules, old); err != nil {
			return err
		}
	}
	return nil
}

// UpsertOneTimeToken inserts a one-time token. The ACL token it stands
// for must exist (ErrNotFound), but for a restore.
func (t *Txn) UpsertOneTimeToken(ott *OneTimeToken) error {
	if ott.OneTimeSecretID == "" || ott.AccessorID == "" {
		return fmt.Errorf("state: one-time token without secret or accessor ID")
	}
	if !t.restore {
		if t.ACLTokenByAccessor(ott.AccessorID) == nil {
			return fmt.Errorf("%w: ACL token %q", ErrNotFound, ott.AccessorID)
		}
		ott.CreateIndex, ott.ModifyIndex = t.index, t.index
	}
	return t.insert(TableOneTimeTokens, ott)
}

// DeleteOneTimeTokens removes one-time tokens by secret; an unknown one
// is ErrNotFound and deletes none (an exchange that lost to another).
func (t *Txn) DeleteOneTimeTokens(secrets []string) error {
	for _, s := range secrets {
		old := t.OneTimeToken(s)
		if old == nil {
			return fmt.Errorf("%w: one-time token", ErrNotFound)
		}
		if err := t.delete(TableOneTimeTokens, old); err != nil {
			return err
		}
	}
	return nil
}

// ExpireOneTimeTokens removes the one-time tokens expired at now (Unix
// nanoseconds) and those whose ACL token is gone, and returns how many.
func (t *Txn) ExpireOneTimeTokens(now int64) (int, error) {
	var gone []*OneTimeToken
	each(t.reader, func(o *OneTimeToken) bool {
		if o.ExpiresAt < now || t.ACLTokenByAccessor(o.AccessorID) == nil {
			gone = append(gone, o)
		}
		return true
	}, TableOneTimeTokens, "id")
	for _, o := range gone {
		if err := t.delete(TableOneTimeTokens, o); err != nil {
			return 0, err
		}
	}
	return len(gone), nil
}

// ACLAuthMethod returns an auth method by name.
func (r reader) ACLAuthMethod(name string) *ACLAuthMethod {
	if name == "" {
		return nil
	}
	return first[ACLAuthMethod](r, TableACLAuthMethods, "id", name)
}

// ACLAuthMethods returns every auth method, ordered by name.
func (r reader) ACLAuthMethods() []*ACLAuthMethod {
	return all[ACLAuthMethod](r, TableACLAuthMethods, "id")
}

// DefaultACLAuthMethod returns the default auth method, nil if none is.
func (r reader) DefaultACLAuthMethod() *ACLAuthMethod {
	var d *ACLAuthMethod
	each(r, func(m *ACLAuthMethod) bool {
		if m.Default {
			d = m
		}
		return d == nil
	}, TableACLAuthMethods, "id")
	return d
}

// ACLBindingRule returns a binding rule by ID.
func (r reader) ACLBindingRule(id string) *ACLBindingRule {
	if id == "" {
		return nil
	}
	return first[ACLBindingRule](r, TableACLBindingRules, "id", id)
}

// ACLBindingRules returns the binding rules whose ID starts with prefix
// ("" for all), ordered by ID.
func (r reader) ACLBindingRules(prefix string) []*ACLBindingRule {
	return all[ACLBindingRule](r, TableACLBindingRules, "id_prefix", prefix)
}

// ACLBindingRulesOf returns the binding rules of an auth method, ordered
// by ID.
func (r reader) ACLBindingRulesOf(method string) []*ACLBindingRule {
	return all[ACLBindingRule](r, TableACLBindingRules, "auth_method", method)
}

// OneTimeToken returns a one-time token by its secret, expired or not.
func (r reader) OneTimeToken(secret string) *OneTimeToken {
	if secret == "" {
		return nil
	}
	return first[OneTimeToken](r, TableOneTimeTokens, "id", secret)
}

// OneTimeTokens returns every one-time token, ordered by secret.
func (r reader) OneTimeTokens() []*OneTimeToken {
	return all[OneTimeToken](r, TableOneTimeTokens, "id")
}
