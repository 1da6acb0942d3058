package server

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/tinylib/msgp/msgp"
)

// Variables, as Nomad's: small sets of secret items stored by namespace
// and path, encrypted in the state (in raft's log and snapshots too) with
// the keyring's active root key, AES-256-GCM, the namespace and path bound
// to the ciphertext as additional data, so data copied to another path
// does not decrypt. The keyring's first key is made by the first write;
// a rotation makes a new active key, and a full one re-encrypts every
// variable with it in the background (rekeyVariables), on whichever
// server leads. The root keys are in the replicated state beside what
// they encrypt, as Nomad 1.9's are with its default (aead) key provider:
// the encryption keeps variables out of whatever shows state but is not
// their keys (the event stream, logs, other tables' dumps), not out of a
// stolen data dir or operator snapshot.

// Variable limits and names, as Nomad's.
const (
	// maxVariableSize bounds the sum of a variable's keys' and values'
	// lengths (Nomad's maxVariableSize).
	maxVariableSize = 64 << 10
	// RootKeyAlgorithm is the one encryption algorithm (Nomad's
	// EncryptionAlgorithmAES256GCM).
	RootKeyAlgorithm = "aes256-gcm"
	// rekeyBatch is how many variables a full rotation reads at a time.
	rekeyBatch = 64
	// sealAttempts is how many times a write seals its items, each time
	// with the key active then, while the key it used is gone as it
	// applies.
	sealAttempts = 3
)

// validVariablePath is what a variable's path may be (Nomad's).
var validVariablePath = regexp.MustCompile("^[a-zA-Z0-9-_~/]{1,128}$")

// validNamespaceName is what a namespace's name may be (Nomad's).
var validNamespaceName = regexp.MustCompile("^[a-zA-Z0-9-]{1,128}$")

// VariableConflict refuses a check-and-set write or delete that found the
// variable at another modify index; Current is the variable as it is
// (nil: there is none). It is an ErrConflict.
type VariableConflict struct {
	Current *state.Variable
}

func (e *VariableConflict) Error() string {
	if e.Current == nil {
		return "cas error: variable does not exist"
	}
	return fmt.Sprintf("cas error: variable is at modify index %d", e.Current.ModifyIndex)
}

func (e *VariableConflict) Unwrap() error { return ErrConflict }

// checkVariablePath checks a path as Nomad does: its characters and
// length, and under "nomad/" only "nomad/jobs" and below, or one name
// below "nomad/job-templates".
func checkVariablePath(path string) error {
	if path == "" {
		return badRequest(errors.New("variable requires path"))
	}
	if !validVariablePath.MatchString(path) {
		return badRequest(fmt.Errorf("invalid path %q: a path is 1 to 128 letters, digits and any of -_~/", path))
	}
	parts := strings.Split(path, "/")
	if parts[0] != "nomad" {
		return nil
	}
	switch {
	case len(parts) == 1:
		return badRequest(errors.New(`"nomad" is a reserved top-level directory path, but you may write variables to "nomad/jobs", "nomad/job-templates", or below`))
	case parts[1] == "jobs", parts[1] == "job-templates" && len(parts) == 3:
		return nil
	case parts[1] == "job-templates":
		return badRequest(errors.New(`"nomad/job-templates" is a reserved directory path, but you may write variables at the level below it, for example, "nomad/job-templates/template-name"`))
	}
	return badRequest(errors.New(`only paths at "nomad/jobs" or "nomad/job-templates" and below are valid paths under the top-level "nomad" directory`))
}

// checkVariableNamespace refuses "*" and what is not a namespace name.
func checkVariableNamespace(ns string) error {
	if ns == "*" {
		return badRequest(errors.New(`can not target wildcard ("*") namespace`))
	}
	if !validNamespaceName.MatchString(ns) {
		return badRequest(fmt.Errorf("invalid namespace %q", ns))
	}
	return nil
}

// VariableCheck is what a variable write or delete must find: with CAS,
// the variable at modify index Index (0: no variable); with LockID, the
// variable's lock (a locked variable is changed only by its holder).
type VariableCheck struct {
	CAS    bool
	Index  uint64
	LockID string
}

// checkVariableItems refuses empty items and items over 64 KiB.
func checkVariableItems(items map[string]string) error {
	if len(items) == 0 {
		return badRequest(errors.New("empty variables are invalid"))
	}
	size := 0
	for k, v := range items {
		size += len(k) + len(v)
	}
	if size > maxVariableSize {
		return badRequest(fmt.Errorf("variables are limited to 64KiB in total size, this one has %d bytes", size))
	}
	return nil
}

// SetVariable writes the variable at path in namespace ns with items,
// encrypted with the active root key (made first if the keyring has none),
// if it finds what check says (else it is a *VariableConflict). It
// returns the variable as stored.
func (s *Server) SetVariable(ns, path string, items map[string]string, check VariableCheck) (*state.Variable, uint64, error) {
	if err := checkVariableNamespace(ns); err != nil {
		return nil, 0, err
	}
	if err := checkVariablePath(path); err != nil {
		return nil, 0, err
	}
	if err := checkVariableItems(items); err != nil {
		return nil, 0, err
	}
	snap := s.store.Snapshot()
	cur := snap.Variable(ns, path)
	if check.CAS && modifyIndex(cur) != check.Index || cur != nil && cur.Lock != nil && cur.Lock.ID != check.LockID {
		return nil, 0, &VariableConflict{Current: cur}
	}
	if err := checkVariablePlacement(snap, cur, ns, path); err != nil {
		return nil, 0, err
	}
	req := &fsm.VariableApplyRequest{Op: fsm.VarOpSet, CheckIndex: check.Index, RefsMustExist: true}
	if check.CAS {
		req.Op = fsm.VarOpCAS
	}
	var lock *state.VariableLock
	if check.LockID != "" {
		lock = &state.VariableLock{ID: check.LockID}
	}
	index, err := s.applySealed(req, ns, path, items, lock)
	if err != nil {
		return nil, 0, err
	}
	v := s.store.Snapshot().Variable(ns, path)
	if v == nil || v.ModifyIndex != index {
		// Written over or deleted by a write that committed right after:
		// what this one stored is the request's, at index.
		v = req.Var
		v.CreateIndex, v.ModifyIndex = index, index
	}
	return v, index, nil
}

// applySealed applies req with Var the variable at path in namespace ns
// holding items sealed with the active root key, and lock. The key read
// may be rotated out and removed before the entry applies: then the items
// are sealed again with the key active now.
func (s *Server) applySealed(req *fsm.VariableApplyRequest, ns, path string, items map[string]string, lock *state.VariableLock) (uint64, error) {
	for attempt := 1; ; attempt++ {
		key, err := s.activeRootKey()
		if err != nil {
			return 0, err
		}
		data, err := s.seal(key, ns, path, items)
		if err != nil {
			return 0, err
		}
		now := s.now().UnixNano()
		req.Var = &state.Variable{Namespace: ns, Path: path, CreateTime: now, ModifyTime: now, KeyID: key.KeyID, Data: data, Lock: lock}
		req.Now = now
		index, err := s.Apply(fsm.VariableApplyRequestType, req)
		if err == nil {
			return index, nil
		}
		if !errors.Is(err, fsm.ErrInactiveRootKey) || attempt == sealAttempts {
			return 0, s.variableConflict(ns, path, err)
		}
	}
}

// DeleteVariable deletes the variable at path in namespace ns (one that is
// not there is no error), if it finds what check says (else it is a
// *VariableConflict): a locked variable is deleted by its lock's holder.
func (s *Server) DeleteVariable(ns, path string, check VariableCheck) (uint64, error) {
	if err := checkVariableNamespace(ns); err != nil {
		return 0, err
	}
	if cur := s.store.Snapshot().Variable(ns, path); check.CAS && modifyIndex(cur) != check.Index ||
		cur != nil && cur.Lock != nil && cur.Lock.ID != check.LockID {
		return 0, &VariableConflict{Current: cur}
	}
	req := &fsm.VariableApplyRequest{Op: fsm.VarOpDelete, CheckIndex: check.Index, Var: &state.Variable{Namespace: ns, Path: path}}
	if check.LockID != "" {
		req.Var.Lock = &state.VariableLock{ID: check.LockID}
	}
	if check.CAS {
		req.Op = fsm.VarOpDeleteCAS
	}
	index, err := s.Apply(fsm.VariableApplyRequestType, req)
	if err != nil {
		return 0, s.variableConflict(ns, path, err)
	}
	return index, nil
}

// variableConflict turns the FSM's refusal of a check-and-set into a
// *VariableConflict with the variable as it now is.
func (s *Server) variableConflict(ns, path string, err error) error {
	if errors.Is(err, fsm.ErrConflict) {
		return &VariableConflict{Current: s.store.Snapshot().Variable(ns, path)}
	}
	return err
}

func modifyIndex(v *state.Variable) uint64 {
	if v == nil {
		return 0
	}
	return v.ModifyIndex
}

// DecryptVariable returns v's items, decrypted with the root key snap
// holds for it.
func (s *Server) DecryptVariable(snap *state.Snapshot, v *state.Variable) (map[string]string, error) {
	key := snap.RootKey(v.KeyID)
	if key == nil {
		return nil, fmt.Errorf("server: variable %q is encrypted with root key %s, which the keyring does not hold", v.Path, v.KeyID)
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	n := aead.NonceSize()
	if len(v.Data) < n {
		return nil, fmt.Errorf("server: variable %q: encrypted data too short", v.Path)
	}
	plain, err := aead.Open(nil, v.Data[:n], v.Data[n:], variableAAD(v.Namespace, v.Path))
	if err != nil {
		return nil, fmt.Errorf("server: variable %q does not decrypt with root key %s: %w", v.Path, v.KeyID, err)
	}
	items, err := decodeItems(plain)
	if err != nil {
		return nil, fmt.Errorf("server: variable %q: decode its items: %w", v.Path, err)
	}
	return items, nil
}

// decodeItems reads items as msgp.AppendMapStrStr wrote them.
func decodeItems(b []byte) (map[string]string, error) {
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return nil, err
	}
	items := make(map[string]string, min(n, 1024))
	for range n {
		var k, v string
		if k, b, err = msgp.ReadStringBytes(b); err != nil {
			return nil, err
		}
		if v, b, err = msgp.ReadStringBytes(b); err != nil {
			return nil, err
		}
		items[k] = v
	}
	return items, nil
}

// seal encodes and encrypts items for the variable at path in namespace
// ns: a random nonce, then the sealed items.
func (s *Server) seal(key *state.RootKey, ns, path string, items map[string]string) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	plain := msgp.AppendMapStrStr(nil, items)
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("server: variable nonce: %w", err)
	}
	return aead.Seal(nonce, nonce, plain, variableAAD(ns, path)), nil
}

// variableAAD binds a variable's ciphertext to its namespace and path.
func variableAAD(ns, path string) []byte { return []byte(ns + "\x00" + path) }

func newAEAD(key *state.RootKey) (cipher.AEAD, error) {
	if key.Algorithm != RootKeyAlgorithm {
		return nil, fmt.Errorf("server: root key %s has algorithm %q", key.KeyID, key.Algorithm)
	}
	block, err := aes.NewCipher(key.Key)
	if err != nil {
		return nil, fmt.Errorf("server: root key %s: %w", key.KeyID, err)
	}
	return cipher.NewGCM(block)
}

// newRootKey makes a root key of 32 random bytes, in state st.
func (s *Server) newRootKey(st string) (*state.RootKey, error) {
	material := make([]byte, 32)
	if _, err := rand.Read(material); err != nil {
		return nil, fmt.Errorf("server: root key: %w", err)
	}
	return &state.RootKey{KeyID: newID(), Algorithm: RootKeyAlgorithm, CreateTime: s.now().UnixNano(), State: st, Key: material}, nil
}

// activeRootKey returns the active root key, writing the keyring's first
// one if it has none.
func (s *Server) activeRootKey() (*state.RootKey, error) {
	if k := s.store.Snapshot().ActiveRootKey(); k != nil {
		return k, nil
	}
	s.keyringMu.Lock()
	defer s.keyringMu.Unlock()
	if k := s.store.Snapshot().ActiveRootKey(); k != nil {
		return k, nil
	}
	k, err := s.newRootKey(state.RootKeyActive)
	if err != nil {
		return nil, err
	}
	if _, err := s.Apply(fsm.RootKeyUpsertRequestType, &fsm.RootKeyUpsertRequest{Keys: []*state.RootKey{k}}); err != nil {
		return nil, err
	}
	s.log.Info().Str("key_id", k.KeyID).Msg("keyring: made the first root key")
	return k, nil
}

// RotateRootKey makes a new active root key; the one active before stays
// to decrypt what it encrypted. With full, every variable is then
// re-encrypted with the new key in the background: each older key that
// encrypts one is rekeying until none does, then inactive. It returns the
// new key.
func (s *Server) RotateRootKey(algorithm string, full bool) (*state.RootKey, uint64, error) {
	if algorithm != "" && algorithm != RootKeyAlgorithm {
		return nil, 0, badRequest(fmt.Errorf("unsupported encryption algorithm %q: Drover has %q", algorithm, RootKeyAlgorithm))
	}
	s.keyringMu.Lock()
	defer s.keyringMu.Unlock()
	k, err := s.newRootKey(state.RootKeyActive)
	if err != nil {
		return nil, 0, err
	}
	req := &fsm.RootKeyUpsertRequest{Keys: []*state.RootKey{k}}
	snap := s.store.Snapshot()
	for _, old := range snap.RootKeys() {
		c := *old
		switch {
		case full && old.State != state.RootKeyRekeying && (old.State == state.RootKeyActive || len(snap.VariablesEncryptedWith(old.KeyID, 1)) > 0):
			c.State = state.RootKeyRekeying
		case old.State == state.RootKeyActive:
			c.State = state.RootKeyInactive
		default:
			continue
		}
		req.Keys = append(req.Keys, &c)
	}
	index, err := s.Apply(fsm.RootKeyUpsertRequestType, req)
	if errors.Is(err, fsm.ErrConflict) {
		// Another key became active since the snapshot (a rotation on a
		// leader just before this one).
		return nil, 0, fmt.Errorf("%w: the keyring changed meanwhile; rotate again: %w", ErrConflict, err)
	}
	if err != nil {
		return nil, 0, err
	}
	if full {
		select {
		case s.rekeyKick <- struct{}{}:
		default:
		}
	}
	s.log.Info().Str("key_id", k.KeyID).Bool("full", full).Msg("keyring: rotated the root key")
	stored := s.store.Snapshot().RootKey(k.KeyID)
	if stored == nil {
		stored = k
	}
	return stored, index, nil
}

// DeleteRootKey removes an inactive root key that no variable is
// encrypted with (ErrConflict otherwise: a key in use is never removed, as
// what it encrypted would be lost; a full rotation moves variables off it).
func (s *Server) DeleteRootKey(id string) (uint64, error) {
	index, err := s.Apply(fsm.RootKeyDeleteRequestType, &fsm.RootKeyDeleteRequest{KeyID: id})
	if errors.Is(err, fsm.ErrRootKeyInUse) {
		return 0, fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return index, err
}

// rekeyVariables runs on the leader: whenever a key is rekeying (after a
// full rotation, or left so by a leader before this one), it re-encrypts
// the variables encrypted with it with the active key, one entry each (a
// variable changed meanwhile is read again: a writer that read the key
// before the rotation may have sealed it with the rekeying key again),
// then marks it inactive.
func (s *Server) rekeyVariables(ctx context.Context) {
	for {
		if err := s.rekeyOnce(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn().Err(err).Msg("keyring: re-encrypting variables stopped; it resumes at the next full rotation or leadership")
		}
		select {
		case <-ctx.Done():
			return
		case <-s.rekeyKick:
		}
	}
}

// rekeyOnce moves every variable off the rekeying keys.
func (s *Server) rekeyOnce(ctx context.Context) error {
	for {
		snap := s.store.Snapshot()
		active := snap.ActiveRootKey()
		var rekeying *state.RootKey
		for _, k := range snap.RootKeys() {
			if k.State == state.RootKeyRekeying {
				rekeying = k
				break
			}
		}
		if rekeying == nil || active == nil {
			return nil
		}
		vars := snap.VariablesEncryptedWith(rekeying.KeyID, rekeyBatch)
		if len(vars) == 0 {
			c := *rekeying
			c.State = state.RootKeyInactive
			if _, err := s.Apply(fsm.RootKeyUpsertRequestType, &fsm.RootKeyUpsertRequest{Keys: []*state.RootKey{&c}}); err != nil {
				return err
			}
			s.log.Info().Str("key_id", c.KeyID).Msg("keyring: every variable re-encrypted; the old root key is inactive")
			continue
		}
		for _, v := range vars {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			items, err := s.DecryptVariable(snap, v)
			if err != nil {
				return err
			}
			data, err := s.seal(active, v.Namespace, v.Path, items)
			if err != nil {
				return err
			}
			_, err = s.Apply(fsm.VariableApplyRequestType, &fsm.VariableApplyRequest{Op: fsm.VarOpRekey, CheckIndex: v.ModifyIndex,
				Var: &state.Variable{Namespace: v.Namespace, Path: v.Path, KeyID: active.KeyID, Data: data}})
			// Changed, deleted, or sealed with a key removed meanwhile:
			// the next round reads it again.
			if err != nil && !errors.Is(err, fsm.ErrConflict) && !errors.Is(err, state.ErrNotFound) && !errors.Is(err, fsm.ErrInactiveRootKey) {
				return err
			}
		}
	}
}
