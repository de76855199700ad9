package web

import (
	"bytes"
	"context"
	"errors"
	"html"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
)

// Refresh bounds, in seconds, for the no-JavaScript reload of a waiting page.
const (
	minRefresh = 5
	maxRefresh = 10
)

// Page is what a waiting-page template receives. Numbers come both raw (in
// Session) and formatted for the visitor's language.
type Page struct {
	// TierNote, in a room with tiers, names the visitor's tier and says why
	// a position may grow; "" otherwise.
	TierNote string
	// Lang is the page's language tag ("en", "de", "fr") and T its text.
	Lang string
	T    *Messages
	// Room is the room's name.
	Room string
	// Status is "waiting", "active" (admitted, shown only when the room has
	// no target_url, since otherwise the visitor is redirected) or "served"
	// (called in a manual room).
	Status string
	// Session is the visitor's session as the API would answer it.
	Session waitroom.Session
	// Position, Ahead, Waiting, Active and Capacity are the numbers,
	// formatted for the language ("1,234"); Position and Ahead are "" unless
	// waiting.
	Position, Ahead, Waiting, Active, Capacity string
	// Announcement is the sentence for the aria-live region: "You are
	// number 3 in line. 2 people are ahead of you."
	Announcement string
	// ETA is the estimated wait as text; HasETA says whether there is an
	// estimate (ETA is then T.ETAUnknown otherwise).
	ETA    string
	HasETA bool
	// Progress is how far along the wait is, 0 to 100, from the time waited
	// and the estimate; HasProgress is false while there is no estimate.
	Progress    int
	HasProgress bool
	// Target is where the visitor goes once admitted: the room's target_url,
	// or an allowed ?return_to=; "" for none.
	Target string
	// Refresh is the no-JavaScript reload interval in seconds (0: none).
	// The built-in page puts it in <noscript><meta http-equiv="refresh">, so
	// that only visitors without JavaScript reload.
	Refresh int
	// DocTitle is the document title ("No. 3 in line · Waiting room").
	DocTitle string
	// PreQueue says the session waits in the pre-queue of a scheduled room
	// (a "drop"): it has no place yet, and gets one in the draw at the
	// opening (Session.OpensAt). Announcement then says when that is.
	PreQueue bool
	// Countdown is the time left until the opening as a clock ("59:58"),
	// OpensAt the opening as text ("2030-01-01 00:00 UTC") and OpensAtISO
	// in RFC 3339 (for <time datetime>); EntrantsText counts the
	// pre-queue ("1,234 people are in the draw"). All "" unless PreQueue.
	Countdown, OpensAt, OpensAtISO, EntrantsText string
	// Drawn says the session's place in line was drawn at random (it
	// entered a pre-queue); the page then says so.
	Drawn bool
	// DrawURL is the room's public draw record, for anyone to check it.
	DrawURL string
	// Stock is the stock state of a session waiting in a room with an
	// inventory: "likely", "unlikely" (more people ahead than units left)
	// or "reserved" (none left, some reserved); "" in a room without one.
	// Remaining is what is left, formatted; StockLeft says it ("About 12
	// left", "" when none is left) and StockNote why the visitor may not
	// get one ("" while likely).
	Stock, Remaining, StockLeft, StockNote string
	// Nonce is the Content-Security-Policy nonce: inline <script nonce="…">
	// and <style nonce="…"> run only with it.
	Nonce string
	// Script is the URL of /waitroom.js, PageScript of the page's live
	// updater (it needs Script first) and Style of the built-in style sheet.
	Script, PageScript, Style template.URL
	// DoorScript redeems an invite link (#invite=…) opened on the page.
	DoorScript template.URL
	// EventsURL, SessionURL and AwayURL are the session's API paths: its
	// Server-Sent Events stream, the session itself and the away beacon.
	EventsURL, SessionURL, AwayURL string
	// JoinURL is where the "join again" form posts.
	JoinURL string
	// Data holds the data-* attributes the page script reads (session,
	// status, target, clock, messages). Put it on the element with
	// id="waitroom": <main id="waitroom" {{.Data}}>.
	Data template.HTMLAttr
}

// newPage assembles the data of a page for session s at now.
func newPage(lang *Messages, s waitroom.Session, target string, refresh int, now time.Time, nonce string) *Page {
	p := &Page{
		Lang:       lang.Lang,
		T:          lang,
		Room:       s.Room,
		Status:     string(s.Status),
		Session:    s,
		Waiting:    lang.number(int64(s.Waiting)),
		Active:     lang.number(int64(s.Active)),
		Capacity:   lang.number(int64(s.Capacity)),
		Target:     target,
		Nonce:      nonce,
		Script:     clientJS.url(),
		PageScript: pageJS.url(),
		DoorScript: doorJS.url(),
		Style:      styleCSS.url(),
		ETA:        lang.ETAUnknown,
	}
	base := "/v1/rooms/" + url.PathEscape(s.Room) + "/sessions/" + url.PathEscape(s.ID)
	p.SessionURL, p.EventsURL, p.AwayURL = base, base+"/events", base+"/away"
	p.JoinURL = PagePrefix + url.PathEscape(s.Room)
	p.DrawURL = "/v1/rooms/" + url.PathEscape(s.Room) + "/draw"
	if p.Stock = stockState(s); p.Stock != "" {
		p.Remaining = lang.number(s.Remaining)
		p.StockLeft, p.StockNote = lang.stockText(s)
	}
	switch {
	case s.Status == waitroom.StatusWaiting && s.Position == 0 && !s.OpensAt.IsZero():
		left := s.OpensAt.Sub(now)
		p.PreQueue = true
		p.Refresh = refresh
		p.Countdown = lang.countdown(left)
		p.OpensAt = s.OpensAt.UTC().Format("2006-01-02 15:04 UTC")
		p.OpensAtISO = s.OpensAt.UTC().Format(time.RFC3339)
		p.EntrantsText = lang.entrants(s.Entrants)
		p.Announcement = lang.opensIn(left)
		if left > 0 {
			p.DocTitle = fill(lang.TitleOpensIn, "time", p.Countdown) + " · " + lang.Title
		} else {
			p.DocTitle = lang.Drawing + " · " + lang.Title
		}
		// Hidden until the draw, when the page script shows the place.
		p.Position, p.Ahead = "0", "0"
	case s.Status == waitroom.StatusWaiting:
		p.Drawn = s.Entry != ""
		p.Position = lang.number(s.Position)
		p.Ahead = lang.number(s.Ahead())
		p.Announcement = lang.announcement(s)
		p.Refresh = refresh
		p.DocTitle = fill(lang.TitlePosition, "n", p.Position) + " · " + lang.Title
		if s.ETA != nil {
			p.HasETA, p.ETA = true, lang.etaText(s.ETA)
			p.HasProgress, p.Progress = true, progress(now.Sub(s.JoinedAt), s.ETA.Seconds)
		}
	case s.Status == waitroom.StatusServed:
		p.DocTitle = lang.ServedHeading + " · " + lang.Title
	default:
		p.DocTitle = lang.AdmittedHeading + " · " + lang.Title
	}
	p.Data = p.data(now)
	return p
}

// tierNote sets TierNote for a waiting visitor of a tiered room.
func (p *Page) tierNote(cfg waitroom.RoomConfig) {
	s := p.Session
	if len(cfg.Tiers) == 0 || s.Status != waitroom.StatusWaiting || s.Tier == "" {
		return
	}
	p.TierNote = fill(p.T.TierNote, "tier", s.Tier)
	switch {
	case s.Tier == cfg.Tiers[0].Name:
	case cfg.TierPolicy == waitroom.TierWeighted:
		p.TierNote += " " + p.T.TierGrowsShare
	default:
		p.TierNote += " " + p.T.TierGrows
	}
}

// progress is the share of the wait behind a visitor who has waited for
// waited and has about eta seconds to go, as a percentage kept within 1..99
// so the bar neither looks empty nor finished.
func progress(waited time.Duration, eta int64) int {
	w := max(waited.Seconds(), 0)
	total := w + float64(max(eta, 0))
	if total <= 0 {
		return 1
	}
	return min(max(int(100*w/total), 1), 99)
}

// data renders the data-* attributes for the page script. Every value is
// HTML-escaped for a double-quoted attribute.
func (p *Page) data(now time.Time) template.HTMLAttr {
	var b strings.Builder
	attr := func(name, value string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("data-")
		b.WriteString(name)
		b.WriteString(`="`)
		b.WriteString(html.EscapeString(value))
		b.WriteByte('"')
	}
	t := p.T
	attr("room", p.Room)
	attr("session", p.Session.ID)
	attr("status", p.Status)
	attr("target", p.Target)
	attr("lang", p.Lang)
	attr("now", strconv.FormatInt(now.UnixMilli(), 10))
	if p.PreQueue {
		attr("opens-at", strconv.FormatInt(p.Session.OpensAt.UnixMilli(), 10))
	}
	if p.Stock != "" {
		attr("stock", p.Stock)
	}
	for _, m := range [][2]string{
		{"title", t.Title}, {"title-position", t.TitlePosition},
		{"announce-position", t.AnnouncePosition}, {"ahead-one", t.AheadOne}, {"ahead-other", t.AheadOther}, {"next", t.Next},
		{"eta-unknown", t.ETAUnknown}, {"eta-under-minute", t.ETAUnderMinute},
		{"eta-minute-one", t.ETAMinuteOne}, {"eta-minute-other", t.ETAMinuteOther}, {"eta-minute-range", t.ETAMinuteRange},
		{"eta-hour-one", t.ETAHourOne}, {"eta-hour-other", t.ETAHourOther}, {"eta-hour-range", t.ETAHourRange},
		{"ended-heading", t.EndedHeading}, {"ended-body", t.EndedBody},
		{"heading", t.Heading}, {"pre-heading", t.PreHeading}, {"title-opens-in", t.TitleOpensIn}, {"entrants-one", t.EntrantsOne}, {"entrants-other", t.EntrantsOther},
		{"announce-opens-in", t.AnnounceOpensIn}, {"drawing", t.Drawing}, {"announce-drawn", t.AnnounceDrawn},
		{"clock-days", t.ClockDays}, {"minute-one", t.MinuteOne}, {"minute-other", t.MinuteOther},
		{"hour-one", t.HourOne}, {"hour-other", t.HourOther}, {"day-one", t.DayOne}, {"day-other", t.DayOther},
		{"stock-left", t.StockLeft}, {"stock-unlikely", t.StockUnlikely}, {"stock-reserved", t.StockReserved},
		{"sold-out-title", t.SoldOutTitle}, {"sold-out-body", t.SoldOutBody},
	} {
		attr("t-"+m[0], m[1])
	}
	return template.HTMLAttr(b.String())
}

// shorten cuts a name taken from the URL to a length fit to show back.
func shorten(name string) string {
	const most = 80
	if len(name) <= most {
		return name
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut] + "…"
}

// refreshSeconds is the no-JavaScript reload interval for a room: a third of
// its waiting_timeout, so that a reloading page alone keeps its place, kept
// within 5 to 10 seconds.
func refreshSeconds(cfg waitroom.RoomConfig) int {
	if cfg.WaitingTimeout <= 0 {
		return maxRefresh
	}
	return min(max(int(cfg.WaitingTimeout.D()/3/time.Second), minRefresh), maxRefresh)
}

// page: GET /r/{room}. It resumes the visitor's session from the cookie or
// joins the room, and then either redirects an admitted visitor or shows
// the page. Each request counts as presence.
func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	// Every answer, redirects included, is one visitor's and may set a cookie.
	w.Header().Set("Cache-Control", "no-store")
	lang, room, ok := h.pageRoom(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	snap, err := h.rooms.Room(ctx, room)
	if err != nil {
		h.storeError(w, r, lang, room, err)
		return
	}
	cfg := *snap.Config
	if r.Method == http.MethodHead {
		// Link checkers and previews ask with HEAD; nobody joins for them.
		htmlHeaders(w, lang, nonce())
		return
	}
	now := h.clock.Now()
	s, err := h.resume(w, r, room, true, now)
	if errors.Is(err, admit.ErrGuarded) {
		// A room with a door and a visitor without a live session: the
		// door asks for the invite or the proof of work.
		h.doorPage(w, r, lang, room, cfg, http.StatusOK, "")
		return
	}
	if err != nil {
		h.storeError(w, r, lang, room, err)
		return
	}
	if s.Status == waitroom.StatusInvited {
		// A held place whose turn came, opened on the room's page: its
		// claim page, whose button claims it (a GET never does).
		h.claimState(w, r, lang, s, now, false)
		return
	}
	target := h.destination(r, cfg)
	if s.Status == waitroom.StatusActive && target != "" {
		http.Redirect(w, r, target, http.StatusSeeOther)
		return
	}
	if s.Status == waitroom.StatusWaiting && h.eta != nil {
		h.eta(&s, now)
	}
	p := newPage(lang, s, target, refreshSeconds(cfg), now, nonce())
	p.tierNote(cfg)
	h.render(w, r, lang, p)
}

// rejoin: POST /r/{room}, the "join the line again" button of a page whose
// session ended. A visitor whose session is still live keeps it; anyone
// else joins anew. Either way the browser is sent back to the page.
func (h *Handler) rejoin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	lang, room, ok := h.pageRoom(w, r)
	if !ok {
		return
	}
	_, err := h.resume(w, r, room, false, h.clock.Now())
	if err != nil && !errors.Is(err, admit.ErrGuarded) {
		h.storeError(w, r, lang, room, err)
		return
	}
	// Joined, kept, or (a room with a door) back to the page, whose door
	// asks again.
	http.Redirect(w, r, r.URL.RequestURI(), http.StatusSeeOther)
}

// resume returns the visitor's session: the one named by the room's cookie
// while it is live (or, when keepServed, served: its page says it is their
// turn), else a new one, whose cookie is set on w. In a room with a door
// nobody new joins here: the answer is then admit.ErrGuarded, and the door
// asks for its invite or proof of work (see join).
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, room string, keepServed bool, now time.Time) (waitroom.Session, error) {
	if s, ok, err := h.current(r.Context(), r, room, keepServed, now); ok || err != nil {
		return s, err
	}
	return h.admit.Enter(r, admit.Request{Room: room, StopAtDoor: true, Cookie: w, Secure: h.secureCookie(r)}, now)
}

// current returns the session named by the room's cookie while it is live
// (or, when keepServed, served); ok is false when there is none.
func (h *Handler) current(ctx context.Context, r *http.Request, room string, keepServed bool, now time.Time) (s waitroom.Session, ok bool, err error) {
	id := admit.SessionID(r, room)
	if id == "" {
		return s, false, nil
	}
	s, err = h.store.Session(ctx, room, id, now)
	switch code := waitroom.ErrorCode(err); {
	case err == nil && (s.Status.Live() || (keepServed && s.Status == waitroom.StatusServed)):
		return s, true, nil
	case err == nil, code == waitroom.CodeSessionNotFound, code == waitroom.CodeInvalidSessionID:
		return waitroom.Session{}, false, nil // ended, forgotten or forged
	default:
		return s, false, err
	}
}

// secureCookie reports whether the session cookie set in answer to r is
// Secure: always with Config.Secure, else when r came over TLS.
func (h *Handler) secureCookie(r *http.Request) bool { return h.secure || isTLS(r) }

// isTLS reports whether r came over HTTPS, directly or through a proxy
// that says so.
func isTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// destination is where an admitted visitor goes: ?return_to= when its
// origin is one of the room's return_origins, else the room's target_url
// ("" for none). Any other return_to is ignored, so the page cannot be used
// to send people to arbitrary sites.
//
// Besides the room's return_origins, the page's own origin is allowed: a
// same-origin return is no open redirect, and it is what a gate in front of
// the app on the same host (waitroom serve --upstream) sends.
func (h *Handler) destination(r *http.Request, cfg waitroom.RoomConfig) string {
	if rt := r.URL.Query().Get("return_to"); rt != "" {
		scheme := "http"
		if h.secure || isTLS(r) {
			scheme = "https"
		}
		origins := append(slices.Clip(cfg.ReturnOrigins), scheme+"://"+r.Host)
		if u, ok := allowedReturn(rt, origins); ok {
			return u
		}
	}
	return cfg.TargetURL
}

// allowedReturn checks a return_to URL against the allowed origins and
// returns it re-encoded. It must be an absolute http(s) URL without
// credentials; backslashes and control characters, which browsers and Go
// parse differently, are refused outright.
func allowedReturn(raw string, origins []string) (string, bool) {
	if len(origins) == 0 || len(raw) > waitroom.MaxURLLen || strings.ContainsAny(raw, "\\\t\r\n ") {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" {
		return "", false
	}
	origin := strings.ToLower(u.Scheme + "://" + u.Host)
	for _, o := range origins {
		if allowed, err := waitroom.ParseOrigin(o); err == nil && allowed == origin {
			return u.String(), true
		}
	}
	return "", false
}

// render writes a waiting page with the room's template.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, lang *Messages, p *Page) {
	t, name := h.pages.forRoom(p.Room)
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, p); err != nil {
		h.log.Error("web: waiting page template", "room", p.Room, "template", name, "err", err)
		h.errorPage(w, r, lang, http.StatusInternalServerError, lang.ErrorTitle, lang.ErrorBody)
		return
	}
	htmlHeaders(w, lang, p.Nonce)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// pageRoom starts a page handler: the visitor's language and the room
// named in the path, or, for a name no room can have, the error page
// already answered (ok false).
func (h *Handler) pageRoom(w http.ResponseWriter, r *http.Request) (lang *Messages, room string, ok bool) {
	lang = pickLanguage(r.Header.Get("Accept-Language"))
	room = r.PathValue("room")
	if !waitroom.ValidRoomName(room) {
		h.errorPage(w, r, lang, http.StatusBadRequest, lang.BadRoomTitle, fill(lang.BadRoomBody, "room", shorten(room)))
		return lang, room, false
	}
	return lang, room, true
}
