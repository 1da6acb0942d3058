package sdk

import "github.com/tinylib/msgp/msgp"

// deepCopy copies src into dst through the generated codec: every nested
// pointer, slice and map is new. A value that cannot be encoded (an Opaque
// holding a type MessagePack has no form for) could not be stored or sent
// either, so it is a programming error and panics.
func deepCopy[T any, P interface {
	*T
	msgp.Marshaler
	msgp.Unmarshaler
}](src P) P {
	if src == nil {
		return nil
	}
	b, err := src.MarshalMsg(nil)
	if err != nil {
		panic("sdk: copy: " + err.Error())
	}
	dst := P(new(T))
	if _, err := dst.UnmarshalMsg(b); err != nil {
		panic("sdk: copy: " + err.Error())
	}
	return dst
}

// Copy returns a deep copy of the job.
func (j *Job) Copy() *Job { return deepCopy(j) }

// Copy returns a deep copy of the node.
func (n *Node) Copy() *Node { return deepCopy(n) }

// Copy returns a deep copy of the allocation, its job included.
func (a *Allocation) Copy() *Allocation { return deepCopy(a) }
