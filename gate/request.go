package gate

import (
	"context"
	"net/http"
	"strings"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/apierror"
)

// Headers the gate reads and writes.
const (
	// HeaderCommand is the response header by which the protected app
	// commands the gate; "revoke" ends the visitor's session. The gate
	// removes it before the visitor sees the response.
	HeaderCommand = "Waitroom-Command"
	// HeaderSession, HeaderRoom and HeaderTicket carry an admitted
	// visitor's identity to the app. The gate removes any the client sent.
	HeaderSession = "Waitroom-Session"
	HeaderRoom    = "Waitroom-Room"
	HeaderTicket  = "Waitroom-Ticket"
	// HeaderLocation carries the waiting page URL on a 401 of the
	// auth-request endpoint, for nginx to redirect to.
	HeaderLocation = "Waitroom-Location"
)

// CookieName returns the name of room's pass cookie: __Host-waitroom-<room>
// over TLS (bound to the exact host, Secure, Path=/), waitroom-<room>
// otherwise.
func CookieName(room string, tls bool) string {
	if tls {
		return "__Host-waitroom-" + room
	}
	return "waitroom-" + room
}

// PassFromRequest returns the pass a request carries: the room's cookie
// (either name) or an Authorization: Bearer token; "" when it has none.
func PassFromRequest(r *http.Request, room string) string {
	for _, tls := range []bool{true, false} {
		if c, err := r.Cookie(CookieName(room, tls)); err == nil && c.Value != "" {
			return c.Value
		}
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// ctxKey keys the claims of an admitted request in its context.
type ctxKey struct{}

// WithClaims returns ctx carrying c, the claims of the pass that let a
// request through; ClaimsFrom reads them back.
func WithClaims(ctx context.Context, c Claims) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// ClaimsFrom returns the claims of the pass that let a request through
// Require, waitroom's middleware or its reverse proxy.
func ClaimsFrom(ctx context.Context) (Claims, bool) {
	c, ok := ctx.Value(ctxKey{}).(Claims)
	return c, ok
}

// WantsJSON reports whether r is from an API client rather than a browser.
func WantsJSON(r *http.Request) bool {
	a := r.Header.Get("Accept")
	return strings.Contains(a, "application/json") && !strings.Contains(a, "text/html")
}

// WriteError writes waitroom's error JSON, the API's own shape, with
// status (the status waitroom's API gives code, as a rule: 401 for
// CodeUnauthorized).
func WriteError(w http.ResponseWriter, status int, code waitroom.Code, msg string) {
	apierror.WriteMessage(w, status, code, msg)
}
