package httpapi_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/challenge"
	"github.com/waitroom/waitroom/internal/invite"
)

// invites makes invites through the admin API and returns their tokens.
func (e *env) invites(room, body string) []string {
	e.t.Helper()
	ans := e.must(http.StatusCreated, withAdmin, "POST", "/v1/rooms/"+room+"/invites", body)
	var v struct {
		Invites []struct {
			Token string `json:"token"`
			Link  string `json:"link"`
		} `json:"invites"`
	}
	if err := json.Unmarshal(ans.body, &v); err != nil {
		e.t.Fatalf("decoding invites %s: %v", ans.body, err)
	}
	var out []string
	for _, i := range v.Invites {
		if i.Link != "/r/"+room+"#invite="+i.Token {
			e.t.Fatalf("invite link %q, want the page with the token in the fragment", i.Link)
		}
		out = append(out, i.Token)
	}
	return out
}

func joinBody(fields map[string]string) string {
	b, _ := json.Marshal(fields)
	return string(b)
}

// TestInvites checks invite-only rooms, tiers by invite, use counts and
// every way an invite is refused, each with its own code and no session.
func TestInvites(t *testing.T) {
	e := newEnv(t)
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	cfg := fmt.Sprintf(`{"capacity":0,"invite_only":true,"tiers":[{"name":"presale"},{"name":"general"}],"invite_keys":[%q]}`,
		base64.StdEncoding.EncodeToString(pub))
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/vip", cfg)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/other", cfg)

	wantError(t, e.do(noAuth, "POST", "/v1/rooms/vip/sessions", ""), http.StatusForbidden, waitroom.CodeInviteRequired)
	toks := e.invites("vip", `{"count":2,"tier":"presale","uses":2,"expiry":"1h"}`)
	if len(toks) != 2 || toks[0] == toks[1] {
		t.Fatalf("invites = %q, want two different tokens", toks)
	}
	g := e.invites("vip", `{}`)[0] // one use, the lowest tier
	a := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/vip/sessions", joinBody(map[string]string{"invite": g})))
	b := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/vip/sessions", joinBody(map[string]string{"invite": toks[0]})))
	if a.Tier != "general" || b.Tier != "presale" || b.Position != 1 {
		t.Fatalf("joins: general tier %q, presale tier %q at %d; want general, presale at 1", a.Tier, b.Tier, b.Position)
	}
	e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/vip/sessions", joinBody(map[string]string{"invite": toks[0]}))
	wantError(t, e.do(noAuth, "POST", "/v1/rooms/vip/sessions", joinBody(map[string]string{"invite": toks[0]})), http.StatusConflict, waitroom.CodeInviteUsed)
	wantError(t, e.do(noAuth, "POST", "/v1/rooms/vip/sessions", joinBody(map[string]string{"invite": g})), http.StatusConflict, waitroom.CodeInviteUsed)
	wantError(t, e.do(noAuth, "POST", "/v1/rooms/other/sessions", joinBody(map[string]string{"invite": toks[1]})), http.StatusForbidden, waitroom.CodeInviteWrongRoom)
	// One character changed well inside the signature, where every bit
	// counts: the last character may carry only padding bits, and a token
	// ending in "AA" already made an "AA" ending no change (a 1 in 4,096
	// failure under the CPU hog runs).
	i := len(toks[1]) - 5
	swap := byte('A')
	if toks[1][i] == 'A' {
		swap = 'B'
	}
	tampered := toks[1][:i] + string(swap) + toks[1][i+1:]
	wantError(t, e.do(noAuth, "POST", "/v1/rooms/vip/sessions", joinBody(map[string]string{"invite": tampered})), http.StatusForbidden, waitroom.CodeInviteInvalid)
	wantError(t, e.do(noAuth, "POST", "/v1/rooms/vip/sessions", joinBody(map[string]string{"invite": "junk"})), http.StatusForbidden, waitroom.CodeInviteInvalid)

	// Minted offline with the operator's key, with a key of its own.
	off, err := invite.SignEd25519(invite.Claims{Room: "vip", ID: "offline-1", Tier: "presale", Key: "member-42", Expires: e.clock.Now().Add(time.Hour)}, priv)
	if err != nil {
		t.Fatal(err)
	}
	c := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/vip/sessions", joinBody(map[string]string{"invite": off})))
	if c.Key != "member-42" || c.Tier != "presale" {
		t.Fatalf("offline invite joined as key %q tier %q, want member-42 presale", c.Key, c.Tier)
	}
	expired, _ := invite.SignEd25519(invite.Claims{Room: "vip", ID: "offline-2", Expires: e.clock.Now().Add(time.Second)}, priv)
	e.clock.Advance(2 * time.Second)
	wantError(t, e.do(noAuth, "POST", "/v1/rooms/vip/sessions", joinBody(map[string]string{"invite": expired})), http.StatusForbidden, waitroom.CodeInviteExpired)
	// An invite for a tier the room lacks.
	bad, _ := invite.SignEd25519(invite.Claims{Room: "vip", ID: "offline-3", Tier: "gold", Expires: e.clock.Now().Add(time.Hour)}, priv)
	wantError(t, e.do(noAuth, "POST", "/v1/rooms/vip/sessions", joinBody(map[string]string{"invite": bad})), http.StatusForbidden, waitroom.CodeInviteInvalid)
	if r, _ := e.store.Room(context.Background(), "vip"); r.Waiting != 4 {
		t.Fatalf("%d wait, want 4: refused invites must make no session", r.Waiting)
	}
	// Bad requests to the invites endpoint.
	for _, body := range []string{`{"count":1001}`, `{"uses":-1}`, `{"expiry":"-1h"}`, `{"expiry":"400d"}`, `{"expiry":12}`, `{"tier":"gold"}`, `{"count":2,"key":"k"}`, `{"nope":1}`} {
		ans := e.do(withAdmin, "POST", "/v1/rooms/vip/invites", body)
		if ans.status != http.StatusBadRequest {
			t.Errorf("POST invites %s = %d %s, want 400", body, ans.status, ans.body)
		}
	}
	wantError(t, e.do(noAuth, "POST", "/v1/rooms/vip/invites", `{}`), http.StatusUnauthorized, waitroom.CodeUnauthorized)
}

// TestChallenge checks the proof-of-work door: 428 with a challenge, a
// solved one joins once, and replayed, other-room, expired and tampered
// solutions get their own codes and no session.
func TestChallenge(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/pow", `{"capacity":0,"challenge":"pow","challenge_min":1000,"challenge_max":2000}`)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/pow2", `{"capacity":0,"challenge":"pow","challenge_min":1000,"challenge_max":2000}`)
	ans := e.do(noAuth, "POST", "/v1/rooms/pow/sessions", "")
	wantError(t, ans, http.StatusPreconditionRequired, waitroom.CodeChallengeRequired)
	var body struct {
		Challenge challenge.Challenge `json:"challenge"`
	}
	if err := json.Unmarshal(ans.body, &body); err != nil || body.Challenge.Signature == "" || body.Challenge.MaxNumber != 1000 {
		t.Fatalf("428 body %s: want a challenge with maxnumber 1000 (%v)", ans.body, err)
	}
	sol, err := challenge.Solve(context.Background(), body.Challenge)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, e.do(noAuth, "POST", "/v1/rooms/pow2/sessions", joinBody(map[string]string{"challenge": sol})), http.StatusBadRequest, waitroom.CodeChallengeWrongRoom)
	e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/pow/sessions", joinBody(map[string]string{"challenge": sol}))
	wantError(t, e.do(noAuth, "POST", "/v1/rooms/pow/sessions", joinBody(map[string]string{"challenge": sol})), http.StatusConflict, waitroom.CodeChallengeUsed)
	wantError(t, e.do(noAuth, "POST", "/v1/rooms/pow/sessions", joinBody(map[string]string{"challenge": strings.Repeat("A", 2000)})), http.StatusBadRequest, waitroom.CodeChallengeInvalid)
	// The challenge endpoint, and expiry.
	var ch challenge.Challenge
	if err := json.Unmarshal(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/pow/challenge", "").body, &ch); err != nil {
		t.Fatal(err)
	}
	late, _ := challenge.Solve(context.Background(), ch)
	e.clock.Advance(time.Hour)
	ans = e.do(noAuth, "POST", "/v1/rooms/pow/sessions", joinBody(map[string]string{"challenge": late}))
	wantError(t, ans, http.StatusPreconditionRequired, waitroom.CodeChallengeExpired)
	if !strings.Contains(string(ans.body), `"challenge":{`) {
		t.Fatalf("challenge_expired answer %s carries no fresh challenge", ans.body)
	}
	wantError(t, e.do(noAuth, "GET", "/v1/rooms/pow-none/challenge", ""), http.StatusNotFound, waitroom.CodeRoomNotFound)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/open", `{}`)
	wantError(t, e.do(noAuth, "GET", "/v1/rooms/open/challenge", ""), http.StatusNotFound, waitroom.CodeNotFound)
	if r, _ := e.store.Room(context.Background(), "pow"); r.Waiting != 1 {
		t.Fatalf("%d wait, want 1", r.Waiting)
	}
	// An invite holder skips the puzzle.
	tok := e.invites("pow", `{}`)[0]
	e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/pow/sessions", joinBody(map[string]string{"invite": tok}))
}

// TestKeyedInviteNamesNobody checks that a copy of a keyed invite link
// cannot reach its holder's session: spent, it answers 409 invite_used;
// with uses left, 409 already_joined without the session. Only the holder
// (its session cookie) and a trusted backend (the admin token) get the
// live session back.
func TestKeyedInviteNamesNobody(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/k", `{"capacity":0}`)
	// Spent: one use, taken by its holder.
	once := e.invites("k", `{"key":"alice"}`)[0]
	alice := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/k/sessions", joinBody(map[string]string{"invite": once})))
	ans := e.do(noAuth, "POST", "/v1/rooms/k/sessions", joinBody(map[string]string{"invite": once}))
	wantError(t, ans, http.StatusConflict, waitroom.CodeInviteUsed)
	wantNoID(t, "second claimant of a spent keyed invite", ans, alice.ID)

	// Uses left: the key's place is taken, and not handed out.
	twice := e.invites("k", `{"key":"bob","uses":2}`)[0]
	bob := e.session(e.must(http.StatusCreated, noAuth, "POST", "/v1/rooms/k/sessions", joinBody(map[string]string{"invite": twice})))
	ans = e.do(noAuth, "POST", "/v1/rooms/k/sessions", joinBody(map[string]string{"invite": twice}))
	wantError(t, ans, http.StatusConflict, waitroom.CodeAlreadyJoined)
	wantNoID(t, "second claimant of a keyed invite with a use left", ans, bob.ID)
	// Another session's cookie proves nothing.
	ans = e.joinWithCookie("k", twice, alice.ID)
	wantError(t, ans, http.StatusConflict, waitroom.CodeAlreadyJoined)
	wantNoID(t, "a claimant holding another session's cookie", ans, bob.ID)
	// The holder, by its cookie, gets its own place back.
	ans = e.joinWithCookie("k", twice, bob.ID)
	wantError(t, ans, http.StatusConflict, waitroom.CodeAlreadyJoined)
	if !strings.Contains(string(ans.body), bob.ID) {
		t.Fatalf("the holder's own claim = %s, want its session", ans.body)
	}
	// A trusted backend joining with the key gets the live session.
	ans = e.do(withAdmin, "POST", "/v1/rooms/k/sessions", `{"key":"bob"}`)
	wantError(t, ans, http.StatusConflict, waitroom.CodeAlreadyJoined)
	if !strings.Contains(string(ans.body), bob.ID) {
		t.Fatalf("a trusted keyed join = %s, want the live session", ans.body)
	}
	// Nobody lost a place, and the refusals spent nothing.
	for _, s := range []waitroom.Session{alice, bob} {
		if got := e.session(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/k/sessions/"+s.ID, "")); got.Status != waitroom.StatusWaiting {
			t.Fatalf("%s after the refused claims: %s, want waiting", s.Key, got.Status)
		}
	}
	if r, _ := e.store.Room(context.Background(), "k"); r.Waiting != 2 {
		t.Fatalf("%d wait, want 2: refused claims make no session", r.Waiting)
	}
}

// joinWithCookie joins room with invite and the waiting page's session
// cookie holding id.
func (e *env) joinWithCookie(room, invite, id string) answer {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+"/v1/rooms/"+room+"/sessions", strings.NewReader(joinBody(map[string]string{"invite": invite})))
	if err != nil {
		e.t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: "waitroom-sid-" + room, Value: id})
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// wantNoID fails unless ans names no session: no "session" member, and
// neither the id nor its secret half anywhere in it.
func wantNoID(t *testing.T, what string, ans answer, id string) {
	t.Helper()
	var v map[string]json.RawMessage
	if err := json.Unmarshal(ans.body, &v); err != nil || v["error"] == nil {
		t.Fatalf("%s: %s is not an error: %v", what, ans.body, err)
	}
	if _, ok := v["session"]; ok || strings.Contains(string(ans.body), id[11:]) {
		t.Fatalf("%s: the answer %s names the holder's session %s", what, ans.body, id)
	}
}

// TestChallengeDifficultyNotForgeable is the security review's reproduction:
// a solution made at difficulty 20,000 is refused once the room's minimum
// is 1,000,000, and resending it with the number's leading digits moved
// onto the end of the salt (max=20000, number 19664 hash the same as
// max=200001966, number 4) must be refused too, not join.
func TestChallengeDifficultyNotForgeable(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/pow", `{"capacity":0,"challenge":"pow","challenge_min":20000,"challenge_max":20000}`)
	var ch challenge.Challenge
	var sol struct {
		Algorithm string `json:"algorithm"`
		Challenge string `json:"challenge"`
		Number    int64  `json:"number"`
		Salt      string `json:"salt"`
		Signature string `json:"signature"`
	}
	for sol.Number < 100 { // three digits or more: two to move, one to leave
		if err := json.Unmarshal(e.must(http.StatusOK, noAuth, "GET", "/v1/rooms/pow/challenge", "").body, &ch); err != nil {
			t.Fatal(err)
		}
		p, err := challenge.Solve(context.Background(), ch)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := base64.StdEncoding.DecodeString(p)
		if err := json.Unmarshal(raw, &sol); err != nil {
			t.Fatal(err)
		}
	}
	e.must(http.StatusOK, withAdmin, "PUT", "/v1/rooms/pow", `{"capacity":0,"challenge":"pow","challenge_min":1000000,"challenge_max":2000000}`)
	honest, _ := json.Marshal(sol)
	wantError(t, e.do(noAuth, "POST", "/v1/rooms/pow/sessions", joinBody(map[string]string{"challenge": string(honest)})),
		http.StatusPreconditionRequired, waitroom.CodeChallengeExpired)

	digits := strconv.FormatInt(sol.Number, 10)
	forged := sol
	forged.Salt += digits[:len(digits)-1]
	forged.Number, _ = strconv.ParseInt(digits[len(digits)-1:], 10, 64)
	b, _ := json.Marshal(forged)
	ans := e.do(noAuth, "POST", "/v1/rooms/pow/sessions", joinBody(map[string]string{"challenge": string(b)}))
	wantError(t, ans, http.StatusPreconditionRequired, waitroom.CodeChallengeExpired)
	if r, _ := e.store.Room(context.Background(), "pow"); r.Waiting != 0 {
		t.Fatalf("%d waiting after the forged solution (salt %q, number %d), want 0", r.Waiting, forged.Salt, forged.Number)
	}
}
