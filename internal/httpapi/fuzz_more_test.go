package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/waitroom/waitroom"
)

// FuzzAdvanceBody sends any body to advance in a manual room: the answer is
// 200 with at most n served sessions, or an error of the documented shape,
// and the room keeps its invariants.
func FuzzAdvanceBody(f *testing.F) {
	for _, s := range []string{"", "{}", `{"n":1}`, `{"n":0}`, `{"n":-1}`, `{"n":10000}`, `{"n":10001}`, `{"n":1e30}`, `{"n":"2"}`,
		`{"n":1.5}`, `{"n":null}`, `{"count":1}`, `{"n":1}{"n":2}`, `[1]`, "\xff"} {
		f.Add([]byte(s))
	}
	e := newEnv(f)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/m", `{"mode":"manual","waiting_timeout":"0s"}`)
	f.Fuzz(func(t *testing.T, body []byte) {
		h := e.checkedBy(t)
		serve(h, "POST", "/v1/rooms/m/sessions", "", "")
		rec := serve(h, "POST", "/v1/rooms/m/advance", authHeader(true), string(body))
		checkAnswer(t, "advance", rec)
		switch rec.Code {
		case 200:
			var v struct {
				Sessions []waitroom.Session `json:"sessions"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || len(v.Sessions) == 0 || len(v.Sessions) > waitroom.MaxAdvance {
				t.Fatalf("advance %q: 200 with %s (%v)", body, rec.Body.Bytes(), err)
			}
			for _, s := range v.Sessions {
				if s.Status != waitroom.StatusServed {
					t.Fatalf("advance %q in a manual room: session %d is %s, want served", body, s.Ticket, s.Status)
				}
			}
		case 400, 404, 413:
		default:
			t.Fatalf("advance %q: got %d, want 200, 400, 404 or 413", body, rec.Code)
		}
	})
}

// FuzzInventoryBody sends any body to the inventory of a room with stock:
// the answer is 200 or a documented error, and whatever happens, sold +
// reserved + remaining stays the inventory and reserved never goes below 0.
func FuzzInventoryBody(f *testing.F) {
	for _, s := range []string{"", "{}", `{"sold":1}`, `{"released":1}`, `{"set":10}`, `{"set":0}`, `{"sold":-1}`, `{"set":1000000001}`,
		`{"sold":1,"released":1}`, `{"sold":1e30}`, `{"sold":"1"}`, `{"session":"x","sold":1}`, `{"sold":null}`, `{"sold":1}{"sold":1}`, "\xff"} {
		f.Add([]byte(s))
	}
	e := newEnv(f)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/s", `{"capacity":3,"inventory":5,"waiting_timeout":"0s"}`)
	f.Fuzz(func(t *testing.T, body []byte) {
		h := e.checkedBy(t)
		serve(h, "POST", "/v1/rooms/s/sessions", "", "")
		rec := serve(h, "POST", "/v1/rooms/s/inventory", authHeader(true), string(body))
		checkAnswer(t, "inventory", rec)
		switch rec.Code {
		case 200, 400, 404, 409, 413:
		default:
			t.Fatalf("inventory %q: got %d, want 200, 400, 404, 409 or 413", body, rec.Code)
		}
		var r waitroom.Room
		rooms := struct {
			Rooms []waitroom.Room `json:"rooms"`
		}{}
		if err := json.Unmarshal(serve(h, "GET", "/v1/rooms", authHeader(true), "").Body.Bytes(), &rooms); err != nil {
			t.Fatalf("list rooms: %v", err)
		}
		for _, x := range rooms.Rooms {
			if x.Name == "s" {
				r = x
			}
		}
		if r.Inventory == nil || r.Remaining == nil || r.Reserved < 0 || *r.Remaining < 0 || r.Sold+r.Reserved+*r.Remaining != *r.Inventory {
			t.Fatalf("after inventory %q: sold %d reserved %d remaining %v inventory %v", body, r.Sold, r.Reserved, r.Remaining, r.Inventory)
		}
	})
}
