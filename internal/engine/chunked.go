package engine

// chunkBits sets the chunk size of the big per-room arrays: 4,096 elements
// (256 KiB of waiting slots, 64 KiB of deadlines).
const (
	chunkBits = 12
	chunkLen  = 1 << chunkBits
)

// chunked is a growable array kept in chunks of chunkLen elements, for the
// arrays that grow with the line: the waiting slots and the deadline heap.
// Growing never copies what is there and dropping a prefix copies only the
// chunk list. A flat slice did both: at two million waiting, the join that
// outgrew a slice allocated and copied tens of megabytes with the room
// locked, and an allocation that large during a garbage collection makes
// its goroutine help mark in proportion, so one join held everyone in the
// room for up to 160 ms. Every chunk but the last is full; the first grows
// like a slice until it is full, so a small room costs what a slice would.
type chunked[T any] struct {
	chunks [][]T
	n      int
	spare  []T // an emptied full chunk, kept for the next push
}

// len is the number of elements.
func (c *chunked[T]) len() int { return c.n }

// at returns element i; 0 <= i < len. The pointer stays valid until the
// element is dropped or popped, except in the first chunk while it grows.
func (c *chunked[T]) at(i int) *T { return &c.chunks[i>>chunkBits][i&(chunkLen-1)] }

// push appends v and returns its element.
func (c *chunked[T]) push(v T) *T {
	last := len(c.chunks) - 1
	switch {
	case last < 0:
		c.chunks = append(c.chunks, make([]T, 0, 16))
		last = 0
	case len(c.chunks[last]) == chunkLen:
		next := c.spare
		if next == nil {
			next = make([]T, 0, chunkLen)
		}
		c.spare = nil
		c.chunks = append(c.chunks, next)
		last++
	case len(c.chunks[last]) == cap(c.chunks[last]):
		// Only the first chunk grows by reallocation, and only until it
		// is full.
		grown := make([]T, len(c.chunks[last]), min(chunkLen, 2*cap(c.chunks[last])))
		copy(grown, c.chunks[last])
		c.chunks[last] = grown
	}
	c.chunks[last] = append(c.chunks[last], v)
	c.n++
	return &c.chunks[last][len(c.chunks[last])-1]
}

// pop removes the last element and returns it; len must be positive.
func (c *chunked[T]) pop() T {
	last := len(c.chunks) - 1
	ch := c.chunks[last]
	v := ch[len(ch)-1]
	var zero T
	ch[len(ch)-1] = zero
	c.chunks[last] = ch[:len(ch)-1]
	c.n--
	if len(c.chunks[last]) == 0 && last > 0 {
		c.spare = c.chunks[last]
		c.chunks[last] = nil
		c.chunks = c.chunks[:last]
	}
	return v
}

// dropChunks removes the first k chunks (k*chunkLen elements); every
// element after them moves k*chunkLen down. The last chunk must stay.
func (c *chunked[T]) dropChunks(k int) {
	n := copy(c.chunks, c.chunks[k:])
	clear(c.chunks[n:])
	c.chunks = c.chunks[:n]
	c.n -= k * chunkLen
}

// reset empties c, keeping a small first chunk for reuse.
func (c *chunked[T]) reset() {
	if len(c.chunks) == 1 && cap(c.chunks[0]) < chunkLen {
		clear(c.chunks[0])
		c.chunks[0] = c.chunks[0][:0]
	} else {
		c.chunks = nil
	}
	c.spare = nil
	c.n = 0
}
