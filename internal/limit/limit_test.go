package limit_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/limit"
	"github.com/waitroom/waitroom/internal/roomview"
	"github.com/waitroom/waitroom/memstore"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func TestLimiterBurstAndRefill(t *testing.T) {
	l := limit.NewLimiter(120, 120, 0)
	a := netip.MustParseAddr("192.0.2.1")
	for i := range 120 {
		if ok, _ := l.Allow(a, t0); !ok {
			t.Fatalf("event %d of the burst refused, want 120 allowed at once", i+1)
		}
	}
	ok, wait := l.Allow(a, t0)
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("event 121: got ok=%v retry %v, want refused with retry 500ms (one token per 0.5s)", ok, wait)
	}
	// Another address has its own bucket.
	if ok, _ := l.Allow(netip.MustParseAddr("192.0.2.2"), t0); !ok {
		t.Fatalf("another address refused, want its own full bucket")
	}
	// Half a second earns one token, not two.
	if ok, _ := l.Allow(a, t0.Add(500*time.Millisecond)); !ok {
		t.Fatalf("after 0.5s: refused, want one token earned")
	}
	if ok, _ := l.Allow(a, t0.Add(500*time.Millisecond)); ok {
		t.Fatalf("after 0.5s: second event allowed, want one token only")
	}
	// A minute later the bucket is full again: 120 more, not 121.
	n := 0
	for {
		if ok, _ := l.Allow(a, t0.Add(90*time.Second)); !ok {
			break
		}
		n++
	}
	if n != 120 {
		t.Fatalf("after refilling: %d events allowed at once, want 120", n)
	}
}

func TestLimiterIPv6PerSlash64(t *testing.T) {
	l := limit.NewLimiter(60, 2, 0)
	for _, s := range []string{"2001:db8:1:2::1", "2001:db8:1:2:ffff::9"} {
		if ok, _ := l.Allow(netip.MustParseAddr(s), t0); !ok {
			t.Fatalf("%s refused, want allowed (burst 2 for the /64)", s)
		}
	}
	if ok, _ := l.Allow(netip.MustParseAddr("2001:db8:1:2::77"), t0); ok {
		t.Fatalf("third address of the same /64 allowed, want the /64 to share one bucket")
	}
	if ok, _ := l.Allow(netip.MustParseAddr("2001:db8:1:3::1"), t0); !ok {
		t.Fatalf("address of the next /64 refused, want its own bucket")
	}
	// IPv4 and its mapped form are one client.
	l2 := limit.NewLimiter(60, 1, 0)
	l2.Allow(netip.MustParseAddr("192.0.2.1"), t0)
	if ok, _ := l2.Allow(netip.MustParseAddr("::ffff:192.0.2.1"), t0); ok {
		t.Fatalf("::ffff:192.0.2.1 allowed after 192.0.2.1 spent the bucket, want them the same client")
	}
}

func TestLimiterDisabled(t *testing.T) {
	l := limit.NewLimiter(0, 120, 0)
	if l != nil {
		t.Fatalf("NewLimiter(0, …) = %v, want nil (disabled)", l)
	}
	for range 1000 {
		if ok, _ := l.Allow(netip.MustParseAddr("192.0.2.1"), t0); !ok {
			t.Fatalf("nil limiter refused, want everything allowed")
		}
	}
}

// TestLimiterBoundedMemory: a flood of distinct addresses never grows the
// table past its bound, and addresses whose buckets have refilled are
// forgotten.
func TestLimiterBoundedMemory(t *testing.T) {
	const max = 64 * 16
	l := limit.NewLimiter(60, 10, max)
	for i := range 100_000 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		if ok, _ := l.Allow(a, t0); !ok {
			t.Fatalf("address %d refused, want every new address allowed", i)
		}
	}
	if n := l.Len(); n > max {
		t.Fatalf("tracking %d addresses, want at most %d", n, max)
	}
	// Ten seconds later every bucket is full: they are dropped as new ones come.
	for i := range 2 * max {
		l.Allow(netip.AddrFrom4([4]byte{11, 0, byte(i >> 8), byte(i)}), t0.Add(11*time.Second))
	}
	if n := l.Len(); n > max {
		t.Fatalf("after refill: tracking %d addresses, want at most %d", n, max)
	}
}

func TestMemoryGuard(t *testing.T) {
	used, reads := uint64(100), 0
	g := limit.NewMemoryGuard(1000, func() uint64 { reads++; return used })
	if g.Over(t0) {
		t.Fatalf("Over with 100 of 1000 bytes = true, want false")
	}
	used = 2000
	if g.Over(t0.Add(50 * time.Millisecond)) {
		t.Fatalf("Over 50ms after a sample = true, want the previous sample's answer (false)")
	}
	if !g.Over(t0.Add(100 * time.Millisecond)) {
		t.Fatalf("Over with 2000 of 1000 bytes = false, want true")
	}
	used = 999
	if g.Over(t0.Add(300 * time.Millisecond)) {
		t.Fatalf("Over after memory fell = true, want false")
	}
	if reads != 3 {
		t.Fatalf("sampled %d times, want 3 (at most every %v)", reads, limit.MemorySampleEvery)
	}
	if limit.NewMemoryGuard(0, nil) != nil {
		t.Fatalf("NewMemoryGuard(0, nil) != nil, want no guard")
	}
	var none *limit.MemoryGuard
	if none.Over(t0) {
		t.Fatalf("nil guard Over = true, want false")
	}
	if m := limit.RuntimeMemory(); m < 1<<20 || m > 1<<40 {
		t.Fatalf("RuntimeMemory() = %d, want a plausible size for a Go test process", m)
	}
}

func TestJoinsCheck(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	defer st.Close()
	if _, _, err := st.PutRoom(ctx, "r", waitroom.DefaultConfig(), t0); err != nil {
		t.Fatal(err)
	}
	proxies, _ := clientaddr.Parse("127.0.0.1")
	used := uint64(0)
	rooms := roomview.New(roomview.Config{Store: st})
	defer rooms.Close()
	j := &limit.Joins{
		Rate:               limit.NewLimiter(60, 3, 0),
		Proxies:            proxies,
		MaxSessionsPerRoom: 2,
		Rooms:              rooms,
		Memory:             limit.NewMemoryGuard(10, func() uint64 { return used }),
	}
	req := func(remote, xff string) error {
		r := httptest.NewRequest("POST", "/", nil)
		r.RemoteAddr = remote
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		return j.Check(ctx, r, "r", t0)
	}
	code := func(err error) waitroom.Code { return waitroom.ErrorCode(err) }
	for i := range 2 {
		if err := req("192.0.2.1:1", ""); err != nil {
			t.Fatalf("join %d: %v, want allowed", i+1, err)
		}
		if _, err := st.Join(ctx, "r", "", t0); err != nil {
			t.Fatal(err)
		}
	}
	err := req("192.0.2.1:1", "")
	if code(err) != waitroom.CodeRoomFull {
		t.Fatalf("third join with a cap of 2: got %v, want room_full", err)
	}
	if secs, ok := limit.RetryAfter(err); !ok || secs != 5 {
		t.Fatalf("room_full Retry-After = %d, %v; want 5", secs, ok)
	}
	// The 4th from that address is over the rate, before the cap is looked at.
	err = req("192.0.2.1:1", "")
	var re *limit.RetryError
	if code(err) != waitroom.CodeRateLimited || !errors.As(err, &re) || re.RetryAfterSeconds() != 1 {
		t.Fatalf("4th join from one address (burst 3): got %v, want rate_limited with Retry-After 1", err)
	}
	// Behind the trusted proxy, the forwarded client is counted, not the proxy.
	used = 11
	for i := range 3 {
		if err := req("127.0.0.1:9", "198.51.100.7"); code(err) != waitroom.CodeRoomFull {
			t.Fatalf("proxied join %d while over memory: got %v, want room_full", i+1, err)
		}
	}
	if err := req("127.0.0.1:9", "198.51.100.8"); code(err) != waitroom.CodeRoomFull {
		t.Fatalf("another proxied client: got %v, want room_full (memory), not rate_limited", err)
	}
	// A spoofed header from an untrusted peer does not give a fresh bucket.
	if err := req("192.0.2.1:1", "198.51.100.9"); code(err) != waitroom.CodeRateLimited {
		t.Fatalf("untrusted peer with X-Forwarded-For: got %v, want rate_limited (its own address)", err)
	}
	var none *limit.Joins
	if err := none.Check(ctx, httptest.NewRequest("POST", "/", nil), "r", t0); err != nil {
		t.Fatalf("nil Joins: %v, want nil", err)
	}
}

// TestJoinsCountFollowsTheRoom: the live count is the room view's, which
// the store's events keep current: a leave frees the cap at once, and a
// join made elsewhere (the store directly) fills it.
func TestJoinsCountFollowsTheRoom(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	defer st.Close()
	if _, _, err := st.PutRoom(ctx, "r", waitroom.DefaultConfig(), t0); err != nil {
		t.Fatal(err)
	}
	rooms := roomview.New(roomview.Config{Store: st, Clock: waitroom.NewManualClock(t0)})
	defer rooms.Close()
	j := &limit.Joins{MaxSessionsPerRoom: 1, Rooms: rooms}
	if err := j.CheckCaps(ctx, "r", t0); err != nil {
		t.Fatalf("empty room: %v, want allowed", err)
	}
	s, err := st.Join(ctx, "r", "", t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.CheckCaps(ctx, "r", t0); waitroom.ErrorCode(err) != waitroom.CodeRoomFull {
		t.Fatalf("after a join with a cap of 1: %v, want room_full", err)
	}
	if _, err := st.Leave(ctx, "r", s.ID, waitroom.ReasonLeft, t0); err != nil {
		t.Fatal(err)
	}
	if err := j.CheckCaps(ctx, "r", t0); err != nil {
		t.Fatalf("after the leave: %v, want allowed", err)
	}
	if err := j.CheckCaps(ctx, "nope", t0); err != nil {
		t.Fatalf("unknown room: %v, want nil (the join itself answers room_not_found)", err)
	}
	if err := (&limit.Joins{MaxSessionsPerRoom: 1}).CheckCaps(ctx, "r", t0); err == nil {
		t.Fatalf("a cap without a room view: nil, want an error")
	}
}
