package door_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/challenge"
	"github.com/waitroom/waitroom/internal/door"
	"github.com/waitroom/waitroom/internal/invite"
	"github.com/waitroom/waitroom/internal/roomview"
	"github.com/waitroom/waitroom/memstore"
)

var (
	t0   = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	addr = netip.MustParseAddr("192.0.2.1") // one client asks again and again
)

func setup(t *testing.T, cfg waitroom.RoomConfig) (*door.Door, waitroom.Store) {
	t.Helper()
	s := memstore.New()
	t.Cleanup(func() { _ = s.Close() })
	if _, _, err := s.PutRoom(context.Background(), "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	return newDoor(t, s), s
}

// newDoor returns a door over a room view of s.
func newDoor(t *testing.T, s waitroom.Store, opts ...door.Option) *door.Door {
	t.Helper()
	v := roomview.New(roomview.Config{Store: s})
	t.Cleanup(v.Close)
	return door.New(v, []byte("a door secret of at least 32 bytes!"), opts...)
}

func powConfig(lo, hi int64) waitroom.RoomConfig {
	c := waitroom.DefaultConfig()
	c.Capacity = 0
	c.WaitingTimeout = 0
	c.Challenge, c.ChallengeMin, c.ChallengeMax = waitroom.ChallengePoW, lo, hi
	return c
}

// solveAndJoin fetches, solves and joins n times at now.
func solveAndJoin(t *testing.T, d *door.Door, s waitroom.Store, n int, now time.Time) {
	t.Helper()
	ctx := context.Background()
	for range n {
		ch, err := d.Challenge(ctx, "r", addr, now)
		if err != nil {
			t.Fatal(err)
		}
		p, err := challenge.Solve(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		req, err := d.Admit(ctx, "r", addr, "", "", p, now)
		if err != nil {
			t.Fatalf("Admit: %v", err)
		}
		if _, err := s.JoinWith(ctx, "r", req, now); err != nil {
			t.Fatalf("JoinWith: %v", err)
		}
	}
}

func maxNumber(t *testing.T, d *door.Door, now time.Time) int64 {
	t.Helper()
	ch, err := d.Challenge(context.Background(), "r", addr, now)
	if err != nil {
		t.Fatal(err)
	}
	return ch.MaxNumber
}

// TestDifficultyFollowsSolvedJoins: asking for challenges costs nothing and
// leaves the difficulty alone; accepted solutions above the calm rate
// raise it in proportion, and it falls back once they stop.
func TestDifficultyFollowsSolvedJoins(t *testing.T) {
	d, s := setup(t, powConfig(1000, 64_000))
	for range 5000 {
		if _, err := d.Challenge(context.Background(), "r", addr, t0); err != nil {
			t.Fatal(err)
		}
	}
	if got := maxNumber(t, d, t0); got != 1000 {
		t.Fatalf("after 5,000 requests for challenges the difficulty is %d, want the minimum 1000", got)
	}
	// 400 solutions in a second: 24,000 a minute while that second lasts,
	// 40 times the calm 600; then 2,400 a minute over the ten-second
	// window, four times.
	solveAndJoin(t, d, s, 400, t0)
	if got := maxNumber(t, d, t0.Add(500*time.Millisecond)); got != 40_000 {
		t.Fatalf("difficulty in the second of 400 solved joins = %d, want 40000", got)
	}
	if got := maxNumber(t, d, t0.Add(1500*time.Millisecond)); got != 4000 {
		t.Fatalf("difficulty a second after 400 solved joins = %d, want 4000", got)
	}
	if got := maxNumber(t, d, t0.Add(11*time.Second)); got != 1000 {
		t.Fatalf("difficulty ten seconds later = %d, want back at 1000", got)
	}
}

// TestStockpiledChallengesRefused: a challenge gathered while the room was
// calm is refused once the difficulty is more than twice as high, as expired
// and with a fresh challenge, and spends nothing.
func TestStockpiledChallengesRefused(t *testing.T) {
	d, s := setup(t, powConfig(1000, 1_000_000))
	ctx := context.Background()
	cheap, err := d.Challenge(ctx, "r", addr, t0)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := challenge.Solve(ctx, cheap)
	solveAndJoin(t, d, s, 100, t0.Add(time.Second)) // 6,000 a minute in that second: difficulty 10,000
	_, err = d.Admit(ctx, "r", addr, "", "", p, t0.Add(time.Second))
	var e *waitroom.Error
	if !errors.As(err, &e) || e.Code != waitroom.CodeChallengeExpired || e.Challenge == nil {
		t.Fatalf("stockpiled solution: %v, want challenge_expired with a fresh challenge", err)
	}
	if e.Challenge.MaxNumber != 10_000 {
		t.Fatalf("the fresh challenge has maxnumber %d, want 10000", e.Challenge.MaxNumber)
	}
	// Once the rush is over the same solution is good again.
	if _, err := d.Admit(ctx, "r", addr, "", "", p, t0.Add(20*time.Second)); err != nil {
		t.Fatalf("the solution after the rush: %v", err)
	}
}

// TestDifficultyFollowsArrivals: many addresses asking for challenges raise
// the difficulty at once, before any solution is in; the same addresses
// asking again in the window do not count again, and IPv6 counts by /64.
func TestDifficultyFollowsArrivals(t *testing.T) {
	d, _ := setup(t, powConfig(1000, 64_000))
	ctx := context.Background()
	ask := func(a netip.Addr) int64 {
		t.Helper()
		ch, err := d.Challenge(ctx, "r", a, t0)
		if err != nil {
			t.Fatal(err)
		}
		return ch.MaxNumber
	}
	// 40 addresses in one second: 2,400 a minute, four times the calm rate.
	for i := range 40 {
		ask(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}))
	}
	for range 3 {
		for i := range 40 {
			ask(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})) // again: counted once
		}
	}
	// 100 addresses of one IPv6 /64: one more.
	for i := range 100 {
		ask(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i)}))
	}
	if got := ask(netip.Addr{}); got != 4100 {
		t.Fatalf("difficulty after 41 distinct askers in a second = %d, want 4100", got)
	}
}

// TestConfigChangeSeenAtOnce: making a room invite-only applies to the
// next join, through the store's event in the room view, without waiting
// for the view's snapshot to go stale.
func TestConfigChangeSeenAtOnce(t *testing.T) {
	cfg := waitroom.DefaultConfig()
	d, s := setup(t, cfg)
	ctx := context.Background()
	if _, err := d.Admit(ctx, "r", addr, "", "", "", t0); err != nil {
		t.Fatalf("open room: %v", err)
	}
	cfg.InviteOnly = true
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Admit(ctx, "r", addr, "", "", "", t0); waitroom.ErrorCode(err) != waitroom.CodeInviteRequired {
		t.Fatalf("right after invite_only: %v, want invite_required", err)
	}
	toks, err := d.Issue(ctx, "r", 2, "", "", 1, t0.Add(time.Hour), t0)
	if err != nil || len(toks) != 2 {
		t.Fatalf("Issue: %v, %v", toks, err)
	}
	req, err := d.Admit(ctx, "r", addr, "", toks[0], "", t0)
	if err != nil || len(req.Uses) != 1 || req.Uses[0].Kind != waitroom.TokenInvite || req.Uses[0].Max != 1 {
		t.Fatalf("Admit with an invite = %+v, %v", req, err)
	}
	if _, err := d.Issue(ctx, "r", 1, "gold", "", 1, t0.Add(time.Hour), t0); waitroom.ErrorCode(err) != waitroom.CodeInvalidRequest {
		t.Fatalf("Issue for a tier the room lacks: %v, want invalid_request", err)
	}
}

// TestSharedRate: the difficulty follows the rate every process sees when
// it is higher than this process's own, read at most once a second per
// room, and this process's own when the shared one fails.
func TestSharedRate(t *testing.T) {
	s := memstore.New()
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	if _, _, err := s.PutRoom(ctx, "r", powConfig(1000, 64_000), t0); err != nil {
		t.Fatal(err)
	}
	var reads int
	shared, fail := int64(6000), false // ten times the calm 600
	d := newDoor(t, s, door.WithSharedRate(
		func(_ context.Context, room string, _ time.Time) (int64, error) {
			reads++
			if fail {
				return 0, errors.New("down")
			}
			return shared, nil
		}))
	for i := range 50 {
		if got := maxNumber(t, d, t0.Add(time.Duration(i)*10*time.Millisecond)); got != 10_000 {
			t.Fatalf("difficulty with 6,000 joins a minute across processes = %d, want 10000", got)
		}
	}
	if reads != 1 {
		t.Fatalf("the shared rate was read %d times in half a second, want once", reads)
	}
	shared = 1200
	if got := maxNumber(t, d, t0.Add(2*time.Second)); got != 2000 || reads != 2 {
		t.Fatalf("a second later: difficulty %d after %d reads, want 2000 after 2", got, reads)
	}
	// A failed read keeps the last value rather than dropping to this
	// process's own count.
	fail = true
	if got := maxNumber(t, d, t0.Add(4*time.Second)); got != 2000 {
		t.Fatalf("with the shared rate failing: difficulty %d, want the last value's 2000", got)
	}
}

// TestConcurrentUse: joins, challenges and configuration changes at once,
// across cache refreshes, under the race detector.
func TestConcurrentUse(t *testing.T) {
	d, s := setup(t, powConfig(1000, 2000))
	ctx := context.Background()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			cfg := powConfig(1000, 2000)
			cfg.InviteOnly = i%2 == 0
			if _, _, err := s.PutRoom(ctx, "r", cfg, t0.Add(time.Duration(i)*100*time.Millisecond)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				now := t0.Add(time.Duration(i*25+g) * time.Millisecond)
				a := netip.AddrFrom4([4]byte{10, 0, byte(g), byte(i)})
				if _, err := d.Challenge(ctx, "r", a, now); err != nil {
					t.Error(err)
					return
				}
				_, err := d.Admit(ctx, "r", a, "", "", "", now)
				switch waitroom.ErrorCode(err) {
				case waitroom.CodeChallengeRequired, waitroom.CodeInviteRequired:
				default:
					t.Errorf("Admit without anything: %v, want a door's refusal", err)
					return
				}
				if _, err := d.Guarded(ctx, "r", now); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	<-done
}

// TestInviteKeysFollowTheRoom: the invite keys the door parsed are made
// again when the room's configuration changes, so an invite signed with a
// key added later is accepted, and one of a key taken away refused.
func TestInviteKeysFollowTheRoom(t *testing.T) {
	cfg := waitroom.DefaultConfig()
	cfg.InviteOnly = true
	d, s := setup(t, cfg)
	ctx := context.Background()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := invite.SignEd25519(invite.Claims{Room: "r", ID: invite.NewID(), Uses: 1, Expires: t0.Add(time.Hour)}, priv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Admit(ctx, "r", addr, "", tok, "", t0); waitroom.ErrorCode(err) != waitroom.CodeInviteInvalid {
		t.Fatalf("an invite of a key the room does not know: %v, want invite_invalid", err)
	}
	cfg.InviteKeys = []string{invite.FormatPublicKey(pub)}
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Admit(ctx, "r", addr, "", tok, "", t0); err != nil {
		t.Fatalf("after the key was added: %v, want the invite accepted", err)
	}
	cfg.InviteKeys = nil
	if _, _, err := s.PutRoom(ctx, "r", cfg, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Admit(ctx, "r", addr, "", tok, "", t0); waitroom.ErrorCode(err) != waitroom.CodeInviteInvalid {
		t.Fatalf("after the key was taken away: %v, want invite_invalid", err)
	}
}
