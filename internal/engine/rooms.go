package engine

import (
	"context"
	"slices"
	"time"

	"github.com/waitroom/waitroom"
)

// This file is the rooms themselves: creating, configuring, reading and
// deleting them.

// PutRoom implements waitroom.Store.
func (s *Store) PutRoom(ctx context.Context, name string, cfg waitroom.RoomConfig, now time.Time) (waitroom.Room, bool, error) {
	return s.putRoom(name, cfg, true, 0, now)
}

// putRoom is PutRoom, and with create false UpdateRoom (revisions.go):
// then an unknown room is not made, and a positive rev must be the room's.
func (s *Store) putRoom(name string, cfg waitroom.RoomConfig, create bool, rev int64, now time.Time) (waitroom.Room, bool, error) {
	if err := s.usable(); err != nil {
		return waitroom.Room{}, false, err
	}
	if err := waitroom.CheckRoomName(name); err != nil {
		return waitroom.Room{}, false, err
	}
	if err := cfg.Validate(); err != nil {
		return waitroom.Room{}, false, err
	}
	cfg = cfg.Normalize()
	r, created, err := s.lockForPut(name, cfg, create)
	if err != nil {
		return waitroom.Room{}, false, err
	}
	t := r.clock(now)
	if created {
		r.fillBucket()
	}
	s.begin(r, waitroom.EventConfig, t)
	if created && r.ev != nil {
		r.ev.PausedBefore = false
	}
	r.settle(t)
	if err := firstErr(r.checkRevision(rev), r.checkSchedule(cfg), r.checkStock(cfg), r.refusesTiers(cfg)); err != nil {
		if r.ev != nil {
			// Refused: nothing was configured, so no config event (one
			// without a Config would make durable stores lose theirs).
			r.ev.Kind = waitroom.EventSessions
		}
		after := s.commit(r)
		r.mu.Unlock()
		return waitroom.Room{}, false, firstErr(after(), err)
	}
	if !created {
		old := r.cfg.Inventory
		r.reconfigure(cfg)
		r.restock(old)
		r.rev++
	}
	r.applySchedule(cfg, t)
	r.settle(t)
	r.configured()
	info := r.info()
	after := s.commit(r)
	r.mu.Unlock()
	if err := after(); err != nil {
		return waitroom.Room{}, false, err
	}
	return info, created, nil
}

// lockForPut returns room name locked, made with cfg if it does not exist
// and create is set (created says so), or CodeRoomNotFound. The store's
// lock is never held while waiting for a room's: DeleteRoom takes them the
// other way round.
func (s *Store) lockForPut(name string, cfg waitroom.RoomConfig, create bool) (r *room, created bool, err error) {
	for {
		s.mu.Lock()
		r = s.rooms[name]
		if r == nil {
			if !create {
				s.mu.Unlock()
				return nil, false, waitroom.RoomNotFound(name)
			}
			r = newRoom(name, cfg, s.tickets[name], s.keepHistory)
			r.rev = s.revs[name] + 1
			s.rooms[name] = r
			r.mu.Lock() // nobody else can hold it yet
			s.mu.Unlock()
			return r, true, nil
		}
		s.mu.Unlock()
		r.mu.Lock()
		if !r.gone {
			return r, false, nil
		}
		// Deleted meanwhile: it leaves the map before DeleteRoom
		// returns, so look again.
		r.mu.Unlock()
	}
}

// Room implements waitroom.Store.
func (s *Store) Room(ctx context.Context, name string) (waitroom.Room, error) {
	r, err := s.get(name)
	if err != nil {
		return waitroom.Room{}, err
	}
	info := r.info()
	wait := r.barrier()
	r.mu.Unlock()
	return info, wait()
}

// HasRoom reports whether room name exists, without waiting for its
// latest change to be durable (Room does): for a journal's own work, which
// runs while that change may be the one being written.
func (s *Store) HasRoom(name string) bool {
	r, err := s.room(name)
	if err != nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return !r.gone
}

// Rooms implements waitroom.Store.
func (s *Store) Rooms(ctx context.Context) ([]waitroom.Room, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	rs := make([]*room, 0, len(s.rooms))
	for _, r := range s.rooms {
		rs = append(rs, r)
	}
	s.mu.RUnlock()
	out := make([]waitroom.Room, 0, len(rs))
	for _, r := range rs {
		r.mu.Lock()
		if !r.gone {
			out = append(out, r.info())
		}
		r.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b waitroom.Room) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out, nil
}

// DeleteRoom implements waitroom.Store.
func (s *Store) DeleteRoom(ctx context.Context, name string, force bool, now time.Time) error {
	r, err := s.get(name)
	if err != nil {
		return err
	}
	t := r.clock(now)
	s.begin(r, waitroom.EventSessions, t)
	r.settle(t)
	live := r.nWaiting + len(r.active)
	if r.preQueue() {
		live += r.sch.nPre
	}
	if !force && live > 0 {
		after := s.commit(r)
		r.mu.Unlock()
		return firstErr(after(), waitroom.Errorf(waitroom.CodeRoomNotEmpty, "Room %q has %d live sessions; delete it with force to end them.", name, live))
	}
	if r.ev != nil {
		r.ev.Kind = waitroom.EventDeleted
	}
	for tk, p := range r.active {
		r.end(tk, p, waitroom.ReasonRoomDeleted, t)
	}
	for r.nWaiting > 0 {
		tk, p := r.first()
		r.end(tk, p, waitroom.ReasonRoomDeleted, t)
	}
	if r.preQueue() {
		for i := range r.sch.pre {
			if p := &r.sch.pre[i]; p.status == stWaiting {
				r.endEntrant(int64(i+1), p, waitroom.ReasonRoomDeleted, t)
			}
		}
	}
	r.gone = true
	after := s.commit(r)
	s.mu.Lock()
	delete(s.rooms, name)
	s.tickets[name] = r.lastTicket
	s.revs[name] = r.rev
	s.mu.Unlock()
	r.mu.Unlock()
	return after()
}

// reconfigure replaces the configuration and re-plans deadlines.
func (r *room) reconfigure(cfg waitroom.RoomConfig) {
	old := r.cfg
	r.cfg = cfg
	r.fillBucket()
	r.retier(old)
	r.lineMoved = true // notify_at or the tiers may have changed
	if old.ActiveTimeout == cfg.ActiveTimeout && old.MaxSession == cfg.MaxSession &&
		old.WaitingTimeout == cfg.WaitingTimeout && old.Grace == cfg.Grace && old.ClaimWindow == cfg.ClaimWindow {
		return
	}
	// Timeouts changed: deadlines may now be earlier than scheduled. This
	// is O(n log n), and configuration changes are rare.
	for i := r.head; i < r.wait.len(); i++ {
		if p := r.wait.at(i); p.status == stWaiting {
			p.sched = 0
			r.schedule(r.base+int64(i), p)
		}
	}
	for t, p := range r.active {
		p.sched = 0
		r.schedule(t, p)
	}
	for _, e := range r.lane.items {
		e.rec.sched = 0
		r.schedule(e.ticket, e.rec)
	}
}

func (r *room) info() waitroom.Room {
	info := waitroom.Room{Name: r.name, RoomConfig: r.cfg, Waiting: r.nWaiting, Active: len(r.active), LastTicket: r.lastTicket,
		Admissions: r.admissions, Inversions: r.inversions, Revision: r.rev}
	if r.preQueue() {
		info.Entrants = r.sch.nPre
	}
	if r.cfg.Inventory != nil {
		left := r.remaining()
		info.Sold, info.Reserved, info.Remaining = r.sold, r.reserved, &left
	}
	return info
}
