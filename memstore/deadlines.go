package memstore

// deadline is an entry in a room's deadline heap. Entries are lazy: a
// session's entry may be earlier than its real deadline (presence moved it
// later), in which case popping it reschedules; an entry whose at no longer
// matches the session's scheduled time is stale and dropped. So presence costs
// no heap work and expiry costs work proportional to what comes due.
type deadline struct {
	at     int64 // unix milliseconds
	ticket int64
}

// deadlines is a binary min-heap ordered by (at, ticket).
type deadlines []deadline

func (h deadlines) less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].ticket < h[j].ticket
}

func (h *deadlines) push(d deadline) {
	*h = append(*h, d)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *deadlines) pop() deadline {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
