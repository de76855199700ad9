package web

import (
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

func TestStockState(t *testing.T) {
	waiting := func(position, remaining int64) waitroom.Session {
		return waitroom.Session{Status: waitroom.StatusWaiting, Position: position, Stocked: true, Remaining: remaining}
	}
	plain := waiting(5, 0)
	plain.Stocked = false
	active := waiting(0, 3)
	active.Status = waitroom.StatusActive
	preQueue := waiting(0, 3)
	preQueue.OpensAt = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		what string
		s    waitroom.Session
		want string
	}{
		{"no inventory", plain, ""},
		{"active", active, ""},
		{"first of one left", waiting(1, 1), stockLikely},
		{"as many ahead as left", waiting(3, 3), stockLikely},
		{"one more ahead than left", waiting(4, 3), stockUnlikely},
		{"none left", waiting(1, 0), stockReserved},
		{"none left, far back", waiting(900, 0), stockReserved},
		{"pre-queue: no place yet", preQueue, stockLikely},
	} {
		if got := stockState(tc.s); got != tc.want {
			t.Errorf("%s: stockState = %q, want %q", tc.what, got, tc.want)
		}
	}
}

func TestStockText(t *testing.T) {
	s := func(position, remaining int64) waitroom.Session {
		return waitroom.Session{Status: waitroom.StatusWaiting, Position: position, Stocked: true, Remaining: remaining}
	}
	for _, tc := range []struct {
		lang       string
		s          waitroom.Session
		left, note string
	}{
		{"en", s(2, 1234), "About 1,234 left", ""},
		{"en", s(2000, 1234), "About 1,234 left", english.StockUnlikely},
		{"en", s(2, 0), "", "Everything left is reserved right now; you keep your place in case some come back."},
		{"de", s(2, 1234), "Noch etwa 1.234 übrig", ""},
		{"de", s(3, 2), "Noch etwa 2 übrig", german.StockUnlikely},
		{"de", s(1, 0), "", german.StockReserved},
		{"fr", s(2, 1234), "Il en reste environ 1\u202f234", ""},
		{"fr", s(3, 1), "Il en reste environ 1", french.StockUnlikely},
		{"fr", s(1, 0), "", french.StockReserved},
		{"en", waitroom.Session{Status: waitroom.StatusWaiting, Position: 9}, "", ""},
	} {
		left, note := pickLanguage(tc.lang).stockText(tc.s)
		if left != tc.left || note != tc.note {
			t.Errorf("%s stockText(position %d, remaining %d) = %q, %q; want %q, %q",
				tc.lang, tc.s.Position, tc.s.Remaining, left, note, tc.left, tc.note)
		}
	}
	if !strings.HasPrefix(english.StockUnlikely, "There are more people ahead of you than items left, so you may not get one.") {
		t.Errorf("English StockUnlikely %q does not say it plainly", english.StockUnlikely)
	}
}

// The page carries what the page script needs for stock: the state, and
// every text it may switch to, in the page's language.
func TestStockPageData(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := waitroom.Session{ID: "AAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAA", Room: "shop", Status: waitroom.StatusWaiting,
		Ticket: 9, Position: 7, Waiting: 9, Active: 2, Capacity: 2, JoinedAt: now, Stocked: true, Remaining: 5}
	for _, m := range languages {
		p := newPage(m, s, "", 10, now, "n")
		if p.Stock != stockUnlikely || p.Remaining != "5" || p.StockLeft != fill(m.StockLeft, "n", "5") || p.StockNote != m.StockUnlikely {
			t.Errorf("%s: Stock %q Remaining %q StockLeft %q StockNote %q", m.Lang, p.Stock, p.Remaining, p.StockLeft, p.StockNote)
		}
		data := string(p.Data)
		for _, want := range []string{
			`data-stock="unlikely"`,
			`data-t-stock-left="` + attrEscape(m.StockLeft) + `"`,
			`data-t-stock-unlikely="` + attrEscape(m.StockUnlikely) + `"`,
			`data-t-stock-reserved="` + attrEscape(m.StockReserved) + `"`,
			`data-t-sold-out-title="` + attrEscape(m.SoldOutTitle) + `"`,
			`data-t-sold-out-body="` + attrEscape(m.SoldOutBody) + `"`,
		} {
			if !strings.Contains(data, want) {
				t.Errorf("%s: page data lacks %s", m.Lang, want)
			}
		}
		// The announcement is about the place only.
		if p.Announcement != m.announcement(s) {
			t.Errorf("%s: announcement %q, want %q", m.Lang, p.Announcement, m.announcement(s))
		}
	}

	// A room without an inventory: no stock at all.
	s.Stocked, s.Remaining = false, 0
	p := newPage(&english, s, "", 10, now, "n")
	if p.Stock != "" || p.Remaining != "" || p.StockLeft != "" || p.StockNote != "" || strings.Contains(string(p.Data), "data-stock=") {
		t.Errorf("without an inventory: Stock %q Remaining %q StockLeft %q StockNote %q", p.Stock, p.Remaining, p.StockLeft, p.StockNote)
	}
	html := renderBuiltin(t, p)
	if !strings.Contains(html, `<div class="stock" data-waitroom="stock-box" hidden>`) {
		t.Errorf("without an inventory the stock box is shown:\n%s", html)
	}
}

// Operator templates are checked on a page with stock too.
func TestSamplePagesHaveStock(t *testing.T) {
	for _, p := range samplePages() {
		if p.Stock == stockUnlikely && p.StockLeft != "" && p.StockNote != "" {
			return
		}
	}
	t.Errorf("no sample page is one with stock, more people ahead than left")
}

// attrEscape escapes s as Page.data writes an attribute value.
func attrEscape(s string) string {
	r := strings.NewReplacer(`&`, "&amp;", `'`, "&#39;", `<`, "&lt;", `>`, "&gt;", `"`, "&#34;")
	return r.Replace(s)
}
