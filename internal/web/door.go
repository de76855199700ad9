package web

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/apierror"
)

// The door of a room that asks for an invite or a solved proof-of-work
// challenge: instead of joining on the first visit, the page shows the door
// (door.html, with door.js), which takes the invite from the link's
// fragment or a form, solves the challenge in a Web Worker, and posts to
// /r/{room}/join. That handler checks both through the same door.Door as
// the API and joins.

// doorData fills door.html.
type doorData struct {
	Lang         string
	T            *Messages
	Room         string
	Heading      string
	Error        string
	InviteOnly   bool
	ChallengeURL string
	JoinURL      string
	Script       template.URL
	Worker       template.URL
	Style        template.URL
	Nonce        string
}

// doorPage writes the door of room; msg is the reason a join was refused.
func (h *Handler) doorPage(w http.ResponseWriter, r *http.Request, lang *Messages, room string, cfg waitroom.RoomConfig, status int, msg string) {
	d := doorData{Lang: lang.Lang, T: lang, Room: room, Error: msg, InviteOnly: cfg.InviteOnly, JoinURL: "/r/" + url.PathEscape(room) + "/join",
		Script: doorJS.url(), Worker: powJS.url(), Style: styleCSS.url(), Nonce: nonce()}
	d.Heading = lang.DoorHeading
	if cfg.Challenge == waitroom.ChallengePoW {
		d.ChallengeURL = "/v1/rooms/" + url.PathEscape(room) + "/challenge"
	}
	htmlHeaders(w, lang, d.Nonce)
	w.WriteHeader(status)
	if err := builtin.ExecuteTemplate(w, "door.html", d); err != nil {
		h.log.Error("web: door page", "err", err)
	}
}

// maxDoorForm bounds the door's form: an invite and a solution are well
// under 4 KiB together.
const maxDoorForm = 8 << 10

// join: POST /r/{room}/join, the door's form (fields invite and
// challenge, or altcha as the ALTCHA widget names it). A visitor who joins with an invite while holding a live
// session (a place in the lowest tier, taken before the invite was
// redeemed) leaves that one for the new.
func (h *Handler) join(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	lang, room, ok := h.pageRoom(w, r)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxDoorForm)
	if err := r.ParseForm(); err != nil {
		h.errorPage(w, r, lang, http.StatusBadRequest, lang.BadRoomTitle, "The form could not be read.")
		return
	}
	ctx := r.Context()
	snap, err := h.rooms.Room(ctx, room)
	if err != nil {
		h.storeError(w, r, lang, room, err)
		return
	}
	now := h.clock.Now()
	old, live, err := h.current(ctx, r, room, false, now)
	if err != nil {
		h.storeError(w, r, lang, room, err)
		return
	}
	invite := inviteToken(r.PostForm.Get("invite"))
	if live && invite == "" {
		http.Redirect(w, r, "/r/"+url.PathEscape(room), http.StatusSeeOther) // already in line
		return
	}
	solution := r.PostForm.Get("challenge")
	if solution == "" {
		solution = r.PostForm.Get("altcha") // the ALTCHA widget's field
	}
	s, err := h.admit.Enter(r, admit.Request{Room: room, Invite: invite, Challenge: solution, Cookie: w, Secure: h.secureCookie(r)}, now)
	var e *waitroom.Error
	switch {
	case err == nil:
	case errors.As(err, &e) && e.Code == waitroom.CodeAlreadyJoined && e.Session != nil:
		// The invite's key is in line already, in the place this browser's
		// cookie holds (admit gives the session to no one else).
		s = *e.Session
	case errors.As(err, &e) && e.Code == waitroom.CodeAlreadyJoined:
		// The key's place was taken elsewhere: this visitor keeps theirs.
		h.doorPage(w, r, lang, room, *snap.Config, apierror.Status(e.Code), e.Message)
		return
	case errors.As(err, &e) && e.Message != "" && doorRefusal(e.Code):
		h.doorPage(w, r, lang, room, *snap.Config, apierror.Status(e.Code), e.Message)
		return
	default:
		h.storeError(w, r, lang, room, err)
		return
	}
	if live && old.ID != s.ID {
		_, _ = h.store.Leave(ctx, room, old.ID, waitroom.ReasonLeft, now)
	}
	http.Redirect(w, r, "/r/"+url.PathEscape(room), http.StatusSeeOther)
}

// inviteToken takes the token out of what a visitor pasted: the token
// itself, or a whole invite link (…#invite=<token>).
func inviteToken(v string) string {
	v = strings.TrimSpace(v)
	if _, after, ok := strings.Cut(v, "invite="); ok {
		v, _, _ = strings.Cut(after, "&")
		if u, err := url.QueryUnescape(v); err == nil {
			v = u
		}
	}
	return v
}

// doorRefusal reports whether code is a door's refusal, shown on the door.
func doorRefusal(code waitroom.Code) bool {
	switch code {
	case waitroom.CodeInviteRequired, waitroom.CodeInviteInvalid, waitroom.CodeInviteExpired, waitroom.CodeInviteWrongRoom,
		waitroom.CodeInviteUsed, waitroom.CodeChallengeRequired, waitroom.CodeChallengeInvalid, waitroom.CodeChallengeExpired,
		waitroom.CodeChallengeWrongRoom, waitroom.CodeChallengeUsed, waitroom.CodeInvalidRequest:
		return true
	}
	return false
}
