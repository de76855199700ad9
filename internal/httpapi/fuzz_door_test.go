package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// FuzzDoorJoinBody sends any join body to an invite-only room with proof of
// work: without a real invite nothing gets in, the answer is one of the
// documented refusals, and no session is ever made.
func FuzzDoorJoinBody(f *testing.F) {
	for _, s := range []string{"", "{}", `{"invite":""}`, `{"invite":"wr1.e30.AA"}`, `{"challenge":"e30="}`, `{"challenge":"{}"}`,
		`{"invite":"wr1.` + strings.Repeat("A", 3000) + `.x"}`, `{"invite":1}`, `{"challenge":null}`, `{"key":"k","invite":"x"}`,
		`{"challenge":"eyJhbGdvcml0aG0iOiJTSEEtMjU2In0="}`, "\xff", `{"invite":"wr1.eyJhbGciOiJocyJ9.AAAA"}`,
		`{"contact":"c","invite":"x"}`, `{"contact":""}`} {
		f.Add([]byte(s))
	}
	e := newEnv(f)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/d", `{"capacity":0,"waiting_timeout":"0s","invite_only":true,"challenge":"pow"}`)
	f.Fuzz(func(t *testing.T, body []byte) {
		h := e.checkedBy(t)
		rec := serve(h, "POST", "/v1/rooms/d/sessions", "", string(body))
		checkAnswer(t, "join", rec)
		switch rec.Code {
		case 400, 401, 403, 409, 413, 428:
		default:
			t.Fatalf("join %q: got %d %s, want a refusal", body, rec.Code, rec.Body.Bytes())
		}
		if n := waitingCount(t, e, "d"); n != 0 {
			t.Fatalf("join %q: %d waiting, want nobody", body, n)
		}
	})
}

// FuzzInvitesBody sends any body to the invites endpoint: 201 with as many
// invites as asked (1 when not said), or a documented error.
func FuzzInvitesBody(f *testing.F) {
	for _, s := range []string{"", "{}", `{"count":3}`, `{"count":0}`, `{"count":1001}`, `{"expiry":"1h"}`, `{"expiry":"2031-01-01T00:00:00Z"}`,
		`{"expiry":"1ms"}`, `{"expiry":5}`, `{"tier":"vip"}`, `{"tier":"nope"}`, `{"key":"k","count":1}`, `{"key":"\u0000"}`, `{"uses":1000001}`, "\xff"} {
		f.Add([]byte(s))
	}
	e := newEnv(f)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/i", `{"tiers":[{"name":"vip"},{"name":"general"}]}`)
	f.Fuzz(func(t *testing.T, body []byte) {
		h := e.checkedBy(t)
		rec := serve(h, "POST", "/v1/rooms/i/invites", authHeader(true), string(body))
		checkAnswer(t, "invites", rec)
		switch rec.Code {
		case 201:
			var v struct {
				Invites []struct {
					Token string `json:"token"`
				} `json:"invites"`
			}
			var req struct {
				Count int `json:"count"`
			}
			_ = json.Unmarshal(body, &req)
			want := max(req.Count, 1)
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || len(v.Invites) != want {
				t.Fatalf("invites %q: 201 with %d invites (%v), want %d", body, len(v.Invites), err, want)
			}
		case 400, 413:
		default:
			t.Fatalf("invites %q: got %d, want 201, 400 or 413", body, rec.Code)
		}
	})
}
