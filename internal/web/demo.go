package web

import (
	"bytes"
	"html/template"
	"net/http"
	"net/url"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
)

// demoPage is what the demo app's template receives.
type demoPage struct {
	// Mode is "app" (the sample app at DemoAppPath) or "client" (the
	// one-person-per-tab line at DemoPrefix, built on /waitroom.js).
	Mode       string
	Room       string
	Session    waitroom.Session
	SessionURL string
	Nonce      string
	Script     template.URL
	DemoScript template.URL
	Style      template.URL
	WaitingURL string
	// Capacity is the demo room's capacity.
	Capacity int
}

// demoApp: GET /demo/app/, the sample app behind the demo room. It guards
// itself the way an app behind a waiting room would: only a visitor whose
// session is active gets in (the read is a heartbeat, so it also counts as
// activity); anyone else is sent to the waiting page.
func (h *Handler) demoApp(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	lang := pickLanguage(r.Header.Get("Accept-Language"))
	waitingURL := PagePrefix + DemoRoom
	id := admit.SessionID(r, DemoRoom)
	if id == "" {
		http.Redirect(w, r, waitingURL, http.StatusSeeOther)
		return
	}
	s, err := h.store.Heartbeat(r.Context(), DemoRoom, id, h.clock.Now())
	switch code := waitroom.ErrorCode(err); {
	case err == nil && s.Status == waitroom.StatusActive:
	case err == nil, code == waitroom.CodeSessionNotFound, code == waitroom.CodeInvalidSessionID:
		http.Redirect(w, r, waitingURL, http.StatusSeeOther)
		return
	default:
		h.storeError(w, r, lang, DemoRoom, err)
		return
	}
	h.demoPage(w, r, demoPage{
		Mode:       "app",
		Room:       DemoRoom,
		Capacity:   s.Capacity,
		Session:    s,
		SessionURL: "/v1/rooms/" + DemoRoom + "/sessions/" + url.PathEscape(s.ID),
		Nonce:      nonce(),
		Script:     clientJS.url(),
		DemoScript: demoJS.url(),
		Style:      styleCSS.url(),
		WaitingURL: waitingURL,
	})
}

// demoClient: GET /demo/, the line seen through the JavaScript client, with
// the session kept in sessionStorage, so every tab is one more person.
func (h *Handler) demoClient(w http.ResponseWriter, r *http.Request) {
	room, err := h.rooms.Room(r.Context(), DemoRoom)
	if err != nil {
		h.storeError(w, r, pickLanguage(r.Header.Get("Accept-Language")), DemoRoom, err)
		return
	}
	h.demoPage(w, r, demoPage{
		Mode:       "client",
		Room:       DemoRoom,
		Capacity:   room.Config.Capacity,
		Nonce:      nonce(),
		Script:     clientJS.url(),
		DemoScript: demoJS.url(),
		Style:      styleCSS.url(),
		WaitingURL: PagePrefix + DemoRoom,
	})
}

// demoPage writes one of the demo's pages (in English only).
func (h *Handler) demoPage(w http.ResponseWriter, r *http.Request, p demoPage) {
	lang := pickLanguage(r.Header.Get("Accept-Language"))
	var buf bytes.Buffer
	if err := builtin.ExecuteTemplate(&buf, "demo.html", p); err != nil {
		h.log.Error("web: demo page", "err", err)
		h.errorPage(w, r, lang, http.StatusInternalServerError, lang.ErrorTitle, lang.ErrorBody)
		return
	}
	htmlHeaders(w, &english, p.Nonce)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}
