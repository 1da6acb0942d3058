package state

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrSecretInUse refuses a token whose secret ID another token has: the
// secret index is unique, and a request presenting the secret must find
// one token.
var ErrSecretInUse = errors.New("state: ACL token secret ID is in use")

// ErrRoleNameInUse refuses a role whose name another role has: roles are
// unique by name, as in Nomad.
var ErrRoleNameInUse = errors.New("state: ACL role name is in use")

// UpsertACLPolicies inserts or replaces ACL policies, keeping each one's
// create index.
func (t *Txn) UpsertACLPolicies(ps []*ACLPolicy) error {
	for _, p := range ps {
		if !t.restore {
			p.CreateIndex = t.index
			if old := t.ACLPolicy(p.Name); old != nil {
				p.CreateIndex = old.CreateIndex
			}
			p.ModifyIndex = t.index
		}
		t.record(KindACLPolicy, p.Name)
		if err := t.insert(TableACLPolicies, p); err != nil {
			return err
		}
	}
	return nil
}

// DeleteACLPolicies removes ACL policies by name; an unknown name is
// ErrNotFound and deletes none. Tokens that name a deleted policy keep
// the name (it grants nothing until a policy of that name is written
// again), as in Nomad.
func (t *Txn) DeleteACLPolicies(names []string) error {
	for _, name := range names {
		old := t.ACLPolicy(name)
		if old == nil {
			return fmt.Errorf("%w: ACL policy %q", ErrNotFound, name)
		}
		t.record(KindACLPolicy, name)
		if err := t.delete(TableACLPolicies, old); err != nil {
			return err
		}
	}
	return nil
}

// UpsertACLTokens inserts new ACL tokens or replaces existing ones (by
// accessor ID). A replaced token keeps what is fixed at its creation: its
// secret, Global, create time, expiration time and create index. A secret
// another token has is ErrSecretInUse.
func (t *Txn) UpsertACLTokens(ts []*ACLToken) error {
	for _, tok := range ts {
		if tok.AccessorID == "" || tok.SecretID == "" {
			return fmt.Errorf("state: ACL token without accessor or secret ID")
		}
		if !t.restore {
			if old := t.ACLTokenByAccessor(tok.AccessorID); old != nil {
				tok.SecretID, tok.Global = old.SecretID, old.Global
				tok.CreateTime, tok.ExpirationTime = old.CreateTime, old.ExpirationTime
				tok.CreateIndex = old.CreateIndex
			} else {
				tok.CreateIndex = t.index
			}
			tok.ModifyIndex = t.index
		}
		if other := t.ACLTokenBySecret(tok.SecretID); other != nil && other.AccessorID != tok.AccessorID {
			return fmt.Errorf("%w (token %s)", ErrSecretInUse, tok.AccessorID)
		}
		t.record(KindACLToken, tok.AccessorID)
		if err := t.insert(TableACLTokens, tok); err != nil {
			return err
		}
	}
	return nil
}

// DeleteACLTokens removes ACL tokens by accessor ID; an unknown accessor
// is ErrNotFound and deletes none.
func (t *Txn) DeleteACLTokens(accessors []string) error {
	for _, id := range accessors {
		old := t.ACLTokenByAccessor(id)
		if old == nil {
			return fmt.Errorf("%w: ACL token %q", ErrNotFound, id)
		}
		t.record(KindACLToken, id)
		if err := t.delete(TableACLTokens, old); err != nil {
			return err
		}
	}
	return nil
}

// UpsertACLRoles inserts new ACL roles or replaces existing ones (by ID),
// keeping each one's create index. A name another role has is
// ErrRoleNameInUse, and a policy that does not exist is ErrNotFound (as
// Nomad's state store checks both); either refuses the whole write. A
// restore checks neither: it writes what was.
func (t *Txn) UpsertACLRoles(rs []*ACLRole) error {
	for _, r := range rs {
		if r.ID == "" || r.Name == "" {
			return fmt.Errorf("state: ACL role without ID or name")
		}
		if !t.restore {
			if other := t.ACLRoleByName(r.Name); other != nil && other.ID != r.ID {
				return fmt.Errorf("%w: %q (role %s)", ErrRoleNameInUse, r.Name, other.ID)
			}
			for _, name := range r.Policies {
				if t.ACLPolicy(name) == nil {
					return fmt.Errorf("%w: ACL policy %q (role %q)", ErrNotFound, name, r.Name)
				}
			}
			r.CreateIndex = t.index
			if old := t.ACLRoleByID(r.ID); old != nil {
				r.CreateIndex = old.CreateIndex
			}
			r.ModifyIndex = t.index
		}
		t.record(KindACLRole, r.ID)
		if err := t.insert(TableACLRoles, r); err != nil {
			return err
		}
	}
	return nil
}

// DeleteACLRoles removes ACL roles by ID; an unknown ID is ErrNotFound
// and deletes none. Tokens that hold a deleted role keep its ID; it grants
// nothing (and the API leaves it out of the token's roles), as Nomad's
// tokens keep the link until read.
func (t *Txn) DeleteACLRoles(ids []string) error {
	for _, id := range ids {
		old := t.ACLRoleByID(id)
		if old == nil {
			return fmt.Errorf("%w: ACL role %q", ErrNotFound, id)
		}
		t.record(KindACLRole, id)
		if err := t.delete(TableACLRoles, old); err != nil {
			return err
		}
	}
	return nil
}

// SetACLBootstrap records index as the index of the ACL bootstrap
// (ACLBootstrapIndex).
func (t *Txn) SetACLBootstrap(index uint64) error {
	if err := t.txn.Insert(TableIndex, &IndexEntry{Key: ACLBootstrapIndexKey, Value: index}); err != nil {
		return fmt.Errorf("state: set the ACL bootstrap index: %w", err)
	}
	return nil
}

// ACLPolicy returns an ACL policy by name.
func (r reader) ACLPolicy(name string) *ACLPolicy {
	return first[ACLPolicy](r, TableACLPolicies, "id", name)
}

// ACLPolicies returns the ACL policies whose name starts with prefix
// ("" for all), ordered by name.
func (r reader) ACLPolicies(prefix string) []*ACLPolicy {
	return all[ACLPolicy](r, TableACLPolicies, "id_prefix", prefix)
}

// ACLRoleByID returns an ACL role by ID.
func (r reader) ACLRoleByID(id string) *ACLRole {
	if id == "" {
		return nil
	}
	return first[ACLRole](r, TableACLRoles, "id", id)
}

// ACLRoleByName returns an ACL role by name.
func (r reader) ACLRoleByName(name string) *ACLRole {
	if name == "" {
		return nil
	}
	return first[ACLRole](r, TableACLRoles, "name", name)
}

// ACLRoles returns the ACL roles whose ID starts with prefix ("" for
// all), ordered by ID.
func (r reader) ACLRoles(prefix string) []*ACLRole {
	return all[ACLRole](r, TableACLRoles, "id_prefix", prefix)
}

// ACLTokenByAccessor returns an ACL token by accessor ID.
func (r reader) ACLTokenByAccessor(id string) *ACLToken {
	if id == "" {
		return nil
	}
	return first[ACLToken](r, TableACLTokens, "id", id)
}

// ACLTokenBySecret returns an ACL token by secret ID, expired or not
// (ACLToken.Expired).
func (r reader) ACLTokenBySecret(secret string) *ACLToken {
	if secret == "" {
		return nil
	}
	return first[ACLToken](r, TableACLTokens, "secret", secret)
}

// ACLTokens returns the ACL tokens whose accessor ID starts with prefix
// ("" for all), ordered by accessor ID.
func (r reader) ACLTokens(prefix string) []*ACLToken {
	return all[ACLToken](r, TableACLTokens, "id_prefix", prefix)
}

// ExpiredACLTokens returns the tokens expired at now (Unix nanoseconds),
// soonest expired first, at most limit of them (0: all).
func (r reader) ExpiredACLTokens(now int64, limit int) []*ACLToken {
	var out []*ACLToken
	each(r, func(t *ACLToken) bool {
		if t.ExpirationTime != 0 && t.ExpirationTime < now {
			out = append(out, t)
		}
		return true
	}, TableACLTokens, "id")
	slices.SortFunc(out, func(a, b *ACLToken) int {
		return cmp.Or(cmp.Compare(a.ExpirationTime, b.ExpirationTime), strings.Compare(a.AccessorID, b.AccessorID))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// ACLBootstrapIndex is the index the ACLs were last bootstrapped at, 0 if
// never.
func (r reader) ACLBootstrapIndex() uint64 { return r.TableIndex(ACLBootstrapIndexKey) }
