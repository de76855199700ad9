package engine

import (
	"context"
	"time"

	"github.com/waitroom/waitroom"
)

// Configuration revisions (waitroom.Room.Revision) and the conditional
// change that reads them (UpdateRoom). A room's rev starts at 1 (above
// the last revision of a deleted room of its name: Store.revs) and grows
// by one in every operation that configures it: PutRoom and UpdateRoom
// (rooms.go), QueueAll (operator.go) and a StockSet (stock.go), each of
// which calls configured.

// UpdateRoom implements waitroom.Store.
func (s *Store) UpdateRoom(ctx context.Context, name string, cfg waitroom.RoomConfig, rev int64, now time.Time) (waitroom.Room, error) {
	room, _, err := s.putRoom(name, cfg, false, rev, now)
	return room, err
}

// checkRevision refuses a conditional change of the locked room whose
// revision is no longer rev (0: no condition).
func (r *room) checkRevision(rev int64) error {
	if rev <= 0 || rev == r.rev {
		return nil
	}
	return waitroom.RevisionChanged(r.name, rev, r.rev)
}

// configured puts the room's configuration and revision, both as they are
// now, in the current config event, if events are wanted.
func (r *room) configured() {
	if r.ev != nil {
		c := r.cfg
		r.ev.Config = &c
		r.ev.Revision = r.rev
	}
}

// RestoreRevision sets the configuration revision of a room Restore
// loaded, or, for a name without a loaded room, the last revision of its
// deleted room (as RestoreTicket does for tickets), for a durable backend
// recovering on start.
func (s *Store) RestoreRevision(name string, rev int64) {
	s.mu.Lock()
	r := s.rooms[name]
	if r == nil {
		s.revs[name] = max(s.revs[name], rev)
	}
	s.mu.Unlock()
	if r != nil {
		r.mu.Lock()
		r.rev = max(rev, 1)
		r.mu.Unlock()
	}
}
