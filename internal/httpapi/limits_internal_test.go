package httpapi

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/door"
	"github.com/waitroom/waitroom/internal/roomview"
	"github.com/waitroom/waitroom/memstore"
)

// TestSlowBodyIsCutOff: a client that sends its headers and then trickles
// (here: stops) its body gets 400 once bodyReadTimeout passes, instead of
// holding the connection for as long as it likes.
func TestSlowBodyIsCutOff(t *testing.T) {
	old := bodyReadTimeout
	bodyReadTimeout = 300 * time.Millisecond
	t.Cleanup(func() { bodyReadTimeout = old })
	st := memstore.New()
	defer st.Close()
	rooms := roomview.New(roomview.Config{Store: st})
	dr := door.New(rooms, []byte("the slow body test's door secret, 32+ bytes"))
	defer rooms.Close()
	h := NewHandler(Config{Store: st, AdminToken: "t", Admit: admit.New(admit.Config{Store: st, Door: dr})})
	req := httptest.NewRequest("PUT", "/v1/rooms/r", nil)
	req.Header.Set("Authorization", "Bearer t")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("PUT room: got %d", rec.Code)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	for _, path := range []string{"/v1/rooms/r/sessions", "/v1/rooms/r/sessions/" + waitroom.NewSessionID(1).String() + "/away"} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: waitroom.test\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			conn.Close()
			t.Fatalf("POST %s with a stalled body: %v after %v, want an answer", path, err, time.Since(start))
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		// The join cannot finish a body it never got: 400. Away ignores its
		// body, so it goes on to answer for the (unknown) session.
		if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusNotFound {
			t.Fatalf("POST %s with a stalled body: got %d %s, want 400 (or 404 for away)", path, resp.StatusCode, body)
		}
		if strings.HasSuffix(path, "/sessions") && !strings.Contains(string(body), `"invalid_request"`) {
			t.Fatalf("join with a stalled body: %s, want invalid_request", body)
		}
		t.Logf("POST %s: %d after %v", path, resp.StatusCode, time.Since(start).Round(time.Millisecond))
	}
}
