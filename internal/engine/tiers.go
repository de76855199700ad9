package engine

import (
	"sort"

	"github.com/waitroom/waitroom"
)

// tierLine holds the waiting sessions of one tier that no operator moved,
// in ticket order, which inside a tier is also place order. on marks those
// still waiting; the rest are holes until compaction drops them.
type tierLine struct {
	tickets []int64
	places  []int64
	on      ranks
	head    int // first item that may be waiting
	n       int // items waiting
}

// tiering is a tiered room's line state: one tierLine per tier, the
// weighted virtual time and last tags (see waitroom.WeightedPlace), and the
// largest ticket admitted from each tier, for counting inversions.
type tiering struct {
	lines []tierLine
	vt    int64
	fin   []int64
	most  []int64
	steps []int64 // the configuration's TierSteps, made on first use after each change
}

func (l *tierLine) add(t, place int64) {
	l.tickets = append(l.tickets, t)
	l.places = append(l.places, place)
	l.on.push(true)
	l.n++
}

func (l *tierLine) isOn(i int) bool { return l.on.get(i) }

// remove takes ticket t out of the line.
func (l *tierLine) remove(t int64) {
	i := sort.Search(len(l.tickets), func(i int) bool { return l.tickets[i] >= t })
	if i == len(l.tickets) || l.tickets[i] != t || !l.isOn(i) {
		return
	}
	l.on.set(i, false)
	l.n--
	if l.n == 0 {
		*l = tierLine{tickets: l.tickets[:0], places: l.places[:0]}
		return
	}
	for !l.isOn(l.head) {
		l.head++
	}
	if l.head >= 1024 && l.head*2 >= len(l.tickets) {
		l.compact()
	}
}

// compact drops the items before head, all holes.
func (l *tierLine) compact() {
	tickets := append([]int64(nil), l.tickets[l.head:]...)
	places := append([]int64(nil), l.places[l.head:]...)
	var on ranks
	for i := l.head; i < len(l.tickets); i++ {
		on.push(l.isOn(i))
	}
	*l = tierLine{tickets: tickets, places: places, on: on, n: l.n}
}

// before counts the waiting items with a place below place.
func (l *tierLine) before(place int64) int64 {
	i := sort.Search(len(l.places), func(i int) bool { return l.places[i] >= place })
	if i == 0 {
		return 0
	}
	return l.on.rank(i - 1)
}

// from returns the index of the first item with a place above place.
func (l *tierLine) from(place int64) int {
	return max(l.head, sort.Search(len(l.places), func(i int) bool { return l.places[i] > place }))
}

func (r *room) tiered() bool { return len(r.cfg.Tiers) > 0 }

// placeFor gives ticket t of tier i its place, moving the tier's last tag on.
func (r *room) placeFor(i int, t int64) int64 {
	if r.cfg.TierPolicy != waitroom.TierWeighted {
		return waitroom.StrictPlace(i, t)
	}
	tg := &r.tiers
	if tg.steps == nil {
		tg.steps = r.cfg.TierSteps()
	}
	steps := tg.steps
	for len(tg.fin) < len(steps) {
		tg.fin = append(tg.fin, 0)
	}
	tag := max(tg.vt, tg.fin[i]) + steps[i]
	tg.fin[i] = tag
	return waitroom.WeightedPlace(i, tag)
}

// line returns tier i's line, growing the list to reach it.
func (r *room) line(i int) *tierLine {
	for len(r.tiers.lines) <= i {
		r.tiers.lines = append(r.tiers.lines, tierLine{})
	}
	return &r.tiers.lines[i]
}

// tierFirst returns the first in line of a tiered room's tiers: the
// smallest place among the tiers' heads.
func (r *room) tierFirst() (int64, *rec) {
	var best int64
	var bestPlace int64
	for i := range r.tiers.lines {
		l := &r.tiers.lines[i]
		if l.n == 0 {
			continue
		}
		if best == 0 || l.places[l.head] < bestPlace {
			best, bestPlace = l.tickets[l.head], l.places[l.head]
		}
	}
	return best, r.wait.at(int(best - r.base))
}

// tierPosition is the 1-based rank of unmoved waiting place in a tiered room.
func (r *room) tierPosition(place int64) int64 {
	n := int64(r.lane.len()) + 1
	for i := range r.tiers.lines {
		n += r.tiers.lines[i].before(place)
	}
	return n
}

// tierName is the name of p's tier, "" in a room without tiers.
func (r *room) tierName(p *rec) string {
	if int(p.tier) < len(r.cfg.Tiers) {
		return r.cfg.Tiers[p.tier].Name
	}
	return ""
}

// letInTier counts the admission of unmoved ticket t of tier i at place.
func (r *room) letInTier(t int64, i int, place int64) {
	tg := &r.tiers
	for len(tg.most) <= i {
		tg.most = append(tg.most, 0)
	}
	if t < tg.most[i] {
		r.inversions++
	}
	tg.most[i] = max(tg.most[i], t)
	if r.cfg.TierPolicy == waitroom.TierWeighted {
		tg.vt = max(tg.vt, waitroom.PlaceTag(place))
	}
}

// retier follows a change of tiers, which only an empty room may make:
// every tier's last tag starts again.
func (r *room) retier(old waitroom.RoomConfig) {
	r.tiers.steps = nil // shares may have changed
	if !waitroom.TiersEqual(old, r.cfg) {
		r.tiers.fin, r.tiers.lines = nil, nil
	}
}

// refusesTiers returns the error of a reconfiguration that changes the
// tiers of a room with live sessions.
func (r *room) refusesTiers(cfg waitroom.RoomConfig) error {
	live := r.nWaiting + len(r.active)
	if r.preQueue() {
		live += r.sch.nPre
	}
	if live > 0 && !waitroom.TiersEqual(r.cfg, cfg) {
		return waitroom.TiersChangedError(r.name)
	}
	return nil
}

// tierMerge lists a tiered room's unmoved waiting sessions with places
// above after, in line order, at most n of them.
func (r *room) tierMerge(after int64, n int) []int64 {
	idx := make([]int, len(r.tiers.lines))
	for i := range r.tiers.lines {
		idx[i] = r.tiers.lines[i].from(after)
	}
	var out []int64
	for len(out) < n {
		best := -1
		for i := range r.tiers.lines {
			l := &r.tiers.lines[i]
			for idx[i] < len(l.tickets) && !l.isOn(idx[i]) {
				idx[i]++
			}
			if idx[i] < len(l.tickets) && (best < 0 || l.places[idx[i]] < r.tiers.lines[best].places[idx[best]]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out = append(out, r.tiers.lines[best].tickets[idx[best]])
		idx[best]++
	}
	return out
}

// use is the count of one token's uses in a room.
type use struct {
	n       int
	expires int64
}

// spendable returns the error of the first use in uses with none left.
func (r *room) spendable(uses []waitroom.TokenUse, now int64) error {
	for _, u := range uses {
		c, ok := r.uses[useKey(u)]
		n := 0
		if ok && c.expires > now {
			n = c.n
		}
		if n+1 > u.Max {
			return waitroom.UsedError(u)
		}
	}
	return nil
}

// spend counts one use of each token, dropping expired counts now and then
// so the map follows the tokens in use.
func (r *room) spend(uses []waitroom.TokenUse, now int64) {
	if len(uses) == 0 {
		return
	}
	if r.uses == nil {
		r.uses = make(map[string]use)
	}
	if len(r.uses) >= max(64, 2*r.usesKept) {
		for k, c := range r.uses {
			if c.expires <= now {
				delete(r.uses, k)
			}
		}
		r.usesKept = len(r.uses)
	}
	for _, u := range uses {
		k := useKey(u)
		c := r.uses[k]
		if c.expires <= now {
			c = use{}
		}
		c.n++
		c.expires = max(c.expires, ms(u.Expires))
		r.uses[k] = c
	}
	if r.ev != nil {
		r.ev.Uses = append(r.ev.Uses, uses...)
	}
}

func useKey(u waitroom.TokenUse) string { return string(u.Kind) + ":" + u.ID }
