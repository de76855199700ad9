package engine

import (
	"crypto/subtle"
	"strconv"

	"github.com/waitroom/waitroom"
)

// history keeps a room's most recent ended sessions in memory, for stores
// without an Archive. When it holds more than limit it forgets the oldest
// half at once, so adding stays O(1) amortized.
type history struct {
	limit int
	first int64 // sequence number of items[0]
	items []waitroom.Session
	index map[int64]int64 // ticket → sequence number
}

func newHistory(limit int) *history {
	return &history{limit: limit, first: 1, index: make(map[int64]int64)}
}

func (h *history) add(s waitroom.Session) {
	if len(h.items) >= h.limit {
		drop := max(1, len(h.items)/2)
		for _, old := range h.items[:drop] {
			delete(h.index, histKey(old))
		}
		h.items = append([]waitroom.Session(nil), h.items[drop:]...)
		h.first += int64(drop)
	}
	h.index[histKey(s)] = h.first + int64(len(h.items))
	h.items = append(h.items, s)
}

// find returns the ended session with id, if it is still kept.
func (h *history) find(id waitroom.SessionID) (waitroom.Session, bool) {
	k := id.Ticket
	if k == 0 {
		k = -id.Entry
	}
	seq, ok := h.index[k]
	if !ok {
		return waitroom.Session{}, false
	}
	s := h.items[seq-h.first]
	want := id.String()
	if subtle.ConstantTimeCompare([]byte(s.ID), []byte(want)) != 1 {
		return waitroom.Session{}, false
	}
	return s, true
}

// list returns ended sessions newest first, after the cursor, filtered by
// status when it is not empty.
func (h *history) list(status waitroom.Status, page waitroom.Page) ([]waitroom.Session, string, error) {
	end := h.first + int64(len(h.items)) // one past the newest sequence number
	if page.After != "" {
		c, err := strconv.ParseInt(page.After, 10, 64)
		if err != nil || c < 1 {
			return nil, "", waitroom.Errorf(waitroom.CodeInvalidRequest, "The cursor %q is not one this server returned.", page.After)
		}
		end = min(end, c)
	}
	size := page.Size()
	out := make([]waitroom.Session, 0, min(size, 64))
	seq := end - 1
	for ; seq >= h.first && len(out) < size; seq-- {
		s := h.items[seq-h.first]
		if status == "" || s.Status == status {
			out = append(out, s)
		}
	}
	next := ""
	if len(out) == size && seq >= h.first {
		next = strconv.FormatInt(seq+1, 10)
	}
	return out, next, nil
}

// histKey indexes an ended session by its ticket, or, for an entrant that
// ended in a pre-queue without one, by its negated entry number.
func histKey(s waitroom.Session) int64 {
	if s.Ticket != 0 {
		return s.Ticket
	}
	id, _ := waitroom.ParseSessionID(s.ID)
	return -id.Entry
}

// findTicket returns the ended session with ticket t, if it is still kept.
func (h *history) findTicket(t int64) (waitroom.Session, bool) {
	seq, ok := h.index[t]
	if !ok {
		return waitroom.Session{}, false
	}
	return h.items[seq-h.first], true
}
