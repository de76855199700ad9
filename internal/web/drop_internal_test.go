package web

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

func TestCountdown(t *testing.T) {
	for _, tc := range []struct {
		lang string
		left time.Duration
		want string
	}{
		{"en", 0, "The draw is taking place…"},
		{"en", -time.Second, "The draw is taking place…"},
		{"de", 0, "Die Verlosung läuft …"},
		{"en", time.Millisecond, "0:01"},
		{"en", time.Second, "0:01"},
		{"en", time.Second + time.Millisecond, "0:02"},
		{"en", 59 * time.Second, "0:59"},
		{"en", time.Minute, "1:00"},
		{"en", 59*time.Minute + 59*time.Second, "59:59"},
		{"en", 59*time.Minute + 59*time.Second + time.Millisecond, "1:00:00"},
		{"en", 10*time.Hour + 2*time.Minute + 3*time.Second, "10:02:03"},
		{"en", 24 * time.Hour, "1 d 00:00:00"},
		{"en", 25*time.Hour + 4*time.Second, "1 d 01:00:04"},
		{"de", 50 * time.Hour, "2 Tg. 02:00:00"},
		{"fr", 72 * time.Hour, "3 j 00:00:00"},
		{"de", 1234 * 24 * time.Hour, "1.234 Tg. 00:00:00"},
	} {
		if got := pickLanguage(tc.lang).countdown(tc.left); got != tc.want {
			t.Errorf("%s countdown(%v) = %q, want %q", tc.lang, tc.left, got, tc.want)
		}
	}
}

func TestOpensIn(t *testing.T) {
	for _, tc := range []struct {
		lang string
		left time.Duration
		want string
	}{
		{"en", 0, "The draw is taking place…"},
		{"en", time.Millisecond, "The line opens in 1 minute."},
		{"en", time.Minute, "The line opens in 1 minute."},
		{"en", time.Minute + time.Second, "The line opens in 2 minutes."},
		{"en", 59*time.Minute + 30*time.Second, "The line opens in 60 minutes."},
		{"en", 119 * time.Minute, "The line opens in 119 minutes."},
		{"en", 119*time.Minute + time.Second, "The line opens in 2 hours."},
		{"en", 36 * time.Hour, "The line opens in 36 hours."},
		{"en", 47*time.Hour + 29*time.Minute, "The line opens in 47 hours."},
		{"en", 47*time.Hour + 30*time.Minute, "The line opens in 2 days."},
		{"en", 7 * 24 * time.Hour, "The line opens in 7 days."},
		{"de", time.Minute, "Die Warteschlange öffnet in 1 Minute."},
		{"de", 3 * time.Hour, "Die Warteschlange öffnet in 3 Stunden."},
		{"de", 3 * 24 * time.Hour, "Die Warteschlange öffnet in 3 Tagen."},
		{"fr", 30 * time.Second, "La file ouvre dans 1 minute."},
		{"fr", 5 * time.Minute, "La file ouvre dans 5 minutes."},
		{"fr", 3 * 24 * time.Hour, "La file ouvre dans 3 jours."},
	} {
		if got := pickLanguage(tc.lang).opensIn(tc.left); got != tc.want {
			t.Errorf("%s opensIn(%v) = %q, want %q", tc.lang, tc.left, got, tc.want)
		}
	}
}

func TestEntrants(t *testing.T) {
	for _, tc := range []struct {
		lang string
		n    int
		want string
	}{
		{"en", 0, "0 people are in the draw"},
		{"en", 1, "1 person is in the draw"},
		{"en", 1234, "1,234 people are in the draw"},
		{"de", 1, "1 Person ist bei der Verlosung dabei"},
		{"de", 1234, "1.234 Personen sind bei der Verlosung dabei"},
		{"fr", 0, "0 personne participe au tirage"},
		{"fr", 1234, "1\u202f234 personnes participent au tirage"},
	} {
		if got := pickLanguage(tc.lang).entrants(tc.n); got != tc.want {
			t.Errorf("%s entrants(%d) = %q, want %q", tc.lang, tc.n, got, tc.want)
		}
	}
}

// dropSessions returns a session in a pre-queue of a room opening at opens,
// and the same session once drawn to position 57.
func dropSessions(opens time.Time) (pre, drawn waitroom.Session) {
	pre = waitroom.Session{ID: "gAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAA", Room: "drop", Status: waitroom.StatusWaiting,
		Capacity: 100, JoinedAt: opens.Add(-2 * time.Hour), OpensAt: opens, Entrants: 1234, Entry: "s:AbCdEfGhIjKlMnOpQrStUv"}
	drawn = pre
	drawn.OpensAt, drawn.Entrants = time.Time{}, 0
	drawn.Ticket, drawn.Position, drawn.Waiting = 157, 57, 1134
	return pre, drawn
}

func renderBuiltin(t *testing.T, p *Page) string {
	t.Helper()
	var b strings.Builder
	if err := builtin.ExecuteTemplate(&b, "page.html", p); err != nil {
		t.Fatalf("page.html: %v", err)
	}
	return b.String()
}

func TestPreQueuePage(t *testing.T) {
	opens := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	pre, _ := dropSessions(opens)
	p := newPage(&english, pre, "", 10, opens.Add(-59*time.Minute), "n")
	for _, c := range []struct{ what, got, want string }{
		{"Countdown", p.Countdown, "59:00"},
		{"DocTitle", p.DocTitle, "Opens in 59:00 · Waiting room"},
		{"Announcement", p.Announcement, "The line opens in 59 minutes."},
		{"EntrantsText", p.EntrantsText, "1,234 people are in the draw"},
		{"OpensAt", p.OpensAt, "2030-01-01 00:00 UTC"},
		{"OpensAtISO", p.OpensAtISO, "2030-01-01T00:00:00Z"},
		{"DrawURL", p.DrawURL, "/v1/rooms/drop/draw"},
	} {
		if c.got != c.want {
			t.Errorf("pre-queue page: %s = %q, want %q", c.what, c.got, c.want)
		}
	}
	if !p.PreQueue || p.Drawn || p.Refresh != 10 {
		t.Errorf("pre-queue page: PreQueue %v Drawn %v Refresh %d, want true, false, 10", p.PreQueue, p.Drawn, p.Refresh)
	}
	data := string(p.Data)
	for _, want := range []string{`data-opens-at="` + strconv.FormatInt(opens.UnixMilli(), 10) + `"`,
		`data-t-title-opens-in="Opens in {time}"`, `data-t-announce-drawn="The draw is done."`, `data-t-day-other="{n} days"`} {
		if !strings.Contains(data, want) {
			t.Errorf("pre-queue page data lacks %s:\n%s", want, data)
		}
	}
	html := renderBuiltin(t, p)
	for _, want := range []string{
		`<h1 data-waitroom="heading">You’re in the draw</h1>`,
		`<div data-waitroom="prequeue">`, `<div data-waitroom="line" hidden>`,
		`role="timer" data-waitroom="countdown">59:00</span>`,
		`<time data-waitroom="opens-at" datetime="2030-01-01T00:00:00Z">2030-01-01 00:00 UTC</time>`,
		`data-waitroom="entrants">1,234 people are in the draw</p>`,
		`<a href="/v1/rooms/drop/draw">Check the draw</a>`,
		`aria-live="polite" aria-atomic="true" data-waitroom="announce">The line opens in 59 minutes.</p>`,
		`<title>Opens in 59:00 · Waiting room</title>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("pre-queue page lacks %s:\n%s", want, html)
		}
	}
	if strings.Contains(html, `<div data-waitroom="prequeue" hidden>`) {
		t.Errorf("pre-queue page hides the pre-queue")
	}

	// In German, and once the opening has passed but the draw has not yet
	// reached this page.
	p = newPage(&german, pre, "", 10, opens.Add(time.Second), "n")
	if p.Countdown != "Die Verlosung läuft …" || p.DocTitle != "Die Verlosung läuft … · Warteraum" || p.Announcement != p.Countdown {
		t.Errorf("German page past the opening: countdown %q, title %q, announcement %q; want the draw taking place", p.Countdown, p.DocTitle, p.Announcement)
	}
	if p.EntrantsText != "1.234 Personen sind bei der Verlosung dabei" {
		t.Errorf("German entrants %q", p.EntrantsText)
	}
}

func TestDrawnPage(t *testing.T) {
	opens := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	_, drawn := dropSessions(opens)
	p := newPage(&french, drawn, "", 10, opens.Add(time.Minute), "n")
	if p.PreQueue || !p.Drawn || p.Position != "57" || p.DocTitle != "N° 57 dans la file · Salle d’attente" {
		t.Errorf("drawn page: PreQueue %v Drawn %v Position %q title %q; want false, true, 57, the place", p.PreQueue, p.Drawn, p.Position, p.DocTitle)
	}
	if strings.Contains(string(p.Data), "data-opens-at") {
		t.Errorf("drawn page still carries data-opens-at")
	}
	html := renderBuiltin(t, p)
	for _, want := range []string{
		`<h1 data-waitroom="heading">Vous êtes dans la file</h1>`,
		`<div data-waitroom="prequeue" hidden>`, `<div data-waitroom="line">`,
		`<p class="drawn" data-waitroom="drawn">Le tirage a eu lieu` + "\u00a0" + `: votre place a été tirée au sort. <a href="/v1/rooms/drop/draw">Vérifier le tirage</a></p>`,
		`<p class="note" data-waitroom="intro" hidden>`,
		`<p class="note" data-waitroom="drawn">Merci de votre patience. Nous faisons entrer les personnes une à une, dans l’ordre du tirage`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("drawn page lacks %s:\n%s", want, html)
		}
	}

	// A session that never was in a draw says nothing of one.
	plain := drawn
	plain.Entry = ""
	html = renderBuiltin(t, newPage(&english, plain, "", 10, opens, "n"))
	for _, want := range []string{`<p class="drawn" data-waitroom="drawn" hidden>`, `<p class="note" data-waitroom="intro">Thank you for waiting. We let people in one by one, in the order they arrived`} {
		if !strings.Contains(html, want) {
			t.Errorf("page of an ordinary session lacks %s:\n%s", want, html)
		}
	}
}
