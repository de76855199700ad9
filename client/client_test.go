package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/door"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/roomview"
	"github.com/waitroom/waitroom/memstore"
)

const token = "client-test-token"

// newServer starts the API over a fresh memstore and returns a client
// without the admin token and one with it.
func newServer(t *testing.T) (public, admin *client.Client, clock *waitroom.ManualClock) {
	t.Helper()
	store := memstore.New()
	// A manual clock, safe to read from the server's goroutines (the
	// console's stats recorder samples it) while the test moves it.
	clock = waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	rooms := roomview.New(roomview.Config{Store: store})
	dr := door.New(rooms, []byte("a test door secret of 32 bytes or more"))
	srv := httptest.NewServer(httpapi.NewHandler(httpapi.Config{Store: store, AdminToken: token, Clock: clock,
		Admit: admit.New(admit.Config{Store: store, Door: dr})}))
	t.Cleanup(func() {
		srv.Close()
		rooms.Close()
		_ = store.Close()
	})
	return client.New(srv.URL, client.WithHTTPClient(srv.Client())),
		client.New(srv.URL+"/", client.WithHTTPClient(srv.Client()), client.WithAdminToken(token)),
		clock
}

func TestSessionLifecycle(t *testing.T) {
	ctx := context.Background()
	pub, adm, clock := newServer(t)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	room, created, err := adm.PutRoom(ctx, "shop", cfg)
	if err != nil || !created || room.Name != "shop" || room.Capacity != 1 {
		t.Fatalf("PutRoom: got %+v created=%v err=%v, want room shop of capacity 1, created", room, created, err)
	}
	if _, created, err := adm.PutRoom(ctx, "shop", cfg); err != nil || created {
		t.Errorf("PutRoom again: got created=%v err=%v, want replaced", created, err)
	}

	first, err := pub.Join(ctx, "shop", "")
	if err != nil || first.Status != waitroom.StatusActive {
		t.Fatalf("Join: got %+v, %v, want an active session", first, err)
	}
	second, err := pub.Join(ctx, "shop", "")
	if err != nil || second.Status != waitroom.StatusWaiting || second.Position != 1 {
		t.Fatalf("second Join: got %+v, %v, want waiting at position 1", second, err)
	}
	got, err := pub.Session(ctx, "shop", second.ID)
	if err != nil || got.ID != second.ID || got.Position != 1 || got.Waiting != 1 || got.Active != 1 || got.Capacity != 1 {
		t.Errorf("Session: got %+v, %v, want the waiting session with totals 1/1/1", got, err)
	}
	if !got.JoinedAt.Equal(clock.Now()) {
		t.Errorf("Session joined_at: got %v, want %v", got.JoinedAt, clock.Now())
	}
	clock.Set(clock.Now().Add(time.Second))
	hb, err := pub.Heartbeat(ctx, "shop", first.ID)
	if err != nil || hb.Status != waitroom.StatusActive {
		t.Errorf("Heartbeat: got %+v, %v, want active", hb, err)
	}
	if err := pub.Away(ctx, "shop", second.ID); err != nil {
		t.Errorf("Away: %v", err)
	}
	st, err := pub.Room(ctx, "shop")
	// The room was put twice: its configuration is at revision 2.
	if want := (client.RoomStatus{Room: "shop", Mode: waitroom.ModeAuto, Capacity: 1, Active: 1, Waiting: 1, ETag: `"2"`}); err != nil || st != want {
		t.Errorf("Room: got %+v, %v, want %+v", st, err, want)
	}

	left, err := pub.Leave(ctx, "shop", first.ID)
	if err != nil || left.Status != waitroom.StatusLeft || left.EndReason != waitroom.ReasonLeft {
		t.Errorf("Leave: got %+v, %v, want left/left", left, err)
	}
	if got, err := pub.Session(ctx, "shop", second.ID); err != nil || got.Status != waitroom.StatusActive {
		t.Errorf("next in line after Leave: got %+v, %v, want active", got, err)
	}
	// The admin client's Leave is still a leave, not a revoke.
	third, _ := pub.Join(ctx, "shop", "")
	if s, err := adm.Leave(ctx, "shop", third.ID); err != nil || s.EndReason != waitroom.ReasonLeft {
		t.Errorf("Leave with an admin client: got %+v, %v, want end_reason left", s, err)
	}
	if s, err := adm.Revoke(ctx, "shop", second.ID); err != nil || s.EndReason != waitroom.ReasonRevoked {
		t.Errorf("Revoke: got %+v, %v, want end_reason revoked", s, err)
	}

	hist, next, err := adm.History(ctx, "shop", waitroom.StatusLeft, waitroom.Page{})
	if err != nil || len(hist) != 3 || next != "" {
		t.Errorf("History: got %d sessions next %q err %v, want 3 and no next", len(hist), next, err)
	}
	rooms, err := adm.Rooms(ctx)
	if err != nil || len(rooms) != 1 || rooms[0].Name != "shop" || rooms[0].LastTicket != 3 {
		t.Errorf("Rooms: got %+v, %v, want shop with last ticket 3", rooms, err)
	}
	if err := adm.DeleteRoom(ctx, "shop", false); err != nil {
		t.Errorf("DeleteRoom of an empty room: %v", err)
	}
	if err := pub.Healthz(ctx); err != nil {
		t.Errorf("Healthz: %v", err)
	}
	if err := pub.Ready(ctx); err != nil {
		t.Errorf("Ready: %v", err)
	}
}

// TestErrorCodes checks that server errors come back as *waitroom.Error with
// the server's code, message and, for already_joined, the live session.
func TestErrorCodes(t *testing.T) {
	ctx := context.Background()
	pub, adm, _ := newServer(t)
	if _, _, err := adm.PutRoom(ctx, "r", waitroom.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	live, err := adm.Join(ctx, "r", "user-7")
	if err != nil || live.Key != "user-7" {
		t.Fatalf("keyed Join: got %+v, %v", live, err)
	}
	_, err = adm.Join(ctx, "r", "user-7")
	var e *waitroom.Error
	if !errors.As(err, &e) || e.Code != waitroom.CodeAlreadyJoined || e.Message == "" || e.Session == nil || e.Session.ID != live.ID {
		t.Errorf("second keyed Join: got %#v, want already_joined carrying session %s", err, live.ID)
	}

	cases := []struct {
		name string
		err  error
		want waitroom.Code
	}{
		{"key without token", func() error { _, err := pub.Join(ctx, "r", "user-8"); return err }(), waitroom.CodeUnauthorized},
		{"admin call without token", func() error { _, err := pub.Rooms(ctx); return err }(), waitroom.CodeUnauthorized},
		{"unknown room", func() error { _, err := pub.Room(ctx, "nope"); return err }(), waitroom.CodeRoomNotFound},
		{"bad room name", func() error { _, err := pub.Join(ctx, "No/Such", ""); return err }(), waitroom.CodeInvalidRoomName},
		{"bad session id", func() error { _, err := pub.Session(ctx, "r", "x?y=1"); return err }(), waitroom.CodeInvalidSessionID},
		{"unknown session", func() error {
			_, err := pub.Heartbeat(ctx, "r", waitroom.NewSessionID(99).String())
			return err
		}(), waitroom.CodeSessionNotFound},
		{"room not empty", adm.DeleteRoom(ctx, "r", false), waitroom.CodeRoomNotEmpty},
		{"bad config", func() error {
			_, _, err := adm.PutRoom(ctx, "r", waitroom.RoomConfig{Mode: "fast"})
			return err
		}(), waitroom.CodeInvalidConfig},
		{"bad limit", func() error {
			_, _, err := adm.Waiting(ctx, "r", waitroom.Page{Limit: 5000})
			return err
		}(), waitroom.CodeInvalidRequest},
	}
	for _, c := range cases {
		if got := waitroom.ErrorCode(c.err); got != c.want {
			t.Errorf("%s: got code %s (%v), want %s", c.name, got, c.err, c.want)
		}
		if !errors.As(c.err, &e) || e.Message == "" {
			t.Errorf("%s: got %#v, want a *waitroom.Error with a message", c.name, c.err)
		}
	}
	if err := adm.DeleteRoom(ctx, "r", true); err != nil {
		t.Errorf("DeleteRoom with force: %v", err)
	}
	if _, err := adm.Advance(ctx, "r", 1); waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
		t.Errorf("Advance after deletion: got %v, want room_not_found", err)
	}
}

// TestPaging reads the waiting list page by page and advances through it.
func TestPaging(t *testing.T) {
	ctx := context.Background()
	pub, adm, _ := newServer(t)
	cfg := waitroom.DefaultConfig()
	cfg.Mode = waitroom.ModeManual
	if _, _, err := adm.PutRoom(ctx, "desk", cfg); err != nil {
		t.Fatal(err)
	}
	var want []string
	for range 5 {
		s, err := pub.Join(ctx, "desk", "")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, s.ID)
	}
	var got []string
	page := waitroom.Page{Limit: 2}
	for i := 0; ; i++ {
		if i > 5 {
			t.Fatalf("paging does not end; got %v", got)
		}
		ss, next, err := adm.Waiting(ctx, "desk", page)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			got = append(got, s.ID)
		}
		if next == "" {
			break
		}
		page.After = next
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged Waiting: got %v, want %v", got, want)
	}
	served, err := adm.Advance(ctx, "desk", 0)
	if err != nil || len(served) != 1 || served[0].ID != want[0] || served[0].Status != waitroom.StatusServed {
		t.Errorf("Advance(0): got %+v, %v, want the first served", served, err)
	}
	served, err = adm.Advance(ctx, "desk", 3)
	if err != nil || len(served) != 3 || served[2].ID != want[3] {
		t.Errorf("Advance(3): got %d sessions, %v, want the next 3", len(served), err)
	}
	hist, next, err := adm.History(ctx, "desk", "", waitroom.Page{Limit: 3})
	if err != nil || len(hist) != 3 || next == "" || hist[0].ID != want[3] {
		t.Errorf("History page 1: got %d sessions next %q err %v, want 3 newest first and a cursor", len(hist), next, err)
	}
	hist, next, err = adm.History(ctx, "desk", waitroom.StatusServed, waitroom.Page{Limit: 3, After: next})
	if err != nil || len(hist) != 1 || next != "" || hist[0].ID != want[0] {
		t.Errorf("History page 2: got %d sessions next %q err %v, want only the first served", len(hist), next, err)
	}
}

// TestForeignAnswers checks answers that are not the API's: an error page
// from a proxy, an oversized answer, and a server that is not there.
func TestForeignAnswers(t *testing.T) {
	ctx := context.Background()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
	})
	mux.HandleFunc("GET /v1/rooms/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"room":"` + strings.Repeat("x", 5<<20) + `"}`))
	})
	mux.HandleFunc("PATCH /v1/rooms/proxied", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "precondition failed", http.StatusPreconditionFailed)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := client.New(srv.URL)
	if _, err := c.PatchRoom(ctx, "proxied", nil); waitroom.ErrorCode(err) != waitroom.CodePreconditionFailed {
		t.Errorf("a bare 412: got %v, want precondition_failed", err)
	}

	err := c.Healthz(ctx)
	var e *waitroom.Error
	if !errors.As(err, &e) || e.Code != waitroom.CodeUnavailable || strings.Contains(e.Message, "html") {
		t.Errorf("502 page: got %#v, want an unavailable *waitroom.Error without the page", err)
	}
	if _, err := c.Room(ctx, "big"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("5 MiB answer: got %v, want an error about its size", err)
	}

	// A port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	err = client.New("http://" + addr).Healthz(ctx)
	var opErr *net.OpError
	if err == nil || !errors.As(err, &opErr) {
		t.Errorf("no server: got %v, want a wrapped *net.OpError", err)
	}

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Healthz(canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: got %v, want context.Canceled in the chain", err)
	}
}

// TestSafeRoomChanges: PatchRoom, Pause and Resume change only what they
// name; IfMatch with a version the room no longer has fails with
// precondition_failed and changes nothing, with the room's ETag (from a
// Room answer or the public status) it goes through.
func TestSafeRoomChanges(t *testing.T) {
	ctx := context.Background()
	pub, adm, _ := newServer(t)
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 5
	inv := int64(100)
	cfg.Inventory = &inv
	cfg.TargetURL = "https://shop.example/checkout"
	made, _, err := adm.PutRoom(ctx, "shop", cfg)
	if err != nil {
		t.Fatal(err)
	}
	paused, err := adm.Pause(ctx, "shop", "stock count")
	want := cfg
	want.Paused = true
	if err != nil || !paused.RoomConfig.Equal(want) || paused.Revision != made.Revision+1 {
		t.Fatalf("Pause = %+v (revision %d), %v; want only paused changed", paused.RoomConfig, paused.Revision, err)
	}
	resumed, err := adm.Resume(ctx, "shop", "", client.IfMatch(paused.ETag()))
	if err != nil || !resumed.RoomConfig.Equal(cfg) {
		t.Fatalf("Resume = %+v, %v; want the configuration as made", resumed.RoomConfig, err)
	}
	patched, err := adm.PatchRoom(ctx, "shop", map[string]any{"capacity": 7, "target_url": nil})
	if err != nil || patched.Capacity != 7 || patched.TargetURL != "" || patched.Inventory == nil || *patched.Inventory != 100 {
		t.Fatalf("PatchRoom = %+v, %v; want capacity 7, no target, the inventory kept", patched.RoomConfig, err)
	}
	// Stale versions: each change fails with precondition_failed.
	for name, call := range map[string]func() error{
		"PutRoom": func() error { _, _, err := adm.PutRoom(ctx, "shop", cfg, client.IfMatch(made.ETag())); return err },
		"PatchRoom": func() error {
			_, err := adm.PatchRoom(ctx, "shop", map[string]int{"capacity": 1}, client.IfMatch(resumed.ETag()))
			return err
		},
		"Pause": func() error { _, err := adm.Pause(ctx, "shop", "", client.IfMatch(made.ETag())); return err },
	} {
		err := call()
		var e *waitroom.Error
		if !errors.As(err, &e) || e.Code != waitroom.CodePreconditionFailed {
			t.Errorf("%s with a stale IfMatch: %v, want precondition_failed", name, err)
		}
	}
	st, err := pub.Room(ctx, "shop")
	if err != nil || st.Capacity != 7 || st.Paused || st.ETag != patched.ETag() {
		t.Fatalf("after the refused changes: %+v, %v; want the patched room, ETag %s", st, err, patched.ETag())
	}
	if _, _, err := adm.PutRoom(ctx, "shop", cfg, client.IfMatch(st.ETag)); err != nil {
		t.Errorf("PutRoom with the status' ETag: %v", err)
	}
	if _, err := adm.PatchRoom(ctx, "nowhere", map[string]int{"capacity": 1}); waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
		t.Errorf("PatchRoom of an unknown room: %v, want room_not_found", err)
	}
}
