package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
)

// stocked returns a room of the given capacity and target that sells
// inventory units.
func stocked(capacity int, target string, inventory int64) waitroom.RoomConfig {
	c := config(capacity, target)
	c.Inventory = &inventory
	return c
}

// stock changes a room's stock through the admin API, as the app behind the
// room would (body: {"sold":1}, {"set":3} …), and returns the room after it.
func (s *site) stock(room, body string) waitroom.Room {
	s.t.Helper()
	b := s.admin(http.MethodPost, "/v1/rooms/"+room+"/inventory", body, http.StatusOK)
	var got waitroom.Room
	if err := json.Unmarshal(b, &got); err != nil {
		s.t.Fatalf("POST inventory %s: %v in %s", body, err, b)
	}
	return got
}

// stockBox is what a page shows of the stock: the box's opening tag and
// the two paragraphs, as rendered.
type stockBox struct{ box, left, note string }

func stockOf(body string) stockBox {
	return stockBox{
		box:  `<div class="stock" data-waitroom="stock-box"` + between(body, `<div class="stock" data-waitroom="stock-box"`, "\n"),
		left: `<p class="stock-left" data-waitroom="stock"` + between(body, `<p class="stock-left" data-waitroom="stock"`, "\n"),
		note: `<p class="stock-note" data-waitroom="stock-note"` + between(body, `<p class="stock-note" data-waitroom="stock-note"`, "\n"),
	}
}

// The stock texts of every language, as the pages must show them.
var stockTexts = []struct {
	lang, left1, left1234, unlikely, reserved, soldOutTitle, soldOutBody string
}{
	{"en", "About 1 left", "About 1,234 left",
		"There are more people ahead of you than items left, so you may not get one. You can keep your place in case some come back.",
		"Everything left is reserved right now; you keep your place in case some come back.",
		"Sold out", "Everything has been sold; sorry you did not get one this time."},
	{"de", "Noch etwa 1 übrig", "Noch etwa 1.234 übrig",
		"Vor Ihnen stehen mehr Menschen, als noch Artikel übrig sind, deshalb bekommen Sie vielleicht keinen. Sie können Ihren Platz behalten, falls welche zurückkommen.",
		"Alles Übrige ist gerade reserviert; Sie behalten Ihren Platz, falls etwas zurückkommt.",
		"Ausverkauft", "Alles ist verkauft; es tut uns leid, dass Sie diesmal keinen Artikel bekommen haben."},
	{"fr", "Il en reste environ 1", "Il en reste environ 1\u202f234",
		"Il y a plus de personnes devant vous que d’articles restants, vous risquez donc de ne pas en avoir. Vous pouvez garder votre place au cas où certains reviendraient.",
		"Tout ce qui reste est réservé pour le moment\u00a0; vous gardez votre place au cas où certains reviendraient.",
		"Épuisé", "Tout a été vendu\u00a0; nous sommes désolés que vous n’en ayez pas eu cette fois-ci."},
}

// TestStockWaitingPages walks a room with two units and one place through
// the real server: what is left, the honest "you may not get one", the
// state where everything left is reserved, in every language.
func TestStockWaitingPages(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.putRoom("shop", stocked(1, "", 2))
	s.joinN("shop", 1) // admitted, holding a unit: one is left

	// First in line, with one left: likely to get it; no note.
	first := s.visitor()
	r := s.get(first, "/r/shop")
	if r.status != http.StatusOK || between(r.body, `data-waitroom="position">`, "<") != "1" {
		t.Fatalf("first visitor: status %d, position %q; want 200 and 1", r.status, between(r.body, `data-waitroom="position">`, "<"))
	}
	want := stockBox{
		box:  `<div class="stock" data-waitroom="stock-box">`,
		left: `<p class="stock-left" data-waitroom="stock">About 1 left</p>`,
		note: `<p class="stock-note" data-waitroom="stock-note" hidden></p>`,
	}
	if got := stockOf(r.body); got != want {
		t.Errorf("first in line with one left:\n got %+v\nwant %+v", got, want)
	}
	if !strings.Contains(r.body, `data-stock="likely"`) {
		t.Errorf("first in line: the page data lacks data-stock=\"likely\"")
	}

	// Behind them, in every language: more people ahead than units left.
	for i, tc := range stockTexts {
		r := s.get(s.visitor(), "/r/shop", "Accept-Language", tc.lang)
		if pos := between(r.body, `data-waitroom="position">`, "<"); pos != strconv.Itoa(2+i) {
			t.Fatalf("%s: position %q, want %d", tc.lang, pos, 2+i)
		}
		want := stockBox{
			box:  `<div class="stock" data-waitroom="stock-box">`,
			left: `<p class="stock-left" data-waitroom="stock">` + tc.left1 + `</p>`,
			note: `<p class="stock-note" data-waitroom="stock-note">` + html.EscapeString(tc.unlikely) + `</p>`,
		}
		if got := stockOf(r.body); got != want {
			t.Errorf("%s: more ahead than left:\n got %+v\nwant %+v", tc.lang, got, want)
		}
		if !strings.Contains(r.body, `data-stock="unlikely"`) {
			t.Errorf("%s: the page data lacks data-stock=\"unlikely\"", tc.lang)
		}
		// The live region keeps to the place: the note is on the page, and
		// read out only when the visitor crosses into it (page.js).
		if a := between(r.body, `data-waitroom="announce">`, "<"); strings.Contains(a, html.EscapeString(tc.unlikely)) {
			t.Errorf("%s: the live region reads the stock note on load: %q", tc.lang, a)
		}
	}

	// Numbers are written the language's way.
	s.putRoom("big", stocked(0, "", 1234))
	for _, tc := range stockTexts {
		r := s.get(s.visitor(), "/r/big", "Accept-Language", tc.lang)
		if got, want := stockOf(r.body).left, `<p class="stock-left" data-waitroom="stock">`+tc.left1234+`</p>`; got != want {
			t.Errorf("%s: %s, want %s", tc.lang, got, want)
		}
	}

	// Both units reserved by the two admitted: nothing is left to say a
	// number of, and the visitor keeps their place in case some come back.
	s.putRoom("few", stocked(2, "", 2))
	s.joinN("few", 2)
	for _, tc := range stockTexts {
		r := s.get(s.visitor(), "/r/few", "Accept-Language", tc.lang)
		want := stockBox{
			box:  `<div class="stock" data-waitroom="stock-box">`,
			left: `<p class="stock-left" data-waitroom="stock" hidden></p>`,
			note: `<p class="stock-note" data-waitroom="stock-note">` + html.EscapeString(tc.reserved) + `</p>`,
		}
		if got := stockOf(r.body); got != want {
			t.Errorf("%s: all reserved:\n got %+v\nwant %+v", tc.lang, got, want)
		}
		if !strings.Contains(r.body, `data-stock="reserved"`) {
			t.Errorf("%s: the page data lacks data-stock=\"reserved\"", tc.lang)
		}
	}

	// A room without an inventory says nothing of stock.
	s.putRoom("plain", config(0, ""))
	r = s.get(s.visitor(), "/r/plain")
	want = stockBox{
		box:  `<div class="stock" data-waitroom="stock-box" hidden>`,
		left: `<p class="stock-left" data-waitroom="stock" hidden></p>`,
		note: `<p class="stock-note" data-waitroom="stock-note" hidden></p>`,
	}
	if got := stockOf(r.body); got != want {
		t.Errorf("room without an inventory:\n got %+v\nwant %+v", got, want)
	}
	if strings.Contains(r.body, "data-stock=") || strings.Contains(r.body, ">About ") {
		t.Errorf("room without an inventory: the page speaks of stock")
	}
}

// TestStockSoldOutPages sells a room out through the admin API: those in
// line end with end_reason sold_out (what the stream and a poll deliver to
// the page), and their next visit, or anyone's join, gets the sold-out
// page in their language with the server's message.
func TestStockSoldOutPages(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.putRoom("shop", stocked(1, "", 2))
	ctx := context.Background()
	buyer, err := s.store.Join(ctx, "shop", "", time.Now())
	if err != nil || buyer.Status != waitroom.StatusActive || !buyer.Stocked || buyer.Remaining != 1 {
		t.Fatalf("first join: %+v, %v; want active with one left", buyer, err)
	}
	next := s.visitor()
	s.get(next, "/r/shop")
	visitors := make([]*http.Client, len(stockTexts))
	for i, tc := range stockTexts {
		visitors[i] = s.visitor()
		if r := s.get(visitors[i], "/r/shop", "Accept-Language", tc.lang); r.status != http.StatusOK {
			t.Fatalf("%s: joining: status %d", tc.lang, r.status)
		}
	}

	// The buyer buys, leaves; the next one is admitted with the last unit
	// and buys it: everything is sold.
	s.stock("shop", `{"sold":1}`)
	s.leave("shop", buyer.ID)
	nextID := s.cookie(next, admit.CookieName("shop"))
	if got, err := s.store.Session(ctx, "shop", nextID, time.Now()); err != nil || got.Status != waitroom.StatusActive || !got.Unit {
		t.Fatalf("the next in line: %+v, %v; want active with a unit", got, err)
	}
	if room := s.stock("shop", `{"sold":1}`); room.Sold != 2 || room.Remaining == nil || *room.Remaining != 0 {
		t.Fatalf("after selling both: sold %d, remaining %v; want 2 and 0", room.Sold, room.Remaining)
	}

	for i, tc := range stockTexts {
		id := s.cookie(visitors[i], admit.CookieName("shop"))
		// What the page script receives for this session.
		r := s.get(s.visitor(), "/v1/rooms/shop/sessions/"+id)
		var got map[string]any
		if err := json.Unmarshal([]byte(r.body), &got); err != nil || got["status"] != "expired" || got["end_reason"] != "sold_out" {
			t.Errorf("%s: the session after the sell-out: %s (%v); want expired, end_reason sold_out", tc.lang, r.body, err)
		}

		r = s.get(visitors[i], "/r/shop", "Accept-Language", tc.lang)
		if r.status != http.StatusConflict {
			t.Errorf("%s: the page after the sell-out: status %d, want 409", tc.lang, r.status)
		}
		for _, want := range []string{
			"<title>" + tc.soldOutTitle + " · ",
			"<h1>" + tc.soldOutTitle + "</h1>",
			`<p class="lede">` + html.EscapeString(tc.soldOutBody) + "</p>",
			// The store's message, as it comes.
			`<p class="note" lang="en">Everything in room &#34;shop&#34; is sold: all 2.</p>`,
		} {
			if !strings.Contains(r.body, want) {
				t.Errorf("%s: the sold-out page lacks %s:\n%s", tc.lang, want, r.body)
			}
		}
		if strings.Contains(r.body, `http-equiv="refresh"`) || r.header.Get("Retry-After") != "" {
			t.Errorf("%s: the sold-out page retries; nothing is left to wait for", tc.lang)
		}
		if r.header.Get("Set-Cookie") != "" {
			t.Errorf("%s: a refused join set a cookie", tc.lang)
		}
		if r.header.Get("Content-Language") != tc.lang {
			t.Errorf("%s: Content-Language %q", tc.lang, r.header.Get("Content-Language"))
		}
	}

	// A newcomer, and the "join the line again" button, are refused alike.
	if r := s.get(s.visitor(), "/r/shop", "Accept-Language", "de"); r.status != http.StatusConflict || !strings.Contains(r.body, "<h1>Ausverkauft</h1>") {
		t.Errorf("a newcomer after the sell-out: status %d, want 409 and the sold-out page:\n%s", r.status, r.body)
	}
	if r := s.do(s.visitor(), http.MethodPost, "/r/shop", "Accept-Language", "fr"); r.status != http.StatusConflict || !strings.Contains(r.body, "<h1>Épuisé</h1>") {
		t.Errorf("POST /r/shop after the sell-out: status %d, want 409 and the sold-out page:\n%s", r.status, r.body)
	}
	// The one who bought keeps their page: it is their turn.
	if r := s.get(next, "/r/shop"); r.status != http.StatusOK || !strings.Contains(r.body, "You’re in") {
		t.Errorf("the buyer after the sell-out: status %d, want 200 and You’re in", r.status)
	}
}

// announcedJSON returns what the live region said since watchAnnouncements.
func announcedJSON(p *person) string {
	return mustEval[string](p, `JSON.stringify(announced)`)
}

// TestBrowserStockSoldOut follows one visitor in a room with two units and
// one place, live: the page says about how many are left and that more
// people are ahead than that, then that everything left is reserved, and
// when the app sells the last unit it says "Sold out" in place, read out
// once; the count itself is never read out.
func TestBrowserStockSoldOut(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.putRoom("shop", stocked(1, "/target/", 2))
	ctx := context.Background()
	buyer, err := s.store.Join(ctx, "shop", "", time.Now())
	if err != nil || buyer.Status != waitroom.StatusActive {
		t.Fatalf("buyer: %+v, %v; want active", buyer, err)
	}
	if _, err := s.store.Join(ctx, "shop", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	p := b.person("visitor")
	p.navigate(s.srv.URL + "/r/shop")
	if !p.waitUntil(5*time.Second, `document.getElementById("waitroom").dataset.live === "sse"`) {
		t.Fatalf("the live stream did not connect")
	}
	if got := p.text(`[data-waitroom="position"]`); got != "2" {
		t.Fatalf("position %q, want 2", got)
	}
	en := stockTexts[0]
	if got := p.text(`[data-waitroom="stock"]`); got != en.left1 || !mustEval[bool](p, visible(`[data-waitroom="stock"]`)) {
		t.Errorf("stock %q (shown: %v), want %q shown", got, mustEval[bool](p, visible(`[data-waitroom="stock"]`)), en.left1)
	}
	if got := p.text(`[data-waitroom="stock-note"]`); got != en.unlikely || !mustEval[bool](p, visible(`[data-waitroom="stock-note"]`)) {
		t.Errorf("stock note %q, want %q shown", got, en.unlikely)
	}
	if got := p.text(`[data-waitroom="announce"]`); got != "You are number 2 in line. 1 person is ahead of you." {
		t.Errorf("announcement %q, want the place only", got)
	}
	mustEval[bool](p, watchAnnouncements)
	mustEval[bool](p, `window.stillTheSamePage = true`)
	p.docScreenshot("stock-unlikely")

	// The buyer buys and leaves; the one ahead is admitted with the last
	// unit. The visitor moves up, and nothing is left but what is reserved.
	s.stock("shop", `{"sold":1}`)
	s.leave("shop", buyer.ID)
	if !p.waitUntil(5*time.Second, `document.querySelector('[data-waitroom="position"]').textContent === "1"`) {
		t.Fatalf("position %q 5s after the one ahead was admitted, want 1", p.text(`[data-waitroom="position"]`))
	}
	if !p.waitUntil(2*time.Second, fmt.Sprintf(`document.querySelector('[data-waitroom="stock-note"]').textContent === %q`, en.reserved)) {
		t.Errorf("stock note %q with everything reserved, want %q", p.text(`[data-waitroom="stock-note"]`), en.reserved)
	}
	if mustEval[bool](p, visible(`[data-waitroom="stock"]`)) {
		t.Errorf("with none left the page still shows %q", p.text(`[data-waitroom="stock"]`))
	}
	// Still "may not get one": the move is read out, the stock is not again.
	if got, want := announcedJSON(p), `["You are number 1 in line. You’re next."]`; got != want {
		t.Errorf("the live region said %s, want %s", got, want)
	}

	// The one admitted buys the last unit: sold out.
	s.stock("shop", `{"sold":1}`)
	if !p.waitUntil(5*time.Second, `document.querySelector("h1").textContent === "Sold out"`) {
		t.Fatalf("heading %q 5s after the sell-out, want Sold out", p.text("h1"))
	}
	soldOut := "Sold out. " + en.soldOutBody
	if got := p.text(`[data-waitroom="announce"]`); got != soldOut {
		t.Errorf("the live region says %q, want %q", got, soldOut)
	}
	// The eye has the heading; the visible sentence does not repeat it.
	if got := mustEval[string](p, `(el => el.textContent.slice(el.querySelector(".visually-hidden").textContent.length))(document.querySelector('[data-waitroom="announce"]'))`); got != en.soldOutBody {
		t.Errorf("the visible text is %q, want %q", got, en.soldOutBody)
	}
	if !mustEval[bool](p, `(r => r.width <= 1 && r.height <= 1)(document.querySelector('[data-waitroom="announce"] .visually-hidden').getBoundingClientRect())`) {
		t.Errorf("the heading's word in the live region is shown, not only read out")
	}
	if got := mustEval[string](p, `document.title`); got != "Sold out · Waiting room" {
		t.Errorf("title %q, want Sold out · Waiting room", got)
	}
	for _, sel := range []string{`[data-waitroom="position"]`, `[data-waitroom="stock-box"]`, `[data-waitroom="stock-note"]`, `dl.stats`} {
		if mustEval[bool](p, visible(sel)) {
			t.Errorf("%s is still shown after the sell-out", sel)
		}
	}
	if !mustEval[bool](p, `window.stillTheSamePage === true`) || p.path() != "/r/shop" {
		t.Errorf("the page was reloaded or left (on %s); it should say sold out in place", p.path())
	}
	if got, want := announcedJSON(p), `["You are number 1 in line. You’re next.",`+strconvQuote(soldOut)+`]`; got != want {
		t.Errorf("the live region said %s, want %s (sold out once)", got, want)
	}
	p.docScreenshot("sold-out")
	if msgs := p.consoleProblems(); len(msgs) > 0 {
		t.Errorf("console problems:\n%s", strings.Join(msgs, "\n"))
	}

	// A reload joins anew, and is told it is sold out.
	p.navigate(s.srv.URL + "/r/shop")
	if got := p.text("h1"); got != "Sold out" {
		t.Errorf("after a reload: heading %q, want Sold out", got)
	}
	if got := p.text("p.note"); got != `Everything in room "shop" is sold: all 2.` {
		t.Errorf("after a reload: the server's message %q", got)
	}
}

// strconvQuote quotes s as JSON.stringify does for these texts.
func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestBrowserStockCrossing checks, in German, that the live region says
// the visitor may not get one when they cross into that state, once, and
// that they keep their place: a unit given back comes to them.
func TestBrowserStockCrossing(t *testing.T) {
	s := newSite(t, siteOptions{})
	s.putRoom("shop", stocked(1, "/target/", 3))
	ctx := context.Background()
	buyer, err := s.store.Join(ctx, "shop", "", time.Now())
	if err != nil || buyer.Status != waitroom.StatusActive {
		t.Fatalf("buyer: %+v, %v; want active", buyer, err)
	}
	ahead, err := s.store.Join(ctx, "shop", "", time.Now())
	if err != nil || ahead.Status != waitroom.StatusWaiting {
		t.Fatalf("ahead: %+v, %v; want waiting", ahead, err)
	}
	b := newBrowser(t)
	p := b.person("visitor")
	if err := p.do(5*time.Second, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": "de"}})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	p.navigate(s.srv.URL + "/r/shop")
	if !p.waitUntil(5*time.Second, `document.getElementById("waitroom").dataset.live === "sse"`) {
		t.Fatalf("the live stream did not connect")
	}
	de := stockTexts[1]
	if got := p.text(`[data-waitroom="stock"]`); got != "Noch etwa 2 übrig" {
		t.Errorf("stock %q, want Noch etwa 2 übrig", got)
	}
	if mustEval[bool](p, visible(`[data-waitroom="stock-note"]`)) {
		t.Errorf("second in line with two left, the page says %q", p.text(`[data-waitroom="stock-note"]`))
	}
	mustEval[bool](p, watchAnnouncements)
	mustEval[bool](p, `window.stillTheSamePage = true`)

	// The app cuts the inventory to the unit the buyer holds, and the one
	// ahead gives up: first in line, with nothing left but that unit.
	s.stock("shop", `{"set":1}`)
	s.leave("shop", ahead.ID)
	if !p.waitUntil(5*time.Second, fmt.Sprintf(`document.querySelector('[data-waitroom="stock-note"]').textContent === %q`, de.reserved)) {
		t.Fatalf("stock note %q, want %q", p.text(`[data-waitroom="stock-note"]`), de.reserved)
	}
	if !p.waitUntil(2*time.Second, `document.querySelector('[data-waitroom="position"]').textContent === "1"`) {
		t.Fatalf("position %q, want 1", p.text(`[data-waitroom="position"]`))
	}
	var said []string
	if err := json.Unmarshal([]byte(announcedJSON(p)), &said); err != nil {
		t.Fatal(err)
	}
	notes := 0
	for _, a := range said {
		if strings.Contains(a, de.reserved) {
			notes++
		}
		if strings.Contains(a, "übrig") {
			t.Errorf("the live region read out the count: %q", a)
		}
	}
	if notes != 1 {
		t.Errorf("the live region said %q; want the note %q once, on crossing", said, de.reserved)
	}
	if !p.waitUntil(2*time.Second, `document.querySelector('[data-waitroom="announce"]').textContent.startsWith("Sie sind auf Platz 1. Sie sind als Nächstes dran.")`) {
		t.Errorf("announcement %q, want the new place", p.text(`[data-waitroom="announce"]`))
	}
	if !mustEval[bool](p, `window.stillTheSamePage === true`) {
		t.Errorf("the page was reloaded; it should update in place")
	}

	// The buyer leaves without buying: the unit comes back, to the visitor.
	s.leave("shop", buyer.ID)
	if !p.waitUntil(5*time.Second, `location.pathname === "/target/"`) {
		t.Errorf("the visitor is on %s 5s after a unit came back, want the target", p.path())
	}
	if msgs := p.consoleProblems(); len(msgs) > 0 {
		t.Errorf("console problems:\n%s", strings.Join(msgs, "\n"))
	}
}
