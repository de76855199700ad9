package web

import (
	"bytes"
	"html/template"
	"net/http"
	"net/url"

	"github.com/waitroom/waitroom"
)

// HomePath is the server's root: with Config.Home, GET / answers a small
// page that links what a person starting the server looks for first (the
// console, the default room's waiting page, the demo, the API document and
// the health endpoints) instead of a 404.
const HomePath = "/{$}"

// homePage is what home.html receives.
type homePage struct {
	Style template.URL
	// DefaultRoom is the waiting page of the default room, "" when that
	// room does not exist (it was deleted).
	DefaultRoom, DefaultRoomName string
	// Demo is the demo's page, "" without Config.Demo.
	Demo, DemoRoomName string
}

// home answers GET and HEAD / with the home page (in English: it is for
// the operator, not for visitors).
func (h *Handler) home(w http.ResponseWriter, r *http.Request) {
	p := homePage{Style: styleCSS.url(), DefaultRoomName: waitroom.DefaultRoom}
	// The default room is linked only while it exists: the link would
	// otherwise be a 404 (a store error also leaves it out, as the page is
	// mostly links that work without the store).
	if _, err := h.rooms.Room(r.Context(), waitroom.DefaultRoom); err == nil {
		p.DefaultRoom = PagePrefix + url.PathEscape(waitroom.DefaultRoom)
	}
	if h.demo {
		p.Demo, p.DemoRoomName = DemoPrefix, DemoRoom
	}
	var buf bytes.Buffer
	if err := builtin.ExecuteTemplate(&buf, "home.html", p); err != nil {
		h.log.Error("web: home page", "err", err)
		lang := pickLanguage(r.Header.Get("Accept-Language"))
		h.errorPage(w, r, lang, http.StatusInternalServerError, lang.ErrorTitle, lang.ErrorBody)
		return
	}
	htmlHeaders(w, &english, nonce())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}
