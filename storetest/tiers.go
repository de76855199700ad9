package storetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/waitroom/waitroom"
)

// Tiers and token uses: where a join lands by its tier, how the line is
// ordered and positions counted, and how a token's uses are spent.

func init() {
	suite = append(suite, []struct {
		name string
		fn   func(*fixture)
	}{
		{"TiersStrict", testTiersStrict},
		{"TiersWeighted", testTiersWeighted},
		{"TiersRefused", testTiersRefused},
		{"TiersDraw", testTiersDraw},
		{"TiersOperator", testTiersOperator},
		{"TokenUses", testTokenUses},
		{"TokenUsesAtomic", testTokenUsesAtomic},
		{"SpentKeyedInvite", testSpentKeyedInvite},
	}...)
}

// tiered is quiet(capacity) with tiers vip and general under policy.
func tiered(capacity int, policy waitroom.TierPolicy, vipShare float64) waitroom.RoomConfig {
	c := quiet(capacity)
	c.Tiers = []waitroom.Tier{{Name: "vip", Share: vipShare}, {Name: "general"}}
	c.TierPolicy = policy
	return c
}

func (f *fixture) joinWith(room string, req waitroom.JoinRequest, now time.Time) waitroom.Session {
	f.t.Helper()
	s, err := f.s.JoinWith(f.ctx, room, req, now)
	if err != nil {
		f.t.Fatalf("JoinWith(%q, %+v, %s) error = %v", room, req, rel(now), err)
	}
	return s
}

// wantLine checks the room's line: Waiting lists want in order with
// positions 1.., paging one at a time agrees, and each session's own read
// gives the same position and its tier.
func (f *fixture) wantLine(room string, want []waitroom.Session, tiers []string) {
	f.t.Helper()
	for _, limit := range []int{1, 2, 1000} {
		got := f.waitingAll(room, limit)
		if len(got) != len(want) {
			f.t.Fatalf("Waiting (pages of %d) lists %d, want %d: %v", limit, len(got), len(want), tickets(got))
		}
		for i := range got {
			if got[i].ID != want[i].ID || got[i].Position != int64(i+1) || got[i].Tier != tiers[i] {
				f.t.Fatalf("Waiting (pages of %d) item %d = #%d pos %d tier %q, want #%d pos %d tier %q",
					limit, i, got[i].Ticket, got[i].Position, got[i].Tier, want[i].Ticket, i+1, tiers[i])
			}
		}
	}
	for i, w := range want {
		got := f.peek(room, w.ID)
		if got.Position != int64(i+1) || got.Tier != tiers[i] {
			f.t.Fatalf("#%d reads position %d tier %q, want %d %q", w.Ticket, got.Position, got.Tier, i+1, tiers[i])
		}
	}
}

func testTiersStrict(f *fixture) {
	f.put("r", tiered(0, "", 0), at(0))
	if r := f.room("r"); r.TierPolicy != waitroom.TierStrict {
		f.t.Fatalf("tier_policy = %q, want strict by default", r.TierPolicy)
	}
	g := f.joinN("r", 3, at(sec)) // general: no tier given
	v1 := f.joinWith("r", waitroom.JoinRequest{Tier: "vip"}, at(2*sec))
	if v1.Tier != "vip" || v1.Position != 1 || g[0].Tier != "general" {
		f.t.Fatalf("vip join: tier %q position %d, general tier %q; want vip 1, general", v1.Tier, v1.Position, g[0].Tier)
	}
	// A higher tier's join moves the lower tier back by one.
	f.wantPeek("r", g[0], waitroom.StatusWaiting, 2, "")
	v2 := f.joinWith("r", waitroom.JoinRequest{Tier: "vip", Key: "k"}, at(3*sec))
	f.wantLine("r", []waitroom.Session{v1, v2, g[0], g[1], g[2]}, []string{"vip", "vip", "general", "general", "general"})
	// Admission follows the line: both vips first, then general in order.
	cfg := tiered(2, "", 0)
	f.put("r", cfg, at(4*sec))
	f.wantPeek("r", v1, waitroom.StatusActive, 0, "")
	f.wantPeek("r", v2, waitroom.StatusActive, 0, "")
	f.leave("r", v1.ID, waitroom.ReasonLeft, at(5*sec))
	f.wantPeek("r", g[0], waitroom.StatusActive, 0, "")
	f.wantPeek("r", g[1], waitroom.StatusWaiting, 1, "")
	// Tier order is no inversion; FIFO holds inside each tier.
	f.wantFairness("r", 3, 0)
}

func testTiersWeighted(f *fixture) {
	f.put("r", tiered(0, waitroom.TierWeighted, 0.5), at(0))
	g := f.joinN("r", 4, at(sec))
	var v []waitroom.Session
	for i := range 4 {
		v = append(v, f.joinWith("r", waitroom.JoinRequest{Tier: "vip"}, at(2*sec+time.Duration(i)*msec)))
	}
	// Equal shares: the tiers take turns, the higher tier first on a tie.
	f.wantLine("r", []waitroom.Session{v[0], g[0], v[1], g[1], v[2], g[2], v[3], g[3]},
		[]string{"vip", "general", "vip", "general", "vip", "general", "vip", "general"})
	// Serve four: two from each tier; then a new vip is placed after the
	// turn already served, not before it.
	f.put("r", tiered(4, waitroom.TierWeighted, 0.5), at(3*sec))
	for _, s := range []waitroom.Session{v[0], g[0], v[1], g[1]} {
		f.wantPeek("r", s, waitroom.StatusActive, 0, "")
	}
	// A share of 0.8 for vip: four vip places for every general one.
	f.put("r", tiered(4, waitroom.TierWeighted, 0.8), at(4*sec))
	var w []waitroom.Session
	for i := range 5 {
		w = append(w, f.joinWith("r", waitroom.JoinRequest{Tier: "vip"}, at(5*sec+time.Duration(i)*msec)))
	}
	g4 := f.join("r", "", at(6*sec))
	line := f.waitingAll("r", 1000)
	// Waiting were v2 g2 v3 g3 (tags 6000 6000 8000 8000 at step 2000);
	// vip's last tag is 8000, so its joins take 9250, 10500, ... (step
	// 1250), and general's next 8000+5000 = 13000, tied with vip's fourth,
	// which goes first (the higher tier wins ties).
	want := []int64{v[2].Ticket, g[2].Ticket, v[3].Ticket, g[3].Ticket, w[0].Ticket, w[1].Ticket, w[2].Ticket, w[3].Ticket, g4.Ticket, w[4].Ticket}
	if got := tickets(line); fmt.Sprint(got) != fmt.Sprint(want) {
		f.t.Fatalf("line after shares changed = %v, want %v", got, want)
	}
	f.wantFairness("r", 4, 0)
}

func testTiersRefused(f *fixture) {
	f.put("r", tiered(0, "", 0), at(0))
	_, err := f.s.JoinWith(f.ctx, "r", waitroom.JoinRequest{Tier: "gold"}, at(sec))
	wantCode(f.t, "join to an unknown tier", err, waitroom.CodeInvalidRequest)
	f.put("plain", quiet(0), at(0))
	_, err = f.s.JoinWith(f.ctx, "plain", waitroom.JoinRequest{Tier: "vip"}, at(sec))
	wantCode(f.t, "join to a tier of a room without tiers", err, waitroom.CodeInvalidRequest)
	f.wantCounts("r", 0, 0)
	f.wantCounts("plain", 0, 0)
	// Tiers cannot change while people are in the room; shares can.
	s := f.join("r", "", at(2*sec))
	other := tiered(0, "", 0)
	other.Tiers = []waitroom.Tier{{Name: "gold"}, {Name: "general"}}
	_, _, err = f.s.PutRoom(f.ctx, "r", other, at(3*sec))
	wantCode(f.t, "renaming a tier of a room with people", err, waitroom.CodeRoomNotEmpty)
	_, _, err = f.s.PutRoom(f.ctx, "r", tiered(0, waitroom.TierWeighted, 0), at(3*sec))
	wantCode(f.t, "changing the tier policy of a room with people", err, waitroom.CodeRoomNotEmpty)
	_, _, err = f.s.PutRoom(f.ctx, "r", quiet(0), at(3*sec))
	wantCode(f.t, "dropping the tiers of a room with people", err, waitroom.CodeRoomNotEmpty)
	if r := f.room("r"); len(r.Tiers) != 2 || r.Tiers[0].Name != "vip" {
		f.t.Fatalf("tiers after refused changes = %+v, want vip, general", r.Tiers)
	}
	f.leave("r", s.ID, waitroom.ReasonLeft, at(4*sec))
	f.put("r", other, at(5*sec))
	g := f.joinWith("r", waitroom.JoinRequest{Tier: "gold"}, at(6*sec))
	if g.Tier != "gold" {
		f.t.Fatalf("join after the tiers changed: tier %q, want gold", g.Tier)
	}
}

func testTiersDraw(f *fixture) {
	cfg := tiered(0, "", 0)
	cfg.OpensAt = at(time.Minute)
	f.put("r", cfg, at(0))
	var gs, vs []waitroom.Session
	for i := range 3 {
		gs = append(gs, f.join("r", "", at(sec+time.Duration(i)*msec)))
		vs = append(vs, f.joinWith("r", waitroom.JoinRequest{Tier: "vip"}, at(2*sec+time.Duration(i)*msec)))
	}
	if vs[0].Tier != "vip" || gs[0].Tier != "general" || vs[0].Ticket != 0 {
		f.t.Fatalf("entrants: vip tier %q ticket %d, general tier %q; want vip, no ticket, general", vs[0].Tier, vs[0].Ticket, gs[0].Tier)
	}
	f.sweep("r", at(time.Minute))
	line := f.waitingAll("r", 1000)
	if len(line) != 6 {
		f.t.Fatalf("after the draw %d wait, want 6", len(line))
	}
	// Every vip ahead of every general; inside each tier, the draw's order.
	for i, s := range line {
		want := "vip"
		if i >= 3 {
			want = "general"
		}
		if s.Tier != want || (i > 0 && line[i-1].Tier == s.Tier && line[i-1].Ticket > s.Ticket) {
			f.t.Fatalf("line after the draw: %d is #%d tier %q; want %s, tickets rising inside a tier", i, s.Ticket, s.Tier, want)
		}
	}
}

func testTiersOperator(f *fixture) {
	f.put("r", tiered(1, "", 0), at(0))
	a := f.join("r", "", at(sec)) // active
	g := f.joinN("r", 2, at(2*sec))
	v := f.joinWith("r", waitroom.JoinRequest{Tier: "vip"}, at(3*sec))
	// Front puts a general ahead of the vip.
	moved, err := f.s.Front(f.ctx, "r", g[1].ID, at(4*sec))
	if err != nil || moved.Position != 1 || moved.Tier != "general" || moved.Place >= 0 {
		f.t.Fatalf("Front = pos %d tier %q place %d, %v; want 1, general, negative", moved.Position, moved.Tier, moved.Place, err)
	}
	f.wantLine("r", []waitroom.Session{g[1], v, g[0]}, []string{"general", "vip", "general"})
	// QueueAll sends the active one to the front, its tier kept.
	_, out, err := f.s.QueueAll(f.ctx, "r", at(5*sec))
	if err != nil || len(out) != 1 || out[0].Tier != "general" {
		f.t.Fatalf("QueueAll = %v, %v; want #%d with tier general", out, err, a.Ticket)
	}
	f.wantLine("r", []waitroom.Session{a, g[1], v, g[0]}, []string{"general", "general", "vip", "general"})
	// Moves are no inversion.
	cfg := tiered(4, "", 0)
	f.put("r", cfg, at(6*sec))
	f.wantFairness("r", 5, 0)
}

func use(kind waitroom.TokenKind, id string, n int, until time.Time) waitroom.TokenUse {
	return waitroom.TokenUse{Kind: kind, ID: id, Max: n, Expires: until}
}

func testTokenUses(f *fixture) {
	f.put("r", quiet(0), at(0))
	inv := use(waitroom.TokenInvite, "i1", 3, at(time.Minute))
	f.joinWith("r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{inv}}, at(sec))
	// A key that already holds a session spends nothing.
	f.joinWith("r", waitroom.JoinRequest{Key: "k", Uses: []waitroom.TokenUse{inv}}, at(2*sec))
	_, err := f.s.JoinWith(f.ctx, "r", waitroom.JoinRequest{Key: "k", Uses: []waitroom.TokenUse{inv}}, at(3*sec))
	wantCode(f.t, "join with a key already in", err, waitroom.CodeAlreadyJoined)
	f.joinWith("r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{inv}}, at(3500*msec)) // its third use
	// A spent token is refused before its key is looked at, naming nobody.
	_, err = f.s.JoinWith(f.ctx, "r", waitroom.JoinRequest{Key: "k", Uses: []waitroom.TokenUse{inv}}, at(4*sec))
	wantNoSession(f.t, "spent invite with the key of a live session", err, waitroom.CodeInviteUsed)
	_, err = f.s.JoinWith(f.ctx, "r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{inv}}, at(4*sec))
	wantCode(f.t, "fourth use of a three-use invite", err, waitroom.CodeInviteUsed)
	// A challenge with the same ID is another token.
	ch := use(waitroom.TokenChallenge, "i1", 1, at(30*sec))
	f.joinWith("r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{ch}}, at(5*sec))
	_, err = f.s.JoinWith(f.ctx, "r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{ch}}, at(6*sec))
	wantCode(f.t, "replayed challenge", err, waitroom.CodeChallengeUsed)
	// A join spending two tokens is refused whole when one has no use left.
	fresh := use(waitroom.TokenInvite, "i2", 1, at(time.Minute))
	_, err = f.s.JoinWith(f.ctx, "r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{fresh, ch}}, at(7*sec))
	wantCode(f.t, "fresh invite with a used challenge", err, waitroom.CodeChallengeUsed)
	f.joinWith("r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{fresh}}, at(8*sec)) // i2 was not spent
	f.wantCounts("r", 5, 0)
	// Counts end with the token: after it expires a use of the same ID counts afresh.
	f.joinWith("r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{use(waitroom.TokenChallenge, "i1", 1, at(2*time.Minute))}}, at(31*sec))
	// Uses belong to their room.
	f.put("other", quiet(0), at(0))
	f.joinWith("other", waitroom.JoinRequest{Uses: []waitroom.TokenUse{inv}}, at(32*sec))
	// A malformed use is refused before anything happens.
	_, err = f.s.JoinWith(f.ctx, "r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{{Kind: waitroom.TokenInvite, ID: "x", Max: 0, Expires: at(time.Hour)}}}, at(33*sec))
	wantCode(f.t, "use with no uses allowed", err, waitroom.CodeInvalidRequest)
	_, err = f.s.JoinWith(f.ctx, "r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{use(waitroom.TokenInvite, "old", 5, at(33*sec))}}, at(33*sec))
	wantCode(f.t, "use that expires at now", err, waitroom.CodeInvalidRequest)
	f.wantCounts("r", 6, 0)
}

// testSpentKeyedInvite is the forwarded link of a keyed invite: once its
// uses are spent, a join with it is invite_used whatever its key holds,
// with no session in the error, in an open room and in a pre-queue; and
// it spends nothing and changes nobody's place.
func testSpentKeyedInvite(f *fixture) {
	opens := at(time.Hour)
	for _, tc := range []struct {
		room string
		cfg  waitroom.RoomConfig
	}{{"open", quiet(0)}, {"drop", scheduled(0, opens)}} {
		f.put(tc.room, tc.cfg, at(0))
		inv := use(waitroom.TokenInvite, "keyed-"+tc.room, 1, at(time.Minute))
		held := f.joinWith(tc.room, waitroom.JoinRequest{Key: "alice", Uses: []waitroom.TokenUse{inv}}, at(sec))
		for i, key := range []string{"alice", ""} {
			_, err := f.s.JoinWith(f.ctx, tc.room, waitroom.JoinRequest{Key: key, Uses: []waitroom.TokenUse{inv}}, at(2*sec+time.Duration(i)*msec))
			wantNoSession(f.t, fmt.Sprintf("%s: second claimant of a spent invite (key %q)", tc.room, key), err, waitroom.CodeInviteUsed)
		}
		// The holder keeps its place; a fresh token for the same key still
		// finds it (already_joined, for the store's trusted callers).
		if got := f.peek(tc.room, held.ID); !got.Status.Live() {
			f.t.Fatalf("%s: the invite's holder after the refused claims = %s, want still live", tc.room, got.Status)
		}
		_, err := f.s.JoinWith(f.ctx, tc.room, waitroom.JoinRequest{Key: "alice", Uses: []waitroom.TokenUse{use(waitroom.TokenInvite, "other-"+tc.room, 1, at(time.Minute))}}, at(3*sec))
		wantCode(f.t, tc.room+": a fresh invite for the same key", err, waitroom.CodeAlreadyJoined)
		var e *waitroom.Error
		if errors.As(err, &e); e == nil || e.Session == nil || e.Session.ID != held.ID {
			f.t.Fatalf("%s: already_joined carries %+v, want the live session", tc.room, e)
		}
		// The fresh token was not spent by the already_joined answer.
		f.leave(tc.room, held.ID, waitroom.ReasonLeft, at(4*sec))
		f.joinWith(tc.room, waitroom.JoinRequest{Key: "alice", Uses: []waitroom.TokenUse{use(waitroom.TokenInvite, "other-"+tc.room, 1, at(time.Minute))}}, at(5*sec))
	}
}

// wantNoSession checks err is code and names no session.
func wantNoSession(t T, what string, err error, code waitroom.Code) {
	t.Helper()
	wantCode(t, what, err, code)
	var e *waitroom.Error
	if errors.As(err, &e) && e.Session != nil {
		t.Fatalf("%s: the error carries session %s (ticket %d), want none", what, e.Session.ID, e.Session.Ticket)
	}
}

// testTokenUsesAtomic races many joins for a token of three uses: exactly
// three get in.
func testTokenUsesAtomic(f *fixture) {
	f.put("r", quiet(0), at(0))
	inv := use(waitroom.TokenInvite, "race", 3, at(time.Hour))
	const n = 24
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := f.s.JoinWith(f.ctx, "r", waitroom.JoinRequest{Uses: []waitroom.TokenUse{inv}}, at(sec+time.Duration(i)*msec))
			errs <- err
		}()
	}
	ok := 0
	for range n {
		err := <-errs
		switch waitroom.ErrorCode(err) {
		case "":
			ok++
		case waitroom.CodeInviteUsed:
		default:
			f.t.Fatalf("racing join error = %v", err)
		}
	}
	if ok != 3 {
		f.t.Fatalf("%d racing joins got in on a three-use invite, want 3", ok)
	}
	f.wantCounts("r", 3, 0)
}
