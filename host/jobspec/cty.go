package jobspec

import (
	"fmt"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// ctyString converts a primitive value to its string form.
func ctyString(v cty.Value) (string, error) {
	if v.IsNull() {
		return "", nil
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil {
		return "", err
	}
	if !s.IsKnown() {
		return "", fmt.Errorf("value is not known")
	}
	return s.AsString(), nil
}

// ctyToGo converts a value to plain Go values (string, float64 or int64,
// bool, []any, map[string]any), as JSON decoding would produce.
func ctyToGo(v cty.Value) any {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString()
	case t == cty.Number:
		bf := v.AsBigFloat()
		if i, acc := bf.Int64(); acc == 0 {
			return i
		}
		f, _ := bf.Float64()
		return f
	case t == cty.Bool:
		return v.True()
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		out := []any{}
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, ctyToGo(e))
		}
		return out
	case t.IsMapType() || t.IsObjectType():
		out := map[string]any{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			out[k.AsString()] = ctyToGo(e)
		}
		return out
	}
	return nil
}
