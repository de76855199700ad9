package storetest

import (
	"time"

	"github.com/waitroom/waitroom"
	"pgregory.net/rapid"
)

// Configuration revisions in the model run (waitroom.Room.Revision): the
// model's rev starts at 0, and creating the room, every change of its
// configuration (PutRoom, UpdateRoom, QueueAll, a StockSet) raises it by
// one; a delete keeps it, so the next incarnation continues above it.
// UpdateRoom is PutRoom on a condition, and never creates.

// updateRoom is Store.UpdateRoom: the code the store must refuse it with,
// "" when it succeeds. A stale revision is refused after the settle that
// every operation starts with, as the store's other refusals are.
func (m *model) updateRoom(cfg waitroom.RoomConfig, rev int64, now time.Time) (refused waitroom.Code) {
	if !m.exists {
		return waitroom.CodeRoomNotFound
	}
	if rev > 0 && rev != m.rev {
		m.settle(m.clock(now))
		return waitroom.CodePreconditionFailed
	}
	_, refused = m.putRoom(cfg, now)
	return refused
}

// updateRoom runs UpdateRoom with the revision the room has, one it had,
// one it never had yet, or none.
func (h *modelRun) updateRoom(t *rapid.T) {
	cfg := h.withHolds(t, h.withTiers(t, h.withStock(t, h.withSchedule(t, drawConfig(t)))))
	rev := rapid.SampledFrom([]int64{0, h.m.rev, h.m.rev, h.m.rev - 1, h.m.rev + 1}).Draw(t, "if_revision")
	now := h.when(t)
	h.begin(t, "UpdateRoom rev=%d %+v inventory %s", rev, cfg, fmtPtr(cfg.Inventory))
	r, err := h.s.UpdateRoom(h.ctx, h.m.name, cfg, rev, now)
	if !h.m.exists {
		h.noRoom(t, "UpdateRoom", err)
		return
	}
	if refused := h.m.updateRoom(cfg, rev, now); refused != "" {
		what := "UpdateRoom of a stale revision"
		if refused != waitroom.CodePreconditionFailed {
			what = "UpdateRoom " + refusal[refused]
		}
		wantCode(t, what, err, refused)
		h.recover(t, now)
		h.checkEvents(t, "")
		return
	}
	if err != nil {
		t.Fatalf("UpdateRoom error = %v", err)
	}
	if want := h.roomInfo(); !sameRoom(r, want) {
		t.Fatalf("UpdateRoom = %s, want %s", fmtRoom(r), fmtRoom(want))
	}
	h.checkEvents(t, waitroom.EventConfig)
}

// sameRoom is Room.Equal and the same revision.
func sameRoom(a, b waitroom.Room) bool { return a.Equal(b) && a.Revision == b.Revision }
