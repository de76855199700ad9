package gatekeeper

import (
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/roomview"
)

// onEvent keeps the revocation set: every session that ended is refused
// from now on, whatever pass it holds. It runs on the store's goroutine,
// so it only takes a lock. (Rooms' configurations are the room view's,
// which follows the same events.)
func (g *Gate) onEvent(ev waitroom.Event) {
	now := g.clock.Now()
	if roomview.IsResync(ev) {
		// Events may have been missed: trust the store, not memory, for a
		// while, and for as long as passes issued before now live.
		g.storeUntil.Store(now.Add(g.resync).UnixNano())
		g.blindAt.Store(now.UnixNano())
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch ev.Kind {
	case waitroom.EventConfig:
		if at, ok := g.roomsDead[ev.Room]; ok {
			// Recreated: passes are signed in whole seconds, so from now on
			// refuse only those of seconds wholly before the deletion (the
			// deletion's own ended sessions are in g.ended), else new passes
			// of the same second would be refused too.
			g.roomsDead[ev.Room] = at.Truncate(time.Second).Add(-time.Nanosecond)
		}
	case waitroom.EventDeleted:
		g.roomsDead[ev.Room] = now
	}
	forget := now.Add(g.maxTTL + 2*gate.Leeway)
	for _, c := range ev.Changes {
		if c.From == waitroom.StatusActive && c.Session.Status == waitroom.StatusWaiting {
			// Sent back to the line (queue-all): passes of its admissions
			// until now are refused; a later admission's are not.
			if len(g.requeued) < maxEnded {
				g.requeued[c.Session.ID] = requeue{at: ev.At, forget: forget}
			}
			delete(g.passes, c.Session.ID)
			continue
		}
		// Only an active session can hold a pass.
		if !c.Session.Status.Final() || c.From != waitroom.StatusActive {
			continue
		}
		if len(g.ended) >= maxEnded {
			// Too many to remember: every pass issued until now is checked
			// against the store instead.
			g.storeUntil.Store(now.Add(g.resync).UnixNano())
			g.blindAt.Store(now.UnixNano())
			continue
		}
		g.ended[c.Session.ID] = forget
		delete(g.passes, c.Session.ID)
		delete(g.beats, c.Session.ID)
	}
}

// requeue is a session an operator sent back to the line: passes of
// admissions at or before at are refused until forget, when every pass
// signed before at has expired.
type requeue struct {
	at, forget time.Time
}

// markEnded records that a session ended (learned from the store rather
// than an event).
func (g *Gate) markEnded(id string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.ended) < maxEnded {
		g.ended[id] = now.Add(g.maxTTL + 2*gate.Leeway)
	}
	delete(g.passes, id)
	delete(g.beats, id)
}

// isEnded reports whether a pass for c must be refused because its session
// ended or its room was deleted after the pass was issued.
func (g *Gate) isEnded(c gate.Claims) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if _, ok := g.ended[c.Session]; ok {
		return true
	}
	if q, ok := g.requeued[c.Session]; ok && !c.AdmittedAt.After(q.at) {
		return true
	}
	if at, ok := g.roomsDead[c.Room]; ok && !c.IssuedAt.After(at) {
		return true
	}
	return false
}
