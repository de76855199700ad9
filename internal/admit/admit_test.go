package admit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/door"
	"github.com/waitroom/waitroom/internal/limit"
	"github.com/waitroom/waitroom/internal/roomview"
	"github.com/waitroom/waitroom/memstore"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// fixture is a memstore with rooms "open" (no door), "members" (invite
// only, tiers presale and general) and "pow" (a proof-of-work challenge).
type fixture struct {
	t     *testing.T
	mem   *memstore.Store
	rooms *roomview.View
	door  *door.Door
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	mem := memstore.New()
	f := &fixture{t: t, mem: mem}
	open := waitroom.DefaultConfig()
	open.Capacity = 0 // everyone waits: the counts stay put
	members := open
	members.InviteOnly = true
	members.Tiers = []waitroom.Tier{{Name: "presale"}, {Name: "general"}}
	pow := open
	pow.Challenge = waitroom.ChallengePoW
	held := open
	held.HoldPlaces, held.ClaimWindow = true, waitroom.Duration(time.Minute)
	for name, cfg := range map[string]waitroom.RoomConfig{"open": open, "other": open, "members": members, "pow": pow, "held": held} {
		if _, _, err := mem.PutRoom(context.Background(), name, cfg, t0); err != nil {
			t.Fatalf("PutRoom %s: %v", name, err)
		}
	}
	// The view's clock stands still: its snapshots stay fresh, and only
	// the store's events change them.
	f.rooms = roomview.New(roomview.Config{Store: mem, Clock: waitroom.NewManualClock(t0)})
	f.door = door.New(f.rooms, []byte("the admission tests' door secret, 32+ bytes"))
	t.Cleanup(func() {
		f.rooms.Close()
		_ = mem.Close()
	})
	return f
}

// admission is an Admission over the fixture's store and door with the
// limits joins (nil for none), which read the fixture's room view.
func (f *fixture) admission(joins *limit.Joins) *admit.Admission {
	if joins != nil {
		joins.Rooms = f.rooms
	}
	return admit.New(admit.Config{Store: f.mem, Door: f.door, Joins: joins})
}

// live is the count of live sessions in room.
func (f *fixture) live(room string) int {
	f.t.Helper()
	r, err := f.mem.Room(context.Background(), room)
	if err != nil {
		f.t.Fatalf("Room %s: %v", room, err)
	}
	return r.Waiting + r.Active
}

// from is a visitor's request from addr.
func from(addr string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.RemoteAddr = addr + ":40000"
	return r
}

func wantCode(t *testing.T, what string, err error, code waitroom.Code) {
	t.Helper()
	if got := waitroom.ErrorCode(err); got != code {
		t.Fatalf("%s: got error %v (code %q), want code %q", what, err, got, code)
	}
}

func ptr(s string) *string { return &s }

// TestOpenJoinSetsTheCookie: a plain join makes a waiting session and,
// given a ResponseWriter, stores it in the room's cookie with the
// attributes the page and the gate always set.
func TestOpenJoinSetsTheCookie(t *testing.T) {
	f := newFixture(t)
	a := f.admission(nil)
	for _, secure := range []bool{false, true} {
		rec := httptest.NewRecorder()
		s, err := a.Enter(from("192.0.2.1"), admit.Request{Room: "open", Cookie: rec, Secure: secure}, t0)
		if err != nil {
			t.Fatalf("Enter: %v", err)
		}
		if s.Room != "open" || s.Status != waitroom.StatusWaiting || s.ID == "" {
			t.Fatalf("session %+v, want a waiting session in open", s)
		}
		cookies := rec.Result().Cookies()
		if len(cookies) != 1 {
			t.Fatalf("cookies %v, want one", cookies)
		}
		c := cookies[0]
		if c.Name != "waitroom-sid-open" || c.Value != s.ID || c.Path != "/" || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Secure != secure {
			t.Errorf("cookie %+v, want waitroom-sid-open=%s Path=/ HttpOnly SameSite=Lax Secure=%v", c, s.ID, secure)
		}
		// The page and the gate read it back.
		next := httptest.NewRequest(http.MethodGet, "/r/open", nil)
		next.AddCookie(c)
		if got := admit.SessionID(next, "open"); got != s.ID {
			t.Errorf("SessionID of the cookie set: %q, want %q", got, s.ID)
		}
		if got := admit.SessionID(next, "other"); got != "" {
			t.Errorf("SessionID of another room: %q, want none", got)
		}
	}
	// Without a ResponseWriter (the API) no cookie is set, and the join
	// is made all the same.
	if _, err := a.Enter(from("192.0.2.1"), admit.Request{Room: "open"}, t0); err != nil {
		t.Fatalf("Enter without a cookie: %v", err)
	}
	if n := f.live("open"); n != 3 {
		t.Fatalf("%d live sessions, want 3", n)
	}
}

// TestTrustedOnly: a key and a held place's contact need a trusted caller,
// and are checked before anything else (the door, the allowance).
func TestTrustedOnly(t *testing.T) {
	f := newFixture(t)
	a := f.admission(&limit.Joins{Rate: limit.NewLimiter(1, 1, 0)})
	for _, tc := range []struct {
		what string
		req  admit.Request
		code waitroom.Code
	}{
		{"key, untrusted", admit.Request{Room: "open", Key: ptr("k")}, waitroom.CodeUnauthorized},
		{"empty key, untrusted", admit.Request{Room: "open", Key: ptr("")}, waitroom.CodeUnauthorized},
		{"key, untrusted, invite-only room", admit.Request{Room: "members", Key: ptr("k")}, waitroom.CodeUnauthorized},
		{"empty key, trusted", admit.Request{Room: "open", Key: ptr(""), Trusted: true}, waitroom.CodeInvalidKey},
		{"contact, untrusted", admit.Request{Room: "held", Contact: ptr("sms:1")}, waitroom.CodeUnauthorized},
		{"empty contact, trusted", admit.Request{Room: "held", Contact: ptr(""), Trusted: true}, waitroom.CodeInvalidRequest},
	} {
		_, err := a.Enter(from("192.0.2.1"), tc.req, t0)
		wantCode(t, tc.what, err, tc.code)
	}
	// None of them cost the address its one join.
	if _, err := a.Enter(from("192.0.2.1"), admit.Request{Room: "open"}, t0); err != nil {
		t.Fatalf("join after the refusals: %v, want it within the allowance", err)
	}
	// A trusted caller sets both.
	s, err := a.Enter(from("192.0.2.1"), admit.Request{Room: "open", Key: ptr("user-7"), Trusted: true}, t0)
	if err != nil || s.Key != "user-7" {
		t.Fatalf("trusted join with a key: %+v, %v; want key user-7", s, err)
	}
	s, err = a.Enter(from("192.0.2.1"), admit.Request{Room: "held", Contact: ptr("sms:1"), Trusted: true}, t0)
	if err != nil || s.Contact != "sms:1" {
		t.Fatalf("trusted held join: %+v, %v; want contact sms:1", s, err)
	}
}

// TestDoorFirst: the door refuses before the limits count the join, so a
// refused join costs the address none of its allowance; what it lets in
// carries the invite's tier.
func TestDoorFirst(t *testing.T) {
	f := newFixture(t)
	a := f.admission(&limit.Joins{Rate: limit.NewLimiter(1, 1, 0)})
	_, err := a.Enter(from("192.0.2.1"), admit.Request{Room: "members"}, t0)
	wantCode(t, "invite-only room without an invite", err, waitroom.CodeInviteRequired)
	_, err = a.Enter(from("192.0.2.1"), admit.Request{Room: "members", Invite: "forged"}, t0)
	wantCode(t, "invite-only room with a forged invite", err, waitroom.CodeInviteInvalid)
	_, err = a.Enter(from("192.0.2.1"), admit.Request{Room: "pow"}, t0)
	var we *waitroom.Error
	if !errors.As(err, &we) || we.Code != waitroom.CodeChallengeRequired || we.Challenge == nil {
		t.Fatalf("challenge room without a solution: %v, want challenge_required with a challenge", err)
	}
	// StopAtDoor: no challenge, no invite asked; the caller's visitor
	// belongs on the waiting page.
	for _, room := range []string{"members", "pow"} {
		if _, err := a.Enter(from("192.0.2.1"), admit.Request{Room: room, StopAtDoor: true}, t0); !errors.Is(err, admit.ErrGuarded) {
			t.Fatalf("%s with StopAtDoor: %v, want ErrGuarded", room, err)
		}
	}
	if n := f.live("members") + f.live("pow"); n != 0 {
		t.Fatalf("%d sessions made past the door, want none", n)
	}
	// The address still has its one join: the invite's holder gets in, in
	// the invite's tier.
	toks, err := f.door.Issue(context.Background(), "members", 1, "presale", "", 1, t0.Add(time.Hour), t0)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	s, err := a.Enter(from("192.0.2.1"), admit.Request{Room: "members", Invite: toks[0]}, t0)
	if err != nil || s.Tier != "presale" {
		t.Fatalf("join with an invite: %+v, %v; want a session in tier presale", s, err)
	}
	// An open room passes a door with StopAtDoor too, and then the
	// allowance counts: it is spent.
	_, err = a.Enter(from("192.0.2.1"), admit.Request{Room: "open", StopAtDoor: true}, t0)
	wantCode(t, "second join from the address", err, waitroom.CodeRateLimited)
	// The invite's uses are counted by the store, with the join, so
	// that no process can replay it: the last check of all.
	_, err = a.Enter(from("192.0.2.9"), admit.Request{Room: "members", Invite: toks[0]}, t0)
	wantCode(t, "the spent invite again", err, waitroom.CodeInviteUsed)
}

// TestRate: the per-address rate refuses with a Retry-After before the
// store is asked; a trusted caller skips it; behind trusted proxies the
// forwarded client is counted.
func TestRate(t *testing.T) {
	f := newFixture(t)
	proxies, err := clientaddr.Parse("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	a := f.admission(&limit.Joins{Rate: limit.NewLimiter(60, 2, 0), Proxies: proxies})
	for i := range 2 {
		if _, err := a.Enter(from("192.0.2.1"), admit.Request{Room: "open"}, t0); err != nil {
			t.Fatalf("join %d within the burst: %v", i+1, err)
		}
	}
	_, err = a.Enter(from("192.0.2.1"), admit.Request{Room: "open"}, t0)
	wantCode(t, "join past the burst", err, waitroom.CodeRateLimited)
	if secs, ok := limit.RetryAfter(err); !ok || secs != 1 {
		t.Fatalf("Retry-After of the refusal: %d, %v; want 1 second", secs, ok)
	}
	if n := f.live("open"); n != 2 {
		t.Fatalf("%d live sessions, want 2 (the refused join reached the store)", n)
	}
	for i := range 5 {
		if _, err := a.Enter(from("192.0.2.1"), admit.Request{Room: "open", Trusted: true}, t0); err != nil {
			t.Fatalf("trusted join %d past the rate: %v, want it made", i+1, err)
		}
	}
	// A second later the address has one more join.
	if _, err := a.Enter(from("192.0.2.1"), admit.Request{Room: "open"}, t0.Add(time.Second)); err != nil {
		t.Fatalf("join a second later: %v", err)
	}
	// Behind the trusted proxy each client has its own allowance.
	behind := func(client string) *http.Request {
		r := from("10.1.2.3")
		r.Header.Set("X-Forwarded-For", client)
		return r
	}
	if got := a.Client(behind("198.51.100.7")); got.String() != "198.51.100.7" {
		t.Fatalf("Client behind the proxy: %s, want 198.51.100.7", got)
	}
	for i := range 2 {
		if _, err := a.Enter(behind("198.51.100.7"), admit.Request{Room: "open"}, t0); err != nil {
			t.Fatalf("join %d of a client behind the proxy: %v", i+1, err)
		}
	}
	_, err = a.Enter(behind("198.51.100.7"), admit.Request{Room: "open"}, t0)
	wantCode(t, "third join of a client behind the proxy", err, waitroom.CodeRateLimited)
	if _, err := a.Enter(behind("198.51.100.8"), admit.Request{Room: "open"}, t0); err != nil {
		t.Fatalf("join of another client behind the proxy: %v", err)
	}
}

// TestCaps: the cap per room and the memory guard refuse everyone, the
// trusted too, before the store is asked; the live count follows the
// joins (the room view's, kept by the joins' own events).
func TestCaps(t *testing.T) {
	f := newFixture(t)
	var used atomic.Uint64
	used.Store(100)
	a := f.admission(&limit.Joins{MaxSessionsPerRoom: 3, Memory: limit.NewMemoryGuard(1000, used.Load)})
	var first waitroom.Session
	for i := range 3 {
		s, err := a.Enter(from("192.0.2.1"), admit.Request{Room: "open"}, t0)
		if err != nil {
			t.Fatalf("join %d under the cap: %v", i+1, err)
		}
		if i == 0 {
			first = s
		}
	}
	for _, trusted := range []bool{false, true} {
		_, err := a.Enter(from("192.0.2.1"), admit.Request{Room: "open", Trusted: trusted}, t0)
		wantCode(t, "join over the cap", err, waitroom.CodeRoomFull)
		if secs, ok := limit.RetryAfter(err); !ok || secs != 5 {
			t.Fatalf("Retry-After over the cap: %d, %v; want 5 seconds", secs, ok)
		}
	}
	if n := f.live("open"); n != 3 {
		t.Fatalf("%d live sessions, want 3", n)
	}
	// A leave frees a place at once: its event carries the new count.
	if _, err := f.mem.Leave(context.Background(), "open", first.ID, waitroom.ReasonLeft, t0); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	if _, err := a.Enter(from("192.0.2.1"), admit.Request{Room: "open"}, t0); err != nil {
		t.Fatalf("join after a leave: %v, want the freed place", err)
	}
	// Another room has its own count.
	if _, err := a.Enter(from("192.0.2.1"), admit.Request{Room: "other"}, t0); err != nil {
		t.Fatalf("join of another room: %v", err)
	}
	used.Store(5000)
	later := t0.Add(time.Second) // past the memory guard's sampling interval
	for _, trusted := range []bool{false, true} {
		_, err := a.Enter(from("192.0.2.2"), admit.Request{Room: "other", Trusted: trusted}, later)
		wantCode(t, "join over the memory limit", err, waitroom.CodeRoomFull)
	}
	// The room's refusals come from the store, after every check.
	used.Store(100)
	_, err := a.Enter(from("192.0.2.2"), admit.Request{Room: "nope"}, later.Add(time.Second))
	wantCode(t, "join of a missing room", err, waitroom.CodeRoomNotFound)
}

// TestNoDoor: without a door every room admits like an open one, and a
// StopAtDoor caller joins too.
func TestNoDoor(t *testing.T) {
	f := newFixture(t)
	a := admit.New(admit.Config{Store: f.mem})
	if a.Door() != nil {
		t.Fatal("Door of an admission without one: want nil")
	}
	// Without limits there are no trusted proxies either: the client is
	// the peer, whatever it forwards.
	r := from("10.1.2.3")
	r.Header.Set("X-Forwarded-For", "198.51.100.7")
	if got := a.Client(r); got.String() != "10.1.2.3" {
		t.Fatalf("Client without limits: %s, want the peer 10.1.2.3", got)
	}
	for _, room := range []string{"members", "pow"} {
		if _, err := a.Enter(from("192.0.2.1"), admit.Request{Room: room, StopAtDoor: true}, t0); err != nil {
			t.Fatalf("%s without a door: %v, want a session", room, err)
		}
	}
}

func TestNewWithoutStorePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New without a Store did not panic")
		}
	}()
	admit.New(admit.Config{})
}
