package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
)

// TestCrashAroundTheDraw kills the embedded-store server with SIGKILL
// before, around and after the openings of four scheduled rooms (their
// openings 25 ms apart, so one kill finds some drawn, some drawing and some
// not yet) while joins and readers run. After every restart: the
// commitments never change, no acknowledged entrant is lost, every drawn
// room's draw verifies and lists every acknowledged entrant at the ticket
// the session has, and a draw once seen is the draw ever after.
// The verdicts do not depend on timing: a join that lands after its
// room's opening (a slow machine) is simply a first-come session.
func TestCrashAroundTheDraw(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real server; skipped with -short")
	}
	bin := buildBinary(t)
	data := t.TempDir()
	flags := noJoinLimitFlags(bin)
	p, token := startCrashServer(t, bin, data, flags)
	c := newCrashClient(p.url, token)

	t0 := time.Now()
	const rooms = 4
	name := func(i int) string { return fmt.Sprintf("drop-%d", i) }
	commitments := make([]string, rooms)
	for i := range rooms {
		cfg := waitroom.DefaultConfig()
		cfg.Capacity = 10
		cfg.ActiveTimeout, cfg.WaitingTimeout = 0, 0
		cfg.OpensAt = t0.Add(3*time.Second + time.Duration(i)*25*time.Millisecond)
		if _, _, err := c.PutRoom(ctx(t), name(i), cfg); err != nil {
			t.Fatalf("configure %s: %v", name(i), err)
		}
		d, err := c.Draw(ctx(t), name(i))
		if err != nil || len(d.Commitment) != 64 {
			t.Fatalf("draw record of %s: %+v, %v", name(i), d, err)
		}
		commitments[i] = d.Commitment
	}

	var mu sync.Mutex
	acked := make([][]waitroom.Session, rooms) // acknowledged joins per room
	seen := make([]string, rooms)              // digest of a drawn record seen before a kill
	var cur struct {
		sync.Mutex
		c *client.Client
	}
	cur.c = c
	cl := func() *client.Client { cur.Lock(); defer cur.Unlock(); return cur.c }

	// load joins round-robin until stop, and reads the draws, remembering
	// any drawn record it is answered.
	load := func(until time.Time) {
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; time.Now().Before(until); i++ {
					r := i % rooms
					rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					s, err := cl().Join(rctx, name(r), "")
					cancel()
					if err == nil {
						mu.Lock()
						acked[r] = append(acked[r], s)
						mu.Unlock()
					}
					if w == 0 {
						rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
						d, err := cl().Draw(rctx, name(r))
						cancel()
						if err == nil && d.Drawn {
							mu.Lock()
							seen[r] = d.Digest
							mu.Unlock()
						}
					}
				}
			}()
		}
		wg.Wait()
	}
	restart := func(what string) {
		t.Helper()
		p.kill(t)
		p = startProcess(t, bin, data, flags...)
		nc := newCrashClient(p.url, token)
		cur.Lock()
		cur.c = nc
		cur.Unlock()
		waitReady(t, nc, 30*time.Second)
		t.Logf("killed %s (%.3fs after the first opening) and restarted", what, time.Since(t0.Add(3*time.Second)).Seconds())
	}

	// run loads until the kill moment, kills there (on the test's own
	// goroutine) and waits for the load to stop.
	run := func(kill time.Time, what string) {
		stopped := make(chan struct{})
		go func() { load(kill.Add(100 * time.Millisecond)); close(stopped) }()
		time.Sleep(time.Until(kill))
		restart(what)
		<-stopped
	}

	// Before the openings, with joins in flight.
	run(t0.Add(1200*time.Millisecond), "before the draws")
	checkDraws(t, cl(), rooms, name, commitments, acked, nil, false)

	// Around the openings: kill 40 ms after the first.
	run(t0.Add(3*time.Second+40*time.Millisecond), "around the draws")
	digests := checkDraws(t, cl(), rooms, name, commitments, acked, seen, true)

	// After the draws.
	restart("after the draws")
	again := checkDraws(t, cl(), rooms, name, commitments, acked, seen, true)
	for i := range rooms {
		if again[i] != digests[i] {
			t.Errorf("%s: the draw changed across a restart: digest %s, then %s", name(i), digests[i], again[i])
		}
	}
}

// checkDraws checks every room after a restart and returns the digests of
// the drawn ones. With wantDrawn it waits (up to 30 s, for a loaded
// machine) for every draw to be published.
func checkDraws(t *testing.T, c *client.Client, rooms int, name func(int) string, commitments []string, acked [][]waitroom.Session, seen []string, wantDrawn bool) []string {
	t.Helper()
	digests := make([]string, rooms)
	for i := range rooms {
		var d waitroom.DrawRecord
		for deadline := time.Now().Add(30 * time.Second); ; {
			var err error
			d, err = c.Draw(ctx(t), name(i))
			if err != nil {
				t.Fatalf("draw of %s: %v", name(i), err)
			}
			if d.Drawn || !wantDrawn {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no draw 30 s after its opening", name(i))
			}
			time.Sleep(20 * time.Millisecond)
		}
		if d.Commitment != commitments[i] {
			t.Fatalf("%s: commitment %s after a restart, was %s", name(i), d.Commitment, commitments[i])
		}
		ticketOf := map[string]int64{}
		if d.Drawn {
			if err := waitroom.VerifyDraw(d); err != nil {
				t.Fatalf("%s: the published draw does not verify: %v", name(i), err)
			}
			if seen != nil && seen[i] != "" && seen[i] != d.Digest {
				t.Fatalf("%s: a second, different draw: digest %s, but %s was published before the kill", name(i), d.Digest, seen[i])
			}
			for _, e := range d.Entries {
				ticketOf[e.Entry] = e.Ticket
			}
			digests[i] = d.Digest
		}
		entrants := 0
		for _, s := range acked[i] {
			got, err := c.Session(ctx(t), name(i), s.ID)
			if err != nil {
				t.Fatalf("%s: acknowledged session %s lost: %v", name(i), s.ID, err)
			}
			if !got.Status.Live() {
				t.Fatalf("%s: acknowledged session is %s (%s), want live: nothing here ends sessions", name(i), got.Status, got.EndReason)
			}
			if s.Ticket != 0 {
				continue // joined after the opening: first come, first served
			}
			entrants++
			if !d.Drawn && got.Ticket != 0 {
				// The opening passed while this check ran (a slow
				// machine): the room has drawn since its record was read.
				d = drawnRecord(t, c, name(i), commitments[i])
				for _, e := range d.Entries {
					ticketOf[e.Entry] = e.Ticket
				}
				digests[i] = d.Digest
			}
			if !d.Drawn {
				if got.Ticket != 0 || got.Entry != s.Entry {
					t.Fatalf("%s: entrant %s before the draw = ticket %d entry %s", name(i), s.Entry, got.Ticket, got.Entry)
				}
				continue
			}
			want, ok := ticketOf[s.Entry]
			if !ok || got.Ticket != want {
				t.Fatalf("%s: acknowledged entrant %s has ticket %d; the draw lists it: %v at %d", name(i), s.Entry, got.Ticket, ok, want)
			}
		}
		if d.Drawn && len(d.Entries) < entrants {
			t.Fatalf("%s: the draw has %d entries, fewer than the %d acknowledged entrants", name(i), len(d.Entries), entrants)
		}
		t.Logf("%s: %d acknowledged (%d entrants), drawn %v with %d entries", name(i), len(acked[i]), entrants, d.Drawn, len(d.Entries))
	}
	return digests
}

// drawnRecord reads a room's draw record, which must by now be drawn,
// verify and keep its commitment.
func drawnRecord(t *testing.T, c *client.Client, room, commitment string) waitroom.DrawRecord {
	t.Helper()
	d, err := c.Draw(ctx(t), room)
	if err != nil {
		t.Fatalf("draw of %s: %v", room, err)
	}
	if !d.Drawn {
		t.Fatalf("%s: a session holds a ticket but the room has not drawn", room)
	}
	if d.Commitment != commitment {
		t.Fatalf("%s: commitment %s after a restart, was %s", room, d.Commitment, commitment)
	}
	if err := waitroom.VerifyDraw(d); err != nil {
		t.Fatalf("%s: the published draw does not verify: %v", room, err)
	}
	return d
}
