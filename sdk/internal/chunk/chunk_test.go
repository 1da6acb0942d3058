package chunk

import "testing"

func TestChunks(t *testing.T) {
	var c Chunks[int]
	a := c.Take(3)
	b := c.Take(2)
	a = append(a, 7) // must not write into b
	if b[0] != 0 || len(a) != 4 {
		t.Fatalf("appending to one take overwrote the next: %v %v", a, b)
	}
	if cap(c.free)+5 != 8 {
		t.Fatalf("first chunk of %d, want 8", cap(c.free)+5)
	}
	c.Reserve(100)
	first := c.One()
	for i := 1; i < 100; i++ {
		c.One()
	}
	if len(c.free) != 0 || first == nil {
		t.Fatalf("100 reserved elements did not come from one array: %d left", len(c.free))
	}
	small := Chunks[int]{Limit: 4}
	for i := 0; i < 10; i++ {
		small.One()
	}
	if small.size != 4 {
		t.Fatalf("chunk size %d, want the limit 4", small.size)
	}
}
