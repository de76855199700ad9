package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/browsertest"
)

// TestBrowserDoor: in real Chromium, the page of a room that asks for proof
// of work solves the challenge in its Web Worker and joins by itself; an
// invite link joins an invite-only room, and on an open room with tiers it
// moves the visitor from the lowest tier into the invite's.
func TestBrowserDoor(t *testing.T) {
	s := newSite(t, siteOptions{})
	pow := config(0, "")
	pow.Challenge, pow.ChallengeMin, pow.ChallengeMax = waitroom.ChallengePoW, 50_000, 50_000
	s.room("pow", pow)
	tiered := config(0, "")
	tiered.Tiers = []waitroom.Tier{{Name: "presale"}, {Name: "general"}}
	s.room("drop", tiered)
	closed := tiered
	closed.InviteOnly = true
	s.room("members", closed)
	ctx := context.Background()
	now := time.Now()
	b := newBrowser(t)

	// Proof of work: the door, the worker, then the line.
	p := b.person("solver")
	p.navigate(s.srv.URL + "/r/pow")
	if !p.waitUntil(60*time.Second, `!!document.querySelector('[data-waitroom="position"]')`) {
		t.Fatalf("solver: still on %s after 60s: %q", p.path(), p.text("main"))
	}
	if got := p.text(`[data-waitroom="position"]`); got != "1" {
		t.Fatalf("solver: position %q, want 1", got)
	}
	var solved struct {
		MS        float64 `json:"ms"`
		Number    int64   `json:"number"`
		MaxNumber int64   `json:"maxnumber"`
	}
	if err := json.Unmarshal([]byte(mustEval[string](p, `sessionStorage.getItem('waitroom-pow') || '{}'`)), &solved); err != nil || solved.MaxNumber != 50_000 {
		t.Fatalf("solver: the worker's record %+v (%v), want a solution of a 50,000 challenge", solved, err)
	}
	t.Logf("Chromium solved a challenge of maxnumber %d (number %d) in %.0f ms", solved.MaxNumber, solved.Number, solved.MS)
	if r, _ := s.store.Room(ctx, "pow"); r.Waiting != 1 {
		t.Fatalf("room pow: %d waiting, want the solver alone", r.Waiting)
	}

	// An invite-only room: the link's fragment opens the door.
	toks, err := s.door.Issue(ctx, "members", 1, "presale", "", 1, now.Add(time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	m := b.person("member")
	m.navigate(s.srv.URL + "/r/members")
	if !m.waitUntil(5*time.Second, `!!document.getElementById('door-invite')`) {
		t.Fatalf("member: no invite form on the door of an invite-only room: %q", m.text("main"))
	}
	m = b.person("member with the link") // a link opens a new page, not a fragment change
	m.navigate(s.srv.URL + "/r/members#invite=" + toks[0])
	if !m.waitUntil(10*time.Second, `!!document.querySelector('[data-waitroom="tier"]')`) {
		t.Fatalf("member: not in line after opening the invite link: on %s, %q", m.path(), m.text("main"))
	}
	if got := m.text(`[data-waitroom="tier"]`); got != "You wait in the presale line." {
		t.Errorf("member: tier note %q", got)
	}
	if mustEval[bool](m, `location.hash !== ''`) {
		t.Errorf("member: the invite stayed in the address bar")
	}

	// An open room with tiers: a general visitor, then an invite link
	// moves its holder ahead.
	g := b.person("general")
	g.navigate(s.srv.URL + "/r/drop")
	if !g.waitUntil(5*time.Second, `document.getElementById("waitroom").dataset.live === "sse"`) || g.text(`[data-waitroom="position"]`) != "1" {
		t.Fatalf("general: position %q, want 1", g.text(`[data-waitroom="position"]`))
	}
	if got := g.text(`[data-waitroom="tier"]`); got != "You wait in the general line. People who join a higher tier go ahead of you, so your position can grow." {
		t.Errorf("general: tier note %q", got)
	}
	vipTok, err := s.door.Issue(ctx, "drop", 1, "presale", "", 1, now.Add(time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	v := b.person("vip")
	v.navigate(s.srv.URL + "/r/drop#invite=" + vipTok[0])
	if !v.waitUntil(10*time.Second, `(document.querySelector('[data-waitroom="tier"]')||{}).textContent === "You wait in the presale line."`) {
		t.Fatalf("vip: not moved into the presale tier: %q", v.text("main"))
	}
	if got := v.text(`[data-waitroom="position"]`); got != "1" {
		t.Errorf("vip: position %q, want 1", got)
	}
	if !g.waitUntil(10*time.Second, `document.querySelector('[data-waitroom="position"]').textContent === "2"`) {
		t.Errorf("general: position %q after a presale join, want 2", g.text(`[data-waitroom="position"]`))
	}
	if r, _ := s.store.Room(ctx, "drop"); r.Waiting != 2 {
		t.Errorf("room drop: %d waiting, want 2 (the vip's general place given up)", r.Waiting)
	}
	for _, who := range []*person{p, m, g, v} {
		if probs := who.consoleProblems(); len(probs) > 0 {
			t.Errorf("%s: console problems: %q", who.name, probs)
		}
	}
}

// TestBrowserPowSolveTimes measures how long real Chromium's worker takes
// to solve challenges at each difficulty (median and p90 of 15), for the
// README. It runs only with WAITROOM_POW_TIMES=1: figures, not a verdict.
func TestBrowserPowSolveTimes(t *testing.T) {
	if os.Getenv("WAITROOM_POW_TIMES") != "1" {
		t.Skip("set WAITROOM_POW_TIMES=1 to measure")
	}
	s := newSite(t, siteOptions{})
	b := newBrowser(t)
	p := b.person("timer")
	s.room("plain", config(0, ""))
	p.navigate(s.srv.URL + "/r/plain")
	for _, d := range []int64{20_000, 200_000, 2_000_000} {
		cfg := config(0, "")
		cfg.Challenge, cfg.ChallengeMin, cfg.ChallengeMax = waitroom.ChallengePoW, d, d
		room := fmt.Sprintf("pow%d", d)
		s.room(room, cfg)
		js := fmt.Sprintf(`(async () => {
			const w = new Worker(%q);
			const out = [];
			for (let i = 0; i < 15; i++) {
				const ch = await (await fetch('/v1/rooms/%s/challenge')).json();
				const t0 = performance.now();
				await new Promise((ok, bad) => { w.onmessage = e => { if (e.data.payload) ok(); if (e.data.error) bad(e.data.error); }; w.postMessage({challenge: ch}); });
				out.push(performance.now() - t0);
			}
			w.terminate();
			return JSON.stringify(out);
		})()`, "/waitroom/pow-worker.js", room)
		raw, err := browsertest.Eval[string](p.Tab, 5*time.Minute, js, chromedp.EvalAwaitPromise)
		if err != nil {
			t.Fatalf("difficulty %d: %v", d, err)
		}
		var ms []float64
		if err := json.Unmarshal([]byte(raw), &ms); err != nil {
			t.Fatal(err)
		}
		slices.Sort(ms)
		t.Logf("maxnumber %9d: median %6.0f ms, p90 %6.0f ms (15 solves)", d, ms[len(ms)/2], ms[len(ms)*9/10])
	}
}

// TestBrowserClientDoor: /waitroom.js on a page of the server's origin
// solves a room's proof of work in its worker and joins, and joins with an
// invite into the invite's tier; with solve: false the challenge reaches
// onError instead.
func TestBrowserClientDoor(t *testing.T) {
	s := newSite(t, siteOptions{})
	pow := config(0, "")
	pow.Challenge, pow.ChallengeMin, pow.ChallengeMax = waitroom.ChallengePoW, 20_000, 20_000
	s.room("powapi", pow)
	tiered := config(0, "")
	tiered.Tiers = []waitroom.Tier{{Name: "presale"}, {Name: "general"}}
	tiered.InviteOnly = true
	s.room("tierapi", tiered)
	ctx := context.Background()
	b := newBrowser(t)

	app := b.person("pow app")
	app.navigate(s.srv.URL + "/client-test/#room=powapi")
	if !app.waitUntil(20*time.Second, `calls.some(c => c[0] === "position" && c[2] === 1)`) {
		t.Fatalf("no onPosition(1) in the proof-of-work room; calls: %s", mustEval[string](app, `JSON.stringify(calls)`))
	}
	if !mustEval[bool](app, `calls.some(c => c[0] === "solved")`) {
		t.Errorf("onSolving never reported the solve done; calls: %s", mustEval[string](app, `JSON.stringify(calls)`))
	}

	toks, err := s.door.Issue(ctx, "tierapi", 1, "presale", "", 1, time.Now().Add(time.Hour), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	inv := b.person("invited app")
	inv.navigate(s.srv.URL + "/client-test/#room=tierapi&invite=" + toks[0])
	if !inv.waitUntil(10*time.Second, `calls.some(c => c[0] === "tier" && c[1] === "presale")`) {
		t.Fatalf("the invite did not join into presale; calls: %s", mustEval[string](inv, `JSON.stringify(calls)`))
	}
	// Without an invite, an invite-only room reports the refusal.
	no := b.person("uninvited app")
	no.navigate(s.srv.URL + "/client-test/#room=tierapi")
	if !no.waitUntil(10*time.Second, `calls.some(c => c[0] === "error")`) {
		t.Fatalf("no onError for an invite-only room without an invite; calls: %s", mustEval[string](no, `JSON.stringify(calls)`))
	}
	for _, room := range []string{"powapi", "tierapi"} {
		if r, _ := s.store.Room(ctx, room); r.Waiting != 1 {
			t.Errorf("room %s: %d waiting, want 1", room, r.Waiting)
		}
	}
}
