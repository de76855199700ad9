package gatekeeper

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
)

// A room with a door (an invite or a proof of work): the gate joins nobody
// past it, and sends the visitor to the waiting page, whose door asks.
func TestGateLeavesTheDoorToThePage(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*waitroom.RoomConfig)
	}{
		{"invite_only", func(c *waitroom.RoomConfig) { c.InviteOnly = true }},
		{"pow", func(c *waitroom.RoomConfig) { c.Challenge = waitroom.ChallengePoW }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := waitroom.DefaultConfig()
			cfg.Capacity = 5
			tc.set(&cfg)
			e := newEnv(t, envConfig{room: cfg}) // its admission has a door
			h := e.gate.Middleware(waitroom.DefaultRoom)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusTeapot)
			}))
			req := httptest.NewRequest(http.MethodGet, "http://app.example/page", nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusSeeOther || !strings.Contains(rec.Header().Get("Location"), "/r/"+waitroom.DefaultRoom) {
				t.Fatalf("visitor without a pass: %d to %q, want 303 to the waiting page", rec.Code, rec.Header().Get("Location"))
			}
			if room, _ := e.mem.Room(context.Background(), waitroom.DefaultRoom); room.Waiting+room.Active != 0 {
				t.Fatalf("the gate made a session past the door: %d waiting, %d active", room.Waiting, room.Active)
			}
		})
	}
}
