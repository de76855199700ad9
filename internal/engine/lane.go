package engine

import "sort"

// lane holds the waiting sessions an operator moved to the front, ordered by
// place. New places are always smaller than every place before, so a move
// appends: items runs from the largest place to the smallest, and the first
// in line is the last item. Lanes stay as small as operators make them, so
// removing from the middle may copy.
type lane struct {
	items    []laneItem
	byTicket map[int64]*rec
}

type laneItem struct {
	place  int64
	ticket int64
	rec    *rec
}

func (l *lane) len() int { return len(l.items) }

// add puts p (ticket t, place p.place) at the front; p.place must be smaller
// than every place in the lane.
func (l *lane) add(t int64, p *rec) {
	l.items = append(l.items, laneItem{place: p.place, ticket: t, rec: p})
	if l.byTicket == nil {
		l.byTicket = make(map[int64]*rec)
	}
	l.byTicket[t] = p
}

// index returns where place is or would be.
func (l *lane) index(place int64) int {
	return sort.Search(len(l.items), func(i int) bool { return l.items[i].place <= place })
}

// rec returns the lane's session with ticket t, or nil.
func (l *lane) rec(t int64) *rec {
	if len(l.items) == 0 {
		return nil
	}
	return l.byTicket[t]
}

// position returns the 1-based rank of place in the line.
func (l *lane) position(place int64) int64 {
	return int64(len(l.items) - l.index(place))
}

// first returns the first in line, or a nil rec when the lane is empty.
func (l *lane) first() (int64, *rec) {
	if len(l.items) == 0 {
		return 0, nil
	}
	e := l.items[len(l.items)-1]
	return e.ticket, e.rec
}

// remove takes ticket t at place out of the lane.
func (l *lane) remove(t int64, place int64) {
	i := l.index(place)
	if i < len(l.items) && l.items[i].ticket == t {
		l.items = append(l.items[:i], l.items[i+1:]...)
		delete(l.byTicket, t)
		if len(l.items) == 0 {
			l.items, l.byTicket = nil, nil
		}
	}
}

// after returns the lane's items whose place is larger than place, in line
// order (smallest place first).
func (l *lane) after(place int64) []laneItem {
	i := l.index(place) // items[i:] have place <= place
	out := make([]laneItem, 0, i)
	for j := i - 1; j >= 0; j-- {
		out = append(out, l.items[j])
	}
	return out
}
