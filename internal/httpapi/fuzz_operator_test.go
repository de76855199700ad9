package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/waitroom/waitroom"
)

// FuzzFrontBody sends any body to a move to the front: the answer is 200
// with the session at position 1, or an error of the documented shape; the
// line keeps every session either way.
func FuzzFrontBody(f *testing.F) {
	for _, s := range []string{"", "{}", `{"reason":"x"}`, `{"reason":""}`, `{"reason":" "}`, `{"reason":1}`, `{"reason":"a\u0007"}`,
		`{"reason":"\u202e"}`, `{"reason":"x","by":"1m"}`, `{"reason":"x"}{}`, `[]`, "\xff", `{"reason":"` + string(make([]byte, 600)) + `"}`} {
		f.Add([]byte(s))
	}
	e := newEnv(f)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/f", `{"capacity":0,"waiting_timeout":"0s"}`)
	target := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/f/sessions", ""))
	f.Fuzz(func(t *testing.T, body []byte) {
		h := e.checkedBy(t)
		serve(h, "POST", "/v1/rooms/f/sessions", "", "")
		before := waitingCount(t, e, "f")
		rec := serve(h, "POST", "/v1/rooms/f/sessions/"+target.ID+"/front", authHeader(true), string(body))
		checkAnswer(t, "front", rec)
		switch rec.Code {
		case 200:
			var s waitroom.Session
			if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil || s.Position != 1 || s.ID != target.ID {
				t.Fatalf("front %q: 200 with %s (%v), want the session at position 1", body, rec.Body.Bytes(), err)
			}
		case 400, 413:
		default:
			t.Fatalf("front %q: got %d, want 200, 400 or 413", body, rec.Code)
		}
		if after := waitingCount(t, e, "f"); after != before {
			t.Fatalf("front %q: %d waiting before, %d after", body, before, after)
		}
	})
}

// FuzzExtendBody sends any body to an extension of an active session: 200
// with extended grown by exactly "by", or a documented error and nothing
// changed.
func FuzzExtendBody(f *testing.F) {
	for _, s := range []string{"", "{}", `{"by":"1m"}`, `{"by":"0s"}`, `{"by":"-1s"}`, `{"by":"1us"}`, `{"by":60}`, `{"by":"8784h"}`,
		`{"by":"8785h"}`, `{"by":"1001us"}`, `{"BY":"1.5ms"}`, `{"by":"1m","reason":"x"}`, `{"by":"1m","reason":1}`, `{"by":null}`, `{"by":"1m"}{}`, "\xff", `{"by":"1h1h1h1h1h"}`} {
		f.Add([]byte(s))
	}
	e := newEnv(f)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/x", `{"capacity":1,"waiting_timeout":"0s","active_timeout":"0s","max_session":"1h"}`)
	active := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/x/sessions", ""))
	f.Fuzz(func(t *testing.T, body []byte) {
		h := e.checkedBy(t)
		read := func() waitroom.Session {
			var s waitroom.Session
			if err := json.Unmarshal(serve(h, "GET", "/v1/rooms/x/sessions/"+active.ID, "", "").Body.Bytes(), &s); err != nil || s.Status != waitroom.StatusActive {
				t.Fatalf("reading the active session: %+v %v", s, err)
			}
			return s
		}
		before := read()
		rec := serve(h, "POST", "/v1/rooms/x/sessions/"+active.ID+"/extend", authHeader(true), string(body))
		checkAnswer(t, "extend", rec)
		after := read()
		switch rec.Code {
		case 200:
			var req struct {
				By waitroom.Duration `json:"by"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				t.Fatalf("extend %q: 200 for a body that is not JSON: %v", body, err)
			}
			if after.Extended != before.Extended+req.By.D() {
				t.Fatalf("extend %q: extended %s → %s, want +%s", body, before.Extended, after.Extended, req.By)
			}
		case 400, 413:
			if after.Extended != before.Extended {
				t.Fatalf("extend %q refused with %d, yet extended %s → %s", body, rec.Code, before.Extended, after.Extended)
			}
		default:
			t.Fatalf("extend %q: got %d, want 200, 400 or 413", body, rec.Code)
		}
	})
}

// FuzzFindQuery sends any q to find: 200 with only sessions that match it
// (by ticket, key or id prefix), or a documented 400.
func FuzzFindQuery(f *testing.F) {
	for _, s := range []string{"1", "#1", "-1", "0", "k", "AAAAAAAAAAB", "AAAAAAAAAAA", "99999999999999999999", "\x00", "\u202e", " 1", "1e3", "%", "+1", "#+1", "01"} {
		f.Add(s)
	}
	e := newEnv(f)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/q", `{"capacity":1,"waiting_timeout":"0s","active_timeout":"0s"}`)
	for _, key := range []string{"k", "1", "AAAAAAAAAAB"} {
		e.must(http.StatusCreated, withAdmin, "POST", "/v1/rooms/q/sessions", `{"key":"`+key+`"}`)
	}
	f.Fuzz(func(t *testing.T, q string) {
		h := e.checkedBy(t)
		rec := serve(h, "GET", "/v1/rooms/q/find?q="+url.QueryEscape(q), authHeader(true), "")
		checkAnswer(t, "find", rec)
		switch rec.Code {
		case 200:
			var v struct {
				Sessions []waitroom.Session `json:"sessions"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
				t.Fatalf("find %q: %v", q, err)
			}
			for _, s := range v.Sessions {
				if s.Key != q && !matchesTicket(q, s.Ticket) && (len(q) < 11 || s.ID[:min(len(q), len(s.ID))] != q) {
					t.Fatalf("find %q found #%d (key %q, id %.11s…), which it does not name", q, s.Ticket, s.Key, s.ID)
				}
			}
		case 400:
		default:
			t.Fatalf("find %q: got %d, want 200 or 400", q, rec.Code)
		}
	})
}

func matchesTicket(q string, ticket int64) bool {
	var n int64
	if len(q) > 0 && q[0] == '#' {
		q = q[1:]
	}
	if q == "" || len(q) > 19 {
		return false
	}
	for _, c := range q {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int64(c-'0')
	}
	return n == ticket
}

func waitingCount(t *testing.T, e *env, room string) int {
	t.Helper()
	var rooms struct {
		Rooms []waitroom.Room `json:"rooms"`
	}
	if err := json.Unmarshal(serve(e.checkedBy(t), "GET", "/v1/rooms", authHeader(true), "").Body.Bytes(), &rooms); err != nil {
		t.Fatal(err)
	}
	for _, r := range rooms.Rooms {
		if r.Name == room {
			return r.Waiting
		}
	}
	t.Fatalf("room %q not listed", room)
	return 0
}
