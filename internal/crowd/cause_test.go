package crowd

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/door"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/limit"
	"github.com/waitroom/waitroom/internal/roomview"
	"github.com/waitroom/waitroom/memstore"
)

// TestCauseOf: failures are named without what differs from one request
// to the next, so they can be counted.
func TestCauseOf(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	_, refused := http.Get(closed)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{newStatusError(429, []byte(`{"error":{"code":"rate_limited","message":"Too many joins."}}`)), "429 rate_limited"},
		{newStatusError(502, []byte(`<html>bad gateway</html>`)), "502 Bad Gateway"},
		{lostError{newStatusError(404, []byte(`{"error":{"code":"session_not_found","message":"x"}}`))}, "404 session_not_found"},
		{refused, "connection refused"},
	} {
		if got := causeOf(tc.err); got != tc.want {
			t.Errorf("causeOf(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// newTestAPI serves the API over a memory store with the join limit as
// given (joins a minute per address; 0: none).
func newTestAPI(t *testing.T, token string, joinsPerMinute int) (*httptest.Server, waitroom.Store) {
	t.Helper()
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	rooms := roomview.New(roomview.Config{Store: store})
	t.Cleanup(rooms.Close)
	dr := door.New(rooms, []byte("a test door secret of 32 bytes or more"))
	adm := admit.New(admit.Config{Store: store, Door: dr, Joins: &limit.Joins{Rate: limit.NewLimiter(joinsPerMinute, joinsPerMinute, 0)}})
	srv := httptest.NewServer(httpapi.NewHandler(httpapi.Config{Store: store, AdminToken: token, Admit: adm}))
	t.Cleanup(srv.Close)
	return srv, store
}

// TestPreflight: a room that does not exist fails the run before it
// starts, unless Create makes it; a server that cannot be reached fails it
// naming the cause.
func TestPreflight(t *testing.T) {
	const token = "preflight-test-token"
	srv, store := newTestAPI(t, token, 0)
	cfg := Config{Targets: []string{srv.URL}, Room: "missing", Users: 5, Hold: 50 * time.Millisecond}
	_, err := Play(t.Context(), cfg, Options{Duration: time.Second})
	var noRoom *NoRoomError
	if !errors.As(err, &noRoom) || noRoom.Room != "missing" || noRoom.Target != srv.URL {
		t.Fatalf("Play on a missing room: %v, want a NoRoomError naming it and the server", err)
	}
	create := waitroom.DefaultConfig()
	create.Capacity = 2
	rep, err := Play(t.Context(), cfg, Options{Duration: 500 * time.Millisecond, Settle: 100 * time.Millisecond, AdminToken: token, Create: &create})
	if err != nil || !rep.CreatedRoom || rep.Joined != 5 {
		t.Fatalf("Play with Create: %v, report %+v", err, rep)
	}
	if room, err := store.Room(t.Context(), "missing"); err != nil || room.Capacity != 2 {
		t.Errorf("the room Create made: %+v, %v; want capacity 2", room, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	_, err = Play(context.Background(), Config{Targets: []string{closed}, Room: "r", Users: 5}, Options{Duration: time.Minute})
	if err == nil || err.Error() != "cannot reach "+closed+": connection refused" {
		t.Errorf("Play against a closed port: %v", err)
	}
}

// TestMostJoinsFailedStopsTheRun: with most joins refused, the run stops
// early, says why, and counts the refusals by code.
func TestMostJoinsFailedStopsTheRun(t *testing.T) {
	srv, store := newTestAPI(t, "", 10)
	if _, _, err := store.PutRoom(t.Context(), "limited", waitroom.DefaultConfig(), time.Now()); err != nil {
		t.Fatal(err)
	}
	rep, err := Play(t.Context(), Config{Targets: []string{srv.URL}, Room: "limited", Users: 100, Hold: time.Minute},
		Options{Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.StoppedEarly, "joins failed") || rep.JoinFailures["429 rate_limited"] < 50 {
		t.Errorf("stopped early %q, join failures %v; want it stopped for failed joins, most of them 429 rate_limited", rep.StoppedEarly, rep.JoinFailures)
	}
}
