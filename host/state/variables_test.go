package state

import (
	"slices"
	"testing"
)

// Variables lists one namespace's (not a namespace whose name extends
// it) or every namespace's, by path prefix; a rewrite keeps the create
// index and time, a rekey every index and time.
func TestVariables_WritesAndLists(t *testing.T) {
	s, _ := NewStore()
	write := func(index uint64, fn func(tx *Txn) error) {
		t.Helper()
		if err := s.Write(index, fn); err != nil {
			t.Fatal(err)
		}
	}
	write(1, func(tx *Txn) error {
		for _, v := range []*Variable{{Namespace: "a", Path: "app/x", CreateTime: 1}, {Namespace: "a", Path: "db"},
			{Namespace: "ab", Path: "app/y"}, {Namespace: "b", Path: "app"}} {
			if err := tx.SetVariable(v); err != nil {
				return err
			}
		}
		return nil
	})
	write(2, func(tx *Txn) error {
		return tx.SetVariable(&Variable{Namespace: "a", Path: "app/x", CreateTime: 2, ModifyTime: 2})
	})
	write(3, func(tx *Txn) error {
		return tx.RekeyVariable(&Variable{Namespace: "a", Path: "app/x", KeyID: "k", Data: []byte{1}})
	})
	snap := s.Snapshot()
	paths := func(vs []*Variable) (out []string) {
		for _, v := range vs {
			out = append(out, v.Namespace+":"+v.Path)
		}
		return out
	}
	for _, c := range []struct {
		ns, prefix string
		want       []string
	}{
		{"a", "", []string{"a:app/x", "a:db"}},
		{"a", "app", []string{"a:app/x"}},
		{"*", "app", []string{"a:app/x", "ab:app/y", "b:app"}},
		{"c", "", nil},
	} {
		if got := paths(snap.Variables(c.ns, c.prefix)); !slices.Equal(got, c.want) {
			t.Errorf("Variables(%q, %q) = %v, want %v", c.ns, c.prefix, got, c.want)
		}
	}
	v := snap.Variable("a", "app/x")
	if v.CreateIndex != 1 || v.CreateTime != 1 || v.ModifyIndex != 2 || v.ModifyTime != 2 || v.KeyID != "k" {
		t.Errorf("variable = %+v; want created at 1 (time 1), modified at 2 (time 2), key k", v)
	}
	if got := snap.VariablesEncryptedWith("k", 0); len(got) != 1 {
		t.Errorf("encrypted with k: %v", paths(got))
	}
	if err := s.Write(4, func(tx *Txn) error { return tx.RekeyVariable(&Variable{Namespace: "a", Path: "nope"}) }); err == nil {
		t.Error("rekeyed a variable that is not there")
	}
}
