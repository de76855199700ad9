package gatekeeper

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/gate"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
)

// original is the request the visitor made, as far as the gate can tell:
// the request itself, or what a trusted proxy says it forwarded.
type original struct {
	scheme, host, uri, method string
}

func (o original) tls() bool { return o.scheme == "https" }

func (o original) origin() string { return o.scheme + "://" + o.host }

func (o original) url() string { return o.origin() + o.uri }

// original works out the visitor's request. X-Forwarded-Proto, -Host, -Uri
// and -Method count only from trusted proxies and only when well formed;
// otherwise the request's own values stand.
func (g *Gate) original(r *http.Request) original {
	o := original{scheme: "http", host: r.Host, uri: r.URL.RequestURI(), method: r.Method}
	if r.TLS != nil {
		o.scheme = "https"
	}
	if g.trusted.FromProxy(r) {
		o = forwarded(o, r.Header)
	}
	if !validHost(o.host) {
		o.host = ""
	}
	return o
}

// forwarded applies the X-Forwarded-* headers h to o, each only when it is
// well formed. Only the first value of a list counts (the one the proxy
// nearest the visitor wrote, when proxies append).
func forwarded(o original, h http.Header) original {
	first := func(name string) string {
		v := h.Get(name)
		if i := strings.IndexByte(v, ','); i >= 0 {
			v = v[:i]
		}
		return strings.TrimSpace(v)
	}
	switch p := strings.ToLower(first("X-Forwarded-Proto")); p {
	case "http", "https":
		o.scheme = p
	}
	if v := first("X-Forwarded-Host"); v != "" && validHost(v) {
		o.host = v
	}
	if v := h.Get("X-Forwarded-Uri"); v != "" && validURI(v) {
		o.uri = v
	}
	if v := first("X-Forwarded-Method"); v != "" && validToken(v) {
		o.method = strings.ToUpper(v)
	}
	return o
}

// validHost accepts host[:port] with nothing that could change a URL's
// meaning (no userinfo, path, query or spaces).
func validHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == ':', c == '[', c == ']', c == '_':
		default:
			return false
		}
	}
	u, err := url.Parse("http://" + h + "/")
	if err != nil || u.Host != h || u.Hostname() == "" {
		return false
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return false
		}
	}
	return true
}

// validURI accepts an origin-form request target: a path starting with a
// single slash, no control characters, spaces or backslashes.
func validURI(v string) bool {
	if len(v) > waitroom.MaxURLLen || !strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//") {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return false
		}
	}
	_, err := url.ParseRequestURI(v)
	return err == nil
}

func validToken(v string) bool {
	if len(v) > 16 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// allowedOrigin reports whether the gate may send a visitor to origin: the
// public URL's, a configured one, or (without a public URL) the gated
// request's own, which is where the visitor already is.
func (g *Gate) allowedOrigin(origin string, o original) bool {
	origin = strings.ToLower(origin)
	if g.origins[origin] {
		return true
	}
	return g.public == nil && o.host != "" && origin == strings.ToLower(o.origin())
}

// waitingURL is the waiting page of room for the visitor of o, with a
// return_to of the original URL when the gate may send them back there.
func (g *Gate) waitingURL(room string, o original) string {
	base := ""
	if g.public != nil {
		base = g.public.Scheme + "://" + g.public.Host
	} else if o.host != "" {
		base = o.origin()
	}
	u := base + "/r/" + room
	if o.host != "" && o.method != "" && (o.method == http.MethodGet || o.method == http.MethodHead) {
		if ret := o.url(); g.allowedOrigin(o.origin(), o) && len(ret) <= waitroom.MaxURLLen {
			u += "?return_to=" + url.QueryEscape(ret)
		}
	}
	return u
}

// SafeReturn checks raw as a place to send a visitor: an absolute http(s)
// URL without credentials whose origin is in allowed (lower-case origins as
// waitroom.ParseOrigin gives them). It returns the URL re-encoded. It is
// the check behind every redirect the gate makes.
func SafeReturn(raw string, allowed map[string]bool) (string, bool) {
	if raw == "" || len(raw) > waitroom.MaxURLLen || strings.ContainsAny(raw, "\\\t\r\n ") {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" {
		return "", false
	}
	if !validHost(u.Host) {
		return "", false
	}
	if !allowed[strings.ToLower(u.Scheme+"://"+u.Host)] {
		return "", false
	}
	return u.String(), true
}

// decision is what the gate concluded about one request.
type decision struct {
	ok     bool
	claims gate.Claims
	// cookie, when set, is a new or renewed pass to give the visitor.
	cookie *http.Cookie
	// fresh says the pass was just issued from the session cookie (the
	// visitor does not hold it yet).
	fresh bool
	// session is the visitor's live session when one is known (a waiting
	// one, for JSON answers).
	session *waitroom.Session
}

// decide checks r for room: a valid pass (renewed past half its life), or
// else an active session named by the waiting page's cookie, which earns a
// pass. Errors are store failures or an unknown room.
func (g *Gate) decide(ctx context.Context, r *http.Request, room string, o original, now time.Time) (decision, error) {
	if tok := gate.PassFromRequest(r, room); tok != "" {
		c, err := g.Check(ctx, room, tok, now)
		if err == nil {
			g.Touch(c, now)
			d := decision{ok: true, claims: c}
			if now.After(c.IssuedAt.Add(c.Expires.Sub(c.IssuedAt) / 2)) {
				g.renew(ctx, &d, o, now)
			}
			return d, nil
		}
	}
	// The waiting page's session cookie (or the one the gate set joining).
	id := admit.SessionID(r, room)
	if id == "" {
		if _, err := g.roomConfig(ctx, room); err != nil {
			return decision{}, err
		}
		return decision{}, nil
	}
	// The visitor is active and using the app: presence and activity.
	s, err := g.store.Heartbeat(ctx, room, id, now)
	switch code := waitroom.ErrorCode(err); {
	case err == nil:
	case code == waitroom.CodeSessionNotFound, code == waitroom.CodeInvalidSessionID:
		return decision{}, nil
	default:
		return decision{}, err
	}
	if s.Status != waitroom.StatusActive {
		if s.Status.Live() {
			return decision{session: &s}, nil
		}
		return decision{}, nil
	}
	tok, p, err := g.passFor(ctx, s, now)
	if errors.Is(err, gate.ErrRevoked) {
		return decision{}, nil
	}
	if err != nil {
		return decision{}, err
	}
	cl := gate.Claims{Room: room, Session: s.ID, Ticket: s.Ticket, IssuedAt: p.iat, Expires: p.exp}
	return decision{ok: true, claims: cl, cookie: g.passCookie(room, tok, p.exp, o), fresh: true, session: &s}, nil
}

// renew reissues the pass of an active session past half its life; the
// store read makes sure it is still active and counts as activity.
func (g *Gate) renew(ctx context.Context, d *decision, o original, now time.Time) {
	s, err := g.store.Heartbeat(ctx, d.claims.Room, d.claims.Session, now)
	if err != nil || s.Status != waitroom.StatusActive {
		if err == nil || waitroom.ErrorCode(err) == waitroom.CodeSessionNotFound {
			g.markEnded(d.claims.Session, now)
			*d = decision{}
		}
		// On a store failure the current pass stands until it expires.
		return
	}
	tok, p, err := g.passFor(ctx, s, now)
	if err != nil {
		return
	}
	d.claims.IssuedAt, d.claims.Expires = p.iat, p.exp
	d.cookie = g.passCookie(d.claims.Room, tok, p.exp, o)
}

// passCookie is the cookie holding a pass. HttpOnly keeps it from scripts,
// SameSite=Lax from other sites' subrequests; over TLS it is Secure and
// __Host- prefixed so no sibling host can set or read it.
func (g *Gate) passCookie(room, token string, exp time.Time, o original) *http.Cookie {
	tls := g.secure || o.tls()
	return &http.Cookie{
		Name:     gate.CookieName(room, tls),
		Value:    token,
		Path:     "/",
		Expires:  exp,
		HttpOnly: true,
		Secure:   tls,
		SameSite: http.SameSiteLaxMode,
	}
}

// clearCookie removes room's pass cookie.
func (g *Gate) clearCookie(room string, o original) *http.Cookie {
	tls := g.secure || o.tls()
	return &http.Cookie{Name: gate.CookieName(room, tls), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: tls, SameSite: http.SameSiteLaxMode}
}

// Revoke ends session id of room (Store.Leave with ReasonRevoked) and
// refuses its pass from now on in this process; other processes learn of
// it from the store's events.
func (g *Gate) Revoke(ctx context.Context, room, id string) error {
	now := g.clock.Now()
	g.markEnded(id, now)
	if _, err := g.store.Leave(ctx, room, id, waitroom.ReasonRevoked, now); err != nil && waitroom.ErrorCode(err) != waitroom.CodeSessionNotFound {
		return err
	}
	return nil
}

// stripIdentity removes every header in the gate's namespace that a client
// may have sent, so the app can trust the ones the gate sets: Waitroom-…
// and X-Waitroom-… in any case, with '_' for '-' anywhere. Stacks that
// follow CGI (WSGI, PHP, Rack) read Waitroom_Session and Waitroom-Session
// as the same HTTP_WAITROOM_SESSION, so a forged spelling beside the real
// header could win there.
func stripIdentity(h http.Header) {
	for k := range h {
		if gateHeader(k) {
			delete(h, k)
		}
	}
}

// gateHeader reports whether the header name k is in the gate's namespace
// (see stripIdentity). It allocates nothing: every request of a protected
// app goes through it.
func gateHeader(k string) bool {
	const ns = "waitroom-"
	if len(k) > 2 && (k[0] == 'x' || k[0] == 'X') && (k[1] == '-' || k[1] == '_') {
		k = k[2:]
	}
	if len(k) < len(ns) {
		return false
	}
	for i := 0; i < len(ns); i++ {
		c := k[i]
		switch {
		case c == '_':
			c = '-'
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		if c != ns[i] {
			return false
		}
	}
	return true
}

// setIdentity sets the identity headers of an admitted visitor.
func setIdentity(h http.Header, c gate.Claims) {
	h.Set(gate.HeaderSession, c.Session)
	h.Set(gate.HeaderRoom, c.Room)
	h.Set(gate.HeaderTicket, strconv.FormatInt(c.Ticket, 10))
}
