package gatekeeper

import (
	"context"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/gate"
)

// Touch records activity of c's session, written to the store at most once
// per activity interval and off the caller's path: the guard "refresh last
// active" for apps that hold a Gate.
func (g *Gate) Touch(c gate.Claims, now time.Time) {
	interval := g.beatMax
	// The room's configuration as last known: pacing never waits on the store.
	if snap := g.view.Known(c.Room); snap != nil {
		if d := snap.Config.ActiveTimeout.D() / 4; d > 0 && d < interval {
			interval = d
		}
	}
	g.mu.RLock()
	last, ok := g.beats[c.Session]
	g.mu.RUnlock()
	if ok && now.Sub(last) < interval && !now.Before(last) {
		return
	}
	g.mu.Lock()
	if last, ok := g.beats[c.Session]; ok && now.Sub(last) < interval && !now.Before(last) {
		g.mu.Unlock()
		return
	}
	if len(g.beats) >= maxBeats {
		g.mu.Unlock()
		return
	}
	g.beats[c.Session] = now
	g.mu.Unlock()
	select {
	case g.beatCh <- beat{room: c.Room, id: c.Session}:
	default:
		// The store is behind; the next interval tries again.
	}
}

// beatLoop writes queued activity to the store.
func (g *Gate) beatLoop() {
	defer g.wg.Done()
	for {
		select {
		case <-g.stop:
			return
		case b := <-g.beatCh:
			ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
			now := g.clock.Now()
			s, err := g.store.Heartbeat(ctx, b.room, b.id, now)
			cancel()
			switch {
			case err == nil && s.Status != waitroom.StatusActive:
				g.markEnded(b.id, now)
			case err != nil && waitroom.ErrorCode(err) == waitroom.CodeSessionNotFound:
				g.markEnded(b.id, now)
			case err != nil:
				g.log.Warn("gate: recording activity failed", "room", b.room, "err", err)
			}
		}
	}
}

// janitor forgets what can no longer matter, keeping memory bounded.
func (g *Gate) janitor() {
	defer g.wg.Done()
	t := time.NewTicker(janitorPeriod)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
			g.prune(g.clock.Now())
		}
	}
}

// prune drops expired cache entries and revocations no pass can outlive.
func (g *Gate) prune(now time.Time) {
	g.verified.Range(func(k, v any) bool {
		if !now.Before(v.(*verifiedPass).c.Expires.Add(gate.Leeway)) {
			g.verified.Delete(k)
			g.verifiedN.Add(-1)
		}
		return true
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, until := range g.ended {
		if now.After(until) {
			delete(g.ended, id)
		}
	}
	for id, q := range g.requeued {
		if now.After(q.forget) {
			delete(g.requeued, id)
		}
	}
	for room, at := range g.roomsDead {
		if now.Sub(at) > g.maxTTL+2*gate.Leeway {
			delete(g.roomsDead, room)
		}
	}
	for id, p := range g.passes {
		if !now.Before(p.exp) {
			delete(g.passes, id)
		}
	}
	for id, at := range g.beats {
		if now.Sub(at) > 4*g.beatMax {
			delete(g.beats, id)
		}
	}
	for id, c := range g.checked {
		if now.Sub(c.at) > storeCheckTTL {
			delete(g.checked, id)
		}
	}
}
