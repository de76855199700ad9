package engine

import (
	"cmp"
	"context"
	"errors"
	"math"
	"strconv"

	"github.com/waitroom/waitroom"
)

// This file reads a room's line, its history and many sessions at once.

// Waiting implements waitroom.Store.
func (s *Store) Waiting(ctx context.Context, name string, page waitroom.Page) ([]waitroom.Session, string, error) {
	after := int64(math.MinInt64) // the cursor: the place (moved) or ticket of the last item
	if page.After != "" {
		v, err := strconv.ParseInt(page.After, 10, 64)
		if err != nil || v == math.MinInt64 {
			return nil, "", waitroom.Errorf(waitroom.CodeInvalidRequest, "The cursor %q is not one this server returned.", page.After)
		}
		after = v
	}
	r, err := s.get(name)
	if err != nil {
		return nil, "", err
	}
	size := page.Size()
	out := make([]waitroom.Session, 0, min(size, r.nWaiting))
	var pos int64
	if after < 0 {
		moved := r.lane.after(after)
		pos = int64(r.lane.len() - len(moved))
		for _, e := range moved[:min(len(moved), size)] {
			pos++
			v := r.view(e.ticket, e.rec, false)
			v.Position = pos
			out = append(out, v)
		}
		after = 0
	}
	if r.tiered() && len(out) < size {
		pos = int64(r.lane.len())
		if after > 0 {
			for i := range r.tiers.lines {
				pos += r.tiers.lines[i].before(after + 1)
			}
		}
		for _, tk := range r.tierMerge(after, size-len(out)) {
			pos++
			v := r.view(tk, r.wait.at(int(tk-r.base)), false)
			v.Position = pos
			out = append(out, v)
		}
	} else if !r.tiered() {
		pos = r.arrayPage(&out, after, size, pos)
	}
	next := ""
	if len(out) == size && pos < int64(r.nWaiting) {
		last := out[len(out)-1]
		next = strconv.FormatInt(cmp.Or(last.Place, last.Ticket), 10)
	}
	wait := r.barrier()
	r.mu.Unlock()
	return out, next, wait()
}

// arrayPage appends to out the unmoved waiting sessions of an untiered room
// after ticket after, until out holds size; pos is the position before them.
func (r *room) arrayPage(out *[]waitroom.Session, after int64, size int, pos int64) int64 {
	i := max(r.head, int(min(max(after+1-r.base, 0), int64(r.wait.len()))))
	if len(*out) == size {
		i = r.wait.len() // the page is full
	} else if i > 0 && i <= r.wait.len() {
		pos = int64(r.lane.len()) + r.ranks.rank(i-1)
	} else {
		pos = int64(r.lane.len())
	}
	for ; i < r.wait.len() && len(*out) < size; i++ {
		p := r.wait.at(i)
		if p.status != stWaiting {
			continue
		}
		pos++
		v := r.view(r.base+int64(i), p, false)
		v.Position = pos
		*out = append(*out, v)
	}
	return pos
}

// History implements waitroom.Store.
func (s *Store) History(ctx context.Context, name string, status waitroom.Status, page waitroom.Page) ([]waitroom.Session, string, error) {
	if status != "" && !status.Final() {
		return nil, "", waitroom.Errorf(waitroom.CodeInvalidRequest, "History holds served, left and expired sessions, not %q.", string(status))
	}
	r, err := s.get(name)
	if err != nil {
		return nil, "", err
	}
	if r.hist != nil {
		out, next, err := r.hist.list(status, page)
		for i := range out {
			r.totals(&out[i])
		}
		r.mu.Unlock()
		return out, next, err
	}
	wait := r.barrier()
	r.mu.Unlock()
	if err := wait(); err != nil {
		return nil, "", err
	}
	if s.archive == nil {
		return []waitroom.Session{}, "", nil
	}
	out, next, err := s.archive.List(ctx, name, status, page)
	if err != nil {
		var we *waitroom.Error
		if !errors.As(err, &we) {
			err = waitroom.Unavailable(err, "reading history")
		}
		return nil, "", err
	}
	r.mu.RLock()
	for i := range out {
		r.totals(&out[i])
	}
	r.mu.RUnlock()
	return out, next, nil
}

// Sessions implements waitroom.Store.
func (s *Store) Sessions(ctx context.Context, name string, ids []string) ([]waitroom.Session, error) {
	r, err := s.get(name)
	if err != nil {
		return nil, err
	}
	out := make([]waitroom.Session, len(ids))
	var missing []int
	for i, id := range ids {
		sid, p, err := s.find(r, id)
		switch {
		case err != nil:
		case p != nil && sid.Ticket == 0:
			out[i] = r.entrantView(id, sid.Entry, p)
		case p != nil:
			out[i] = r.viewID(id, sid.Ticket, p, true)
		case r.hist != nil:
			if got, ok := r.hist.find(sid); ok {
				r.totals(&got)
				out[i] = got
			}
		default:
			missing = append(missing, i)
		}
	}
	wait := r.barrier()
	hist := r.hist
	r.mu.Unlock()
	if err := wait(); err != nil {
		return nil, err
	}
	for _, i := range missing {
		sid, _ := waitroom.ParseSessionID(ids[i])
		r.mu.Lock()
		r.resolve(&sid)
		r.mu.Unlock()
		if got, err := s.ended(ctx, r, sid, hist, func() error { return nil }); err == nil {
			out[i] = got
		} else if waitroom.ErrorCode(err) == waitroom.CodeUnavailable {
			return nil, err
		}
	}
	return out, nil
}
