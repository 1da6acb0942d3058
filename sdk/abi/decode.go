package abi

import (
	"fmt"

	"github.com/tinylib/msgp/msgp"
)

// Decode decodes one message from bytes that may come from a misbehaving
// peer. The generated decoders size slices and maps from the counts in the
// message before reading their elements, so a few bytes claiming a
// billion elements would allocate gigabytes. Decode first walks the
// message without allocating (msgp.Skip, depth-limited) to check that
// every count is backed by bytes, which bounds what decoding allocates by
// the message's size; then it decodes, and refuses trailing bytes.
func Decode(b []byte, m msgp.Unmarshaler) error {
	if _, err := msgp.Skip(b); err != nil {
		return fmt.Errorf("abi: malformed %T: %w", m, err)
	}
	rest, err := m.UnmarshalMsg(b)
	if err != nil {
		return fmt.Errorf("abi: decode %T: %w", m, err)
	}
	if len(rest) != 0 {
		return fmt.Errorf("abi: %T followed by %d stray bytes", m, len(rest))
	}
	return nil
}
