package sdk

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// DeviceAttributes are a device's attributes ("memory" = "11 GiB",
// "cuda_cores" = "3584"), as strings constraints compare. In JSON they take
// Nomad's form, an object per attribute with one of Int, Float, String or
// Bool and an optional Unit, so Nomad's clients can read them; reading
// accepts that form and plain strings.
type DeviceAttributes map[string]string

// deviceAttribute is Nomad's JSON form of one attribute.
type deviceAttribute struct {
	Float  *float64 `json:",omitempty"`
	Int    *int64   `json:",omitempty"`
	String *string  `json:",omitempty"`
	Bool   *bool    `json:",omitempty"`
	Unit   string   `json:",omitempty"`
}

// MarshalJSON writes Nomad's attribute objects.
func (a DeviceAttributes) MarshalJSON() ([]byte, error) {
	if a == nil {
		return []byte("null"), nil
	}
	out := make(map[string]deviceAttribute, len(a))
	for k, v := range a {
		out[k] = parseDeviceAttribute(v)
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads Nomad's attribute objects, or plain strings.
func (a *DeviceAttributes) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*a = nil
		return nil
	}
	out := make(DeviceAttributes, len(raw))
	for k, r := range raw {
		var s string
		if json.Unmarshal(r, &s) == nil {
			out[k] = s
			continue
		}
		var da deviceAttribute
		if err := json.Unmarshal(r, &da); err != nil {
			return fmt.Errorf("device attribute %q: %w", k, err)
		}
		out[k] = da.text()
	}
	*a = out
	return nil
}

// text renders an attribute as a string: the value, then the unit.
func (d deviceAttribute) text() string {
	var v string
	switch {
	case d.Int != nil:
		v = strconv.FormatInt(*d.Int, 10)
	case d.Float != nil:
		v = strconv.FormatFloat(*d.Float, 'f', -1, 64)
	case d.Bool != nil:
		v = strconv.FormatBool(*d.Bool)
	case d.String != nil:
		v = *d.String
	}
	if d.Unit != "" {
		v += " " + d.Unit
	}
	return v
}

// parseDeviceAttribute reads "11 GiB", "3584", "1.5", "true" or any other
// text into Nomad's attribute form.
func parseDeviceAttribute(s string) deviceAttribute {
	value, unit := s, ""
	if i := strings.LastIndexByte(s, ' '); i > 0 {
		if _, err := strconv.ParseFloat(s[:i], 64); err == nil {
			value, unit = s[:i], s[i+1:]
		}
	}
	if i, err := strconv.ParseInt(value, 10, 64); err == nil {
		return deviceAttribute{Int: &i, Unit: unit}
	}
	if f, err := strconv.ParseFloat(value, 64); err == nil {
		return deviceAttribute{Float: &f, Unit: unit}
	}
	if unit == "" {
		if b, err := strconv.ParseBool(value); err == nil {
			return deviceAttribute{Bool: &b}
		}
	}
	return deviceAttribute{String: &s}
}

// MarshalJSON writes an empty Opaque as null: a block that holds nothing
// is a block that is not there. (Maps come back empty rather than nil from
// the state's encoding; without this, Nomad's clients would read such a
// block as present.)
func (o Opaque) MarshalJSON() ([]byte, error) {
	if len(o) == 0 {
		return []byte("null"), nil
	}
	return json.Marshal(map[string]any(o))
}
