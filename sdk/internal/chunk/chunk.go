// Package chunk allocates many small objects of one type a chunk at a
// time. A plan's placements need a few small objects each (allocation,
// metric, option and score records), and a plugin's mirror copies every
// allocation of a kept plan; one allocation per object was a measurable
// share of a large evaluation inside wasm, where allocating costs several
// times more than natively.
package chunk

// Chunks hands out new elements of T from arrays allocated a chunk at a
// time, growing from 8 to 256 elements a chunk (or to Limit). The elements
// are not reused: a chunk lives as long as any of its elements does, which
// is why callers that keep elements long bound the chunk size.
type Chunks[T any] struct {
	// Limit caps the chunk size (0: 256).
	Limit int
	free  []T
	size  int
}

const maxChunk = 256

// Reserve makes the next n elements come from one array of at least n.
func (c *Chunks[T]) Reserve(n int) {
	if n > len(c.free) {
		c.free = make([]T, n)
	}
}

// Take returns n new zeroed elements; appending to the result reallocates
// rather than overwriting the next elements.
func (c *Chunks[T]) Take(n int) []T {
	if n > len(c.free) {
		limit := c.Limit
		if limit == 0 {
			limit = maxChunk
		}
		c.size = min(max(2*c.size, 8), limit)
		c.free = make([]T, max(c.size, n))
	}
	s := c.free[:n:n]
	c.free = c.free[n:]
	return s
}

// One returns a new zeroed element.
func (c *Chunks[T]) One() *T { return &c.Take(1)[0] }
