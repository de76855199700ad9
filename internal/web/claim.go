package web

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
)

// The claim page of a held place (waitroom.ClaimPath): a trusted backend
// joined a session with a contact, and when its turn came (invited) sent
// the person this link. GET /claim/{room}/{id} shows where the place
// stands and, while it is invited, a button; the button posts to the same
// URL, which claims the place, stores the session in the room's cookie and
// sends the browser to the waiting page, which sends an active session on
// to the room's target as for anyone admitted. Reading the page claims
// nothing: mail and chat scanners fetch the links they see. The session id
// in the path is the credential, as it is for the API.

// claimRefresh is how often, in seconds, a claim page that may change by
// itself (a place waiting for its turn, or held with time running out)
// reloads.
const claimRefresh = 30

// claimData fills claim.html.
type claimData struct {
	Lang string
	T    *Messages
	Room string
	// State is "invited", "active", "waiting" or "ended".
	State   string
	Heading string
	Body    string
	// Announcement and Position are a waiting place's position, as a
	// sentence and as a number ("" otherwise).
	Announcement, Position string
	// ClaimBy is when an invited place's hold ends, as text ("2030-01-02
	// 03:14 UTC") and in RFC 3339 (ClaimByISO); "" otherwise.
	ClaimBy, ClaimByISO string
	// Action is where the button posts ("" for no button), Button its text.
	Action, Button string
	Refresh        int
	Style          template.URL
	Nonce          string
}

// claimPage: GET /claim/{room}/{id}. It only reads the session.
func (h *Handler) claimPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	lang, room, ok := h.pageRoom(w, r)
	if !ok {
		return
	}
	now := h.clock.Now()
	s, err := h.store.Session(r.Context(), room, r.PathValue("id"), now)
	if err != nil {
		h.claimError(w, r, lang, room, err)
		return
	}
	h.claimState(w, r, lang, s, now, false)
}

// claim: POST /claim/{room}/{id}, the claim page's button. An invited
// place becomes active (an active one stays so: a second click, or the
// page of a place already claimed), the room's cookie names it and the
// browser goes to the waiting page, which sends it on. A place that is not
// invited gets its page again: 409 while it waits, 410 once it ended.
func (h *Handler) claim(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	lang, room, ok := h.pageRoom(w, r)
	if !ok {
		return
	}
	now := h.clock.Now()
	s, err := h.store.Claim(r.Context(), room, r.PathValue("id"), now)
	var e *waitroom.Error
	switch {
	case err == nil:
		admit.SetCookie(w, room, s.ID, h.secureCookie(r))
		http.Redirect(w, r, PagePrefix+url.PathEscape(room), http.StatusSeeOther)
	case errors.As(err, &e) && e.Code == waitroom.CodeNotInvited && e.Session != nil:
		h.claimState(w, r, lang, *e.Session, now, true)
	default:
		h.claimError(w, r, lang, room, err)
	}
}

// claimError answers a claim link whose session cannot be read: one that
// names no session (unknown, forgotten or forged) gets a 404 page; the
// rest are the store's failures, answered as the waiting page does.
func (h *Handler) claimError(w http.ResponseWriter, r *http.Request, lang *Messages, room string, err error) {
	switch waitroom.ErrorCode(err) {
	case waitroom.CodeSessionNotFound, waitroom.CodeInvalidSessionID:
		h.retryPage(w, r, lang, http.StatusNotFound, lang.BadRoomTitle, lang.ClaimUnknownBody, "", 0)
	default:
		h.storeError(w, r, lang, room, err)
	}
}

// claimState writes the claim page of s: invited (the button), active
// (claimed: a button that goes on), waiting (its position; 409 when the
// visitor asked to claim it) or ended (410).
func (h *Handler) claimState(w http.ResponseWriter, r *http.Request, lang *Messages, s waitroom.Session, now time.Time, posted bool) {
	d := claimData{Lang: lang.Lang, T: lang, Room: s.Room, Style: styleCSS.url(), Nonce: nonce()}
	status := http.StatusOK
	switch {
	case s.Status == waitroom.StatusInvited:
		d.State, d.Heading = "invited", lang.ClaimHeading
		d.Body = fill(lang.ClaimBody, "time", lang.span(max(s.ClaimBy.Sub(now), 0)))
		d.ClaimBy, d.ClaimByISO = s.ClaimBy.UTC().Format("2006-01-02 15:04 UTC"), s.ClaimBy.UTC().Format(time.RFC3339)
		d.Action, d.Button = waitroom.ClaimPath(s.Room, s.ID), lang.ClaimButton
		d.Refresh = claimRefresh
	case s.Status == waitroom.StatusActive:
		d.State, d.Heading, d.Body = "active", lang.AdmittedHeading, lang.AdmittedBody
		d.Action, d.Button = waitroom.ClaimPath(s.Room, s.ID), lang.Continue
	case s.Status == waitroom.StatusWaiting:
		d.State, d.Heading, d.Body = "waiting", lang.ClaimWaitingTitle, lang.ClaimWaitingBody
		if s.Position > 0 {
			d.Position, d.Announcement = lang.number(s.Position), lang.announcement(s)
		}
		d.Refresh = claimRefresh
		if posted {
			status = http.StatusConflict
		}
	default:
		d.State, d.Heading, d.Body = "ended", lang.ClaimExpiredTitle, lang.ClaimEndedBody
		if s.EndReason == waitroom.ReasonUnclaimed {
			d.Body = lang.ClaimExpiredBody
		}
		status = http.StatusGone
	}
	htmlHeaders(w, lang, d.Nonce)
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	if err := builtin.ExecuteTemplate(w, "claim.html", d); err != nil {
		h.log.Error("web: claim page", "err", err)
	}
}
