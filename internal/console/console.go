// Package console is waitroom's operator console: a sign-in for the admin
// token that gives the browser a session cookie, and the embedded page at
// /admin/ that watches rooms live and changes them through the admin API.
//
// The console adds no admin power of its own. The page calls the same
// /v1 admin routes as any client; httpapi accepts the console's cookie for
// them through Authorize, in place of the bearer token. What this package
// owns is the exchange of the token for a cookie:
//
//   - POST /admin/api/session {"token":"…"} signs in: 200
//     {"csrf":"…","expires_at":"…"} and the cookie waitroom_console, or 401
//     for a wrong token, and 429 rate_limited after five wrong tokens a minute
//     from one address (IPv6 per /64), counted together with wrong bearer
//     tokens on the API (package admintoken).
//   - GET /admin/api/session answers the same body while signed in, else 401.
//   - DELETE /admin/api/session signs out (X-CSRF-Token required): 204.
//
// The cookie is "<id>.<mac>": a random id and an HMAC-SHA256 of it under a
// key derived from the admin token, so every process that has the token can
// check it. The session is also kept in the store (waitroom.Ledger), so a
// sign-out on one process ends it on all, and a cookie is live only while
// the store has it. Every request that changes something must carry the
// session's CSRF token in X-CSRF-Token, which a page of another origin cannot
// read; the cookie is also SameSite=Strict, so other sites never send it.
//
// The page is plain HTML, CSS and JavaScript embedded in the binary, served
// with a Content-Security-Policy that allows nothing but this origin (no
// inline script, no framing). The admin token is never put in a URL, a page
// or a log.
package console

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admintoken"
	"github.com/waitroom/waitroom/internal/clientaddr"
)

// Sessions is the part of the store the console needs: its sign-in
// sessions, shared by every process. waitroom.Ledger includes it.
// Implementations must be safe for concurrent use.
type Sessions interface {
	// PutConsoleSession records a session that is live until expires.
	PutConsoleSession(ctx context.Context, id string, expires time.Time) error
	// ConsoleSession reports whether id is recorded and unexpired at now.
	ConsoleSession(ctx context.Context, id string, now time.Time) (bool, error)
	// DeleteConsoleSession ends the session id; an unknown id is no error.
	DeleteConsoleSession(ctx context.Context, id string) error
}

// DefaultLifetime is how long a sign-in lasts unless Options says otherwise.
const DefaultLifetime = 12 * time.Hour

// Options configures a Console.
type Options struct {
	// AdminToken is the server's admin token. Empty: nobody can sign in.
	AdminToken string
	// Ledger keeps the sessions (any waitroom.Ledger). Required.
	Ledger Sessions
	// Clock tells the time; nil means waitroom.SystemClock.
	Clock waitroom.Clock
	// Lifetime is how long a sign-in lasts; 0 means DefaultLifetime.
	Lifetime time.Duration
	// TrustedProxies are the proxies whose X-Forwarded-For (the client
	// address the sign-in limit counts) and X-Forwarded-Proto (whether
	// the cookie must be Secure) are believed.
	TrustedProxies clientaddr.Trusted
	// Secure marks the cookie Secure on every answer: the console is
	// reached over HTTPS (the server's public URL is https), whatever a
	// request looks like on its way here. When false it is Secure on
	// requests that came over TLS or through a trusted proxy that says so.
	Secure bool
	// Logger receives sign-ins, refusals and store failures; nil discards.
	Logger *slog.Logger
	// AdminGuard limits wrong tokens per client address; give it the one
	// the API's bearer token goes through, so that an address has one
	// allowance for both. nil makes one for this console alone (over
	// TrustedProxies, Clock and Logger, counted nowhere).
	AdminGuard *admintoken.Guard
}

// Console is the operator console: its sign-in and its page. It is safe for
// concurrent use.
type Console struct {
	keys     keys
	ledger   Sessions
	clock    waitroom.Clock
	lifetime time.Duration
	trusted  clientaddr.Trusted
	secure   bool
	log      *slog.Logger
	guard    *admintoken.Guard
}

// New returns a Console configured by o. It panics without o.Ledger, a
// wiring mistake that no request could recover from.
func New(o Options) *Console {
	if o.Ledger == nil {
		panic("console: Options.Ledger is required")
	}
	if o.Clock == nil {
		o.Clock = waitroom.SystemClock{}
	}
	if o.Lifetime <= 0 {
		o.Lifetime = DefaultLifetime
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.AdminGuard == nil {
		o.AdminGuard = admintoken.New(admintoken.Config{Proxies: o.TrustedProxies, Clock: o.Clock, Logger: o.Logger})
	}
	return &Console{
		keys:     newKeys(o.AdminToken),
		ledger:   o.Ledger,
		clock:    o.Clock,
		lifetime: o.Lifetime,
		trusted:  o.TrustedProxies,
		secure:   o.Secure,
		log:      o.Logger,
		guard:    o.AdminGuard,
	}
}

// Prefix is the path the console is served under.
const Prefix = "/admin/"

// Path is the console's address without its slash, which redirects to
// Prefix; a server mounts Handler at both.
const Path = "/admin"

// sessionPath is the sign-in API.
const sessionPath = Prefix + "api/session"

// Handler serves everything under /admin/: the page and its files, and the
// sign-in API. Mount it at Prefix and Path (it reads the full request path).
func (c *Console) Handler() http.Handler {
	return http.HandlerFunc(c.serve)
}

func (c *Console) serve(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	p := r.URL.Path
	switch {
	case p == sessionPath:
		c.serveSession(w, r)
	case strings.HasPrefix(p, Prefix+"api/"):
		c.writeError(w, r, waitroom.Errorf(waitroom.CodeNotFound, "There is no console API at this path."))
	case p == "/admin":
		// Mounted at /admin too, so that this redirect, not ServeMux's 307,
		// answers: a permanent one, for GET and HEAD only.
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			c.methodNotAllowed(w, r)
			return
		}
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
	default:
		c.serveFile(w, r)
	}
}

// serveSession dispatches the sign-in API by method.
func (c *Console) serveSession(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	var err error
	switch r.Method {
	case http.MethodPost:
		err = c.signIn(w, r)
	case http.MethodGet, http.MethodHead:
		err = c.whoAmI(w, r)
	case http.MethodDelete:
		err = c.signOut(w, r)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST, DELETE")
		err = waitroom.Errorf(waitroom.CodeMethodNotAllowed, "%s is not allowed here; use POST to sign in, GET to check, DELETE to sign out.", clipMethod(r.Method))
	}
	if err != nil {
		c.writeError(w, r, err)
	}
}

// csp allows the page nothing but its own origin: no inline script or
// style, no plugins, no framing, forms and <base> pinned.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders are sent with every console answer, API or file.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// keys holds what is derived from the admin token: the digest it is
// compared by, and the key that signs cookies and CSRF tokens.
type keys struct {
	set    bool
	digest [sha256.Size]byte
	mac    []byte
}

// macLabel separates the console's key from any other use of the token.
const macLabel = "waitroom console v1\x00"

func newKeys(token string) keys {
	if token == "" {
		return keys{}
	}
	mac := sha256.Sum256([]byte(macLabel + token))
	return keys{set: true, digest: sha256.Sum256([]byte(token)), mac: mac[:]}
}
