package engine

// deadline is an entry in a room's deadline heap. Entries are lazy: a
// session's entry may be earlier than its real deadline (presence moved it
// later), in which case popping it reschedules; an entry whose at no longer
// matches the session's scheduled time is stale and dropped. So presence costs
// no heap work and expiry costs work proportional to what comes due.
type deadline struct {
	at     int64 // unix milliseconds
	ticket int64
}

// deadlines is a binary min-heap ordered by (at, ticket), in chunks: it
// holds an entry per waiting session, so it grows with the line.
type deadlines struct{ c chunked[deadline] }

func (h *deadlines) len() int { return h.c.len() }

// top returns the earliest entry; len must be positive.
func (h *deadlines) top() deadline { return *h.c.at(0) }

func (h *deadlines) less(i, j int) bool {
	a, b := h.c.at(i), h.c.at(j)
	if a.at != b.at {
		return a.at < b.at
	}
	return a.ticket < b.ticket
}

func (h *deadlines) swap(i, j int) {
	a, b := h.c.at(i), h.c.at(j)
	*a, *b = *b, *a
}

func (h *deadlines) push(d deadline) {
	h.c.push(d)
	i := h.c.len() - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.swap(i, p)
		i = p
	}
}

func (h *deadlines) pop() deadline {
	top := *h.c.at(0)
	last := h.c.pop()
	n := h.c.len()
	if n == 0 {
		return top
	}
	*h.c.at(0) = last
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			break
		}
		h.swap(i, m)
		i = m
	}
	return top
}
