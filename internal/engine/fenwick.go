package engine

import "math/bits"

// ranks answers "how many waiting sessions up to this slot" for a room's
// waiting array in O(log n) with almost no cache misses: one bit per slot,
// and a Fenwick tree counting the set bits of each 64-slot word. A million
// waiting sessions need 128 KiB of bits and 64 KiB of tree, both small enough
// to stay in cache, so a rank costs a popcount and a short walk.
type ranks struct {
	n     int // slots pushed
	words []uint64
	tree  fenwick // tree over words: node w counts the bits of words[w]
}

// push appends a slot; set says whether it holds a waiting session.
func (r *ranks) push(set bool) {
	n := r.len()
	if n%64 == 0 {
		r.words = append(r.words, 0)
		r.tree.push(0)
	}
	r.n++
	if set {
		r.set(n, true)
	}
}

// len is the number of slots pushed.
func (r *ranks) len() int { return r.n }

// set sets or clears slot i.
func (r *ranks) set(i int, on bool) {
	w, b := i/64, uint64(1)<<(i%64)
	switch {
	case on && r.words[w]&b == 0:
		r.words[w] |= b
		r.tree.add(w, 1)
	case !on && r.words[w]&b != 0:
		r.words[w] &^= b
		r.tree.add(w, -1)
	}
}

// get reports whether slot i is set.
func (r *ranks) get(i int) bool { return r.words[i/64]>>(i%64)&1 == 1 }

// rank returns the number of set slots in 0..i (inclusive).
func (r *ranks) rank(i int) int64 {
	w := i / 64
	n := int64(bits.OnesCount64(r.words[w] & (^uint64(0) >> (63 - i%64))))
	if w > 0 {
		n += r.tree.prefix(w - 1)
	}
	return n
}

// fenwick is a Fenwick (binary indexed) tree of counts. It only grows at the
// end, one node per push. Index 0 of the slice is unused; node i (1-based)
// covers elements (i-lowbit(i), i].
type fenwick []int32

// push appends an element holding v.
func (f *fenwick) push(v int32) {
	if len(*f) == 0 {
		*f = append(*f, 0)
	}
	t := *f
	i := len(t)
	s := v
	// Node i also covers its children, which are already in the tree.
	for j := i - 1; j > i-(i&-i); j -= j & -j {
		s += t[j]
	}
	*f = append(t, s)
}

// add changes element i (0-based) by d.
func (f fenwick) add(i int, d int32) {
	for i++; i < len(f); i += i & -i {
		f[i] += d
	}
}

// prefix returns the sum of elements 0..i (0-based, inclusive).
func (f fenwick) prefix(i int) int64 {
	var s int64
	for i++; i > 0; i -= i & -i {
		s += int64(f[i])
	}
	return s
}

// dropPrefix removes the first n slots (a multiple of 64) and rebuilds the
// tree from the words that remain, in O(words).
func (r *ranks) dropPrefix(n int) {
	nw := copy(r.words, r.words[n/64:])
	r.words = r.words[:nw]
	r.n -= n
	t := r.tree[:0]
	for range nw + 1 {
		t = append(t, 0)
	}
	for i := 1; i <= nw; i++ {
		t[i] += int32(bits.OnesCount64(r.words[i-1]))
		if j := i + (i & -i); j <= nw {
			t[j] += t[i]
		}
	}
	r.tree = t
}
