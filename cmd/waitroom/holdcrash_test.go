package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
)

// TestHeldPlacesSurviveKill is TestWebhooksSurviveKill for a room that
// holds places and tells sessions they are near: held joins and claims
// run while the embedded-store server is killed twice and the receiver is
// down half the time. Every event a committed change caused must arrive:
// each session's session.joined; session.invited for each one whose turn
// came (held sessions are never admitted directly); session.claimed for
// each one claimed; session.ended for each one that ended; and
// session.near at most once per session (told once, across restarts).
func TestHeldPlacesSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real server; skipped with -short")
	}
	bin := buildBinary(t)
	data := t.TempDir()
	flags := append(noJoinLimitFlags(bin), hookFlags...)
	p, token := startCrashServer(t, bin, data, flags)
	c := newCrashClient(p.url, token)
	rc := newHookReceiver(t, hookSecret)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity, cfg.ActiveTimeout, cfg.WaitingTimeout = 100, waitroom.Duration(time.Second), 0
	cfg.HoldPlaces, cfg.ClaimWindow, cfg.NotifyAt = true, waitroom.Duration(time.Second), 3
	if _, _, err := c.PutRoom(ctx(t), "held", cfg); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PutWebhook(ctx(t), "held", "all", client.WebhookRequest{URL: rc.srv.URL + "/in", Events: []string{"*"}, Secret: hookSecret}); err != nil {
		t.Fatal(err)
	}

	var cur atomic.Pointer[client.Client]
	cur.Store(c)
	var mu sync.Mutex
	var ids []string
	var claims atomic.Int64
	load := func(until time.Time) {
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := 0; time.Now().Before(until); i++ {
					rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					s, err := cur.Load().JoinWith(rctx, "held", client.JoinOptions{Contact: fmt.Sprintf("sms:%d-%d", w, i)})
					if err == nil {
						mu.Lock()
						ids = append(ids, s.ID)
						other := ids[rand.N(len(ids)/8+1)]
						mu.Unlock()
						// Claim someone among the earliest, whose turns
						// come first: the invited ones become active, the
						// others are refused.
						if _, err := cur.Load().Claim(rctx, "held", other); err == nil {
							claims.Add(1)
						}
					}
					cancel()
				}
			})
		}
		wg.Wait()
	}
	p = killUnderLoad(t, 2, p, bin, data, flags, token, &cur, load)
	c = cur.Load()
	time.Sleep(1500 * time.Millisecond) // windows pass and claimed sessions idle out
	// Freeze the room, so the states read below are final: no more
	// invitations (paused), expiries (a long claim window, no idle
	// timeout) or the events they would make.
	cfg.Paused, cfg.ClaimWindow, cfg.ActiveTimeout = true, waitroom.Duration(time.Hour), 0
	if _, _, err := c.PutRoom(ctx(t), "held", cfg); err != nil {
		t.Fatal(err)
	}
	states, stats := readAfterDrain(t, c, rc, "held", ids)
	by, n, repeats, refused := rc.received()
	missing, near, invited, claimed := 0, 0, 0, 0
	for _, id := range ids {
		s := states[id]
		turn := s.Status == waitroom.StatusInvited || s.Status == waitroom.StatusActive || !s.AdmittedAt.IsZero()
		wasClaimed := s.Status == waitroom.StatusActive || (s.Status.Final() && s.EndReason != waitroom.ReasonUnclaimed && !s.AdmittedAt.IsZero())
		want := map[string]int{
			waitroom.HookSessionJoined:   1,
			waitroom.HookSessionInvited:  b2i(turn),
			waitroom.HookSessionClaimed:  b2i(wasClaimed),
			waitroom.HookSessionEnded:    b2i(s.Status.Final()),
			waitroom.HookSessionAdmitted: 0,
		}
		for typ, w := range want {
			if got := by[id][typ]; got != w {
				missing++
				if missing < 5 {
					t.Errorf("session %s (%s, %s): %s arrived %d times, want %d", id, s.Status, s.EndReason, typ, got, w)
				}
			}
		}
		if k := by[id][waitroom.HookSessionNear]; k > 1 {
			t.Errorf("session %s was told %d times it is near, want at most once", id, k)
		} else {
			near += k
		}
		invited += b2i(turn)
		claimed += b2i(wasClaimed)
	}
	if missing > 0 {
		t.Fatalf("%d events of committed changes are missing or extra", missing)
	}
	if near == 0 || invited == 0 || claimed == 0 {
		t.Fatalf("the load made %d near, %d invited and %d claimed sessions: want some of each", near, invited, claimed)
	}
	t.Logf("%d held joins (%d invited, %d claimed, %d told near); %d events delivered, %d repeated deliveries (same webhook-id, after a kill), %d tries refused by the flaky receiver; endpoint stats %+v",
		len(ids), invited, claimed, near, n, repeats, refused, stats)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
