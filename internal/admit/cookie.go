package admit

import "net/http"

// cookiePrefix starts the name of the cookie that holds a visitor's session
// id for one room: waitroom-sid-<room>. The waiting page sets and reads it,
// and so does the gate, so that a session made at either is resumed at the
// other.
const cookiePrefix = "waitroom-sid-"

// CookieName returns the name of room's session cookie.
func CookieName(room string) string { return cookiePrefix + room }

// SessionID returns the session id r's cookie for room holds; "" for none.
func SessionID(r *http.Request, room string) string {
	c, err := r.Cookie(CookieName(room))
	if err != nil {
		return ""
	}
	return c.Value
}

// SetCookie stores session id for room in the visitor's browser. HttpOnly
// keeps it from scripts, SameSite=Lax from other sites' requests; secure
// (the server is reached over HTTPS, or the request came over TLS) marks it
// Secure.
func SetCookie(w http.ResponseWriter, room, id string, secure bool) {
	http.SetCookie(w, &http.Cookie{
		Name:     CookieName(room),
		Value:    id,
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
		Secure:   secure,
	})
}
