package web

import (
	"net/http"
	"net/url"
	"strings"
)

// The page routes that change something (POST /r/{room}, /r/{room}/join,
// /claim/{room}/{id}) answer only the pages of this origin. Another site's
// form could otherwise post to them: SameSite=Lax keeps the visitor's
// session cookie off such a post, so the page would join them anew at the
// back of the line and replace their cookie, and so their place.

// crossOrigin reports whether r is a browser's request sent by a page of
// another origin, by what the browser says:
//
//   - Sec-Fetch-Site (every current browser sends it): only "same-origin"
//     and "none" (the visitor's own doing: a bookmark, the address bar)
//     pass; "cross-site" and "same-site" (a sibling host) do not.
//   - Without it, Origin, when present, must be the request's own host or
//     the public URL's origin. "null" passes: browsers send it for this
//     site's own forms too, since its pages say Referrer-Policy: no-referrer.
//   - With neither the request is no browser's (curl, a backend), which
//     no other site can make a visitor send: it passes.
func (h *Handler) crossOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return false
	case "":
	default:
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		return false
	}
	if h.public != "" && strings.EqualFold(origin, h.public) {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return true
	}
	return !strings.EqualFold(u.Host, r.Host)
}

// forbidCrossOrigin answers a cross-origin POST: 403 and the error page,
// having changed nothing.
func (h *Handler) forbidCrossOrigin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	lang := pickLanguage(r.Header.Get("Accept-Language"))
	h.errorPage(w, r, lang, http.StatusForbidden, lang.CrossSiteTitle, lang.CrossSiteBody)
}
