package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
)

// admin sends an admin API request with a JSON body, fails the test
// unless the answer is one of ok, and returns the answer's body.
func (s *site) admin(method, path, body string, ok ...int) []byte {
	s.t.Helper()
	req, err := http.NewRequest(method, s.srv.URL+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := s.srv.Client().Do(req)
	if err != nil {
		s.t.Fatalf("%s %s %s: %v", method, path, body, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if !slices.Contains(ok, res.StatusCode) {
		s.t.Fatalf("%s %s %s: status %d, body %s", method, path, body, res.StatusCode, b)
	}
	return b
}

// putRoom configures a room through the admin API, as an operator would.
func (s *site) putRoom(name string, cfg waitroom.RoomConfig) {
	s.t.Helper()
	body, err := json.Marshal(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	s.admin(http.MethodPut, "/v1/rooms/"+name, string(body), http.StatusOK, http.StatusCreated)
}

// drop returns a room of the given capacity and target that opens at opens.
func drop(capacity int, target string, opens time.Time) waitroom.RoomConfig {
	c := config(capacity, target)
	c.OpensAt = opens
	return c
}

// joinN puts n more sessions in room.
func (s *site) joinN(room string, n int) {
	s.t.Helper()
	for range n {
		if _, err := s.store.Join(context.Background(), room, "", time.Now()); err != nil {
			s.t.Fatalf("Join %s: %v", room, err)
		}
	}
}

// The countdown of a page rendered right after the room was put an hour
// ahead: a second or so may pass on a busy machine.
var (
	hourCountdownRE = regexp.MustCompile(`^(1:00:00|59:[0-5]\d)$`)
	hourAnnounceRE  = regexp.MustCompile(`^The line opens in (60|59) minutes\.$`)
)

func TestDropPreQueuePage(t *testing.T) {
	s := newSite(t, siteOptions{})
	opens := time.Now().Add(time.Hour).Truncate(time.Millisecond).UTC()
	s.putRoom("drop", drop(0, "/target/", opens))
	s.joinN("drop", 1233)
	v := s.visitor()
	r := s.get(v, "/r/drop")
	if r.status != http.StatusOK {
		t.Fatalf("pre-queue page: status %d, want 200:\n%s", r.status, r.body)
	}
	id := s.cookie(v, admit.CookieName("drop"))
	if sid, err := waitroom.ParseSessionID(id); err != nil || sid.Entry == 0 {
		t.Fatalf("the page's session %q (%+v, %v) is not a pre-queue entry", id, sid, err)
	}
	if got := between(r.body, `data-waitroom="countdown">`, "<"); !hourCountdownRE.MatchString(got) {
		t.Errorf("countdown %q, want about an hour (%s)", got, hourCountdownRE)
	}
	if got := between(r.body, "<title>", "</title>"); !strings.HasPrefix(got, "Opens in ") || !strings.HasSuffix(got, " · Waiting room") ||
		!hourCountdownRE.MatchString(strings.TrimSuffix(strings.TrimPrefix(got, "Opens in "), " · Waiting room")) {
		t.Errorf("title %q, want Opens in <countdown> · Waiting room", got)
	}
	if got := between(r.body, `data-waitroom="announce">`, "<"); !hourAnnounceRE.MatchString(got) {
		t.Errorf("announcement %q, want %s", got, hourAnnounceRE)
	}
	for _, want := range []string{
		`data-waitroom="entrants">1,234 people are in the draw<`,
		"You’re in the draw",
		`<a href="/v1/rooms/drop/draw">Check the draw</a>`,
		"in a random order that anyone can check. There is no need to hurry",
		`datetime="` + opens.Format(time.RFC3339) + `"`,
		`data-opens-at="` + strconv.FormatInt(opens.UnixMilli(), 10) + `"`,
		`<div data-waitroom="prequeue">`, `<div data-waitroom="line" hidden>`,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("pre-queue page lacks %s", want)
		}
	}
	if !refreshRE.MatchString(r.body) {
		t.Errorf("the pre-queue page does not reload itself without JavaScript")
	}
	// The page's link leads to the draw record, public and already
	// committed to the seed.
	rec := s.get(s.visitor(), "/v1/rooms/drop/draw")
	var d waitroom.DrawRecord
	if err := json.Unmarshal([]byte(rec.body), &d); rec.status != http.StatusOK || err != nil || len(d.Commitment) != 64 || d.Entrants != 1234 {
		t.Errorf("GET /v1/rooms/drop/draw: %d %s (%v), want 200 with a commitment and 1234 entrants", rec.status, rec.body, err)
	}

	// The same in German and French, as the 1,235th and 1,236th entrants.
	for _, tc := range []struct{ lang, heading, entrants string }{
		{"de", "Sie sind bei der Verlosung dabei", "1.235 Personen sind bei der Verlosung dabei"},
		{"fr", "Vous participez au tirage au sort", "1\u202f236 personnes participent au tirage"},
	} {
		r := s.get(s.visitor(), "/r/drop", "Accept-Language", tc.lang)
		if !strings.Contains(r.body, tc.heading) || !strings.Contains(r.body, `data-waitroom="entrants">`+tc.entrants+"<") {
			t.Errorf("%s pre-queue page lacks %q or %q", tc.lang, tc.heading, tc.entrants)
		}
	}

	// The draw (here: the operator clears opens_at) gives everyone a place;
	// the page then shows it, and says it was drawn.
	s.putRoom("drop", config(0, "/target/"))
	r = s.get(v, "/r/drop")
	if s.cookie(v, admit.CookieName("drop")) != id {
		t.Fatalf("after the draw the page gave the visitor a new session")
	}
	got, err := s.store.Session(context.Background(), "drop", id, time.Now())
	if err != nil || got.Position < 1 || got.Entry == "" {
		t.Fatalf("session after the draw: %+v, %v; want a position and an entry", got, err)
	}
	if pos := between(r.body, `data-waitroom="position">`, "<"); strings.ReplaceAll(pos, ",", "") != strconv.FormatInt(got.Position, 10) {
		t.Errorf("position after the draw %q, want %d", pos, got.Position)
	}
	for _, want := range []string{
		`<p class="drawn" data-waitroom="drawn">The draw is done: your place was drawn at random. <a href="/v1/rooms/drop/draw">`,
		`<div data-waitroom="prequeue" hidden>`, `<div data-waitroom="line">`,
		`<p class="note" data-waitroom="intro" hidden>`,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("page after the draw lacks %s", want)
		}
	}
	if strings.Contains(r.body, "data-opens-at") {
		t.Errorf("page after the draw still counts down")
	}
}

func TestDropClosedPage(t *testing.T) {
	s := newSite(t, siteOptions{})
	cfg := config(0, "")
	cfg.ClosesAt = time.Now().Add(time.Hour)
	s.putRoom("sale", cfg)
	early := s.visitor()
	if r := s.get(early, "/r/sale"); r.status != http.StatusOK {
		t.Fatalf("before closes_at: status %d, want 200", r.status)
	}
	closes := time.Now().Add(-time.Second).Truncate(time.Millisecond).UTC()
	cfg.ClosesAt = closes
	s.putRoom("sale", cfg)

	for _, tc := range []struct{ lang, heading, body string }{
		{"", "This line is closed", "The waiting room is no longer taking people."},
		{"de", "Diese Warteschlange ist geschlossen", "Der Warteraum nimmt niemanden mehr auf."},
		{"fr", "Cette file est fermée", "La salle d’attente n’accepte plus personne."},
	} {
		r := s.get(s.visitor(), "/r/sale", "Accept-Language", tc.lang)
		if r.status != http.StatusConflict {
			t.Errorf("%q: join after closes_at: status %d, want 409", tc.lang, r.status)
		}
		for _, want := range []string{"<h1>" + tc.heading + "</h1>", tc.body, closes.Format(time.RFC3339)} {
			if !strings.Contains(r.body, want) {
				t.Errorf("%q: closed page lacks %q (the store's message gives the time):\n%s", tc.lang, want, r.body)
			}
		}
		if strings.Contains(r.body, `http-equiv="refresh"`) || r.header.Get("Retry-After") != "" {
			t.Errorf("%q: the closed page retries; closing is for good", tc.lang)
		}
		if r.header.Get("Set-Cookie") != "" {
			t.Errorf("%q: a refused join set a cookie", tc.lang)
		}
	}
	// Joining again by the button is refused the same way.
	if r := s.do(s.visitor(), http.MethodPost, "/r/sale"); r.status != http.StatusConflict || !strings.Contains(r.body, "This line is closed") {
		t.Errorf("POST /r/sale after closes_at: %d, want 409 and the closed page", r.status)
	}
	// Those already in line keep their place.
	if r := s.get(early, "/r/sale"); r.status != http.StatusOK || between(r.body, `data-waitroom="position">`, "<") != "1" {
		t.Errorf("a visitor in line before closes_at: status %d, position %q; want 200 and still 1", r.status, between(r.body, `data-waitroom="position">`, "<"))
	}
}
