package gatekeeper

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/apierror"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
)

// ProxyConfig configures the reverse-proxy mode.
type ProxyConfig struct {
	// Upstream is the protected app, e.g. http://127.0.0.1:9000. Required.
	Upstream *url.URL
	// Room is the room whose pass the app requires. Required.
	Room string
	// Bypass lists paths that pass without a pass: a prefix ("/static/",
	// "/healthz"), a suffix pattern ("*.css") or a path.Match pattern
	// ("/assets/*/logo.png").
	Bypass []string
	// Transport carries requests to the upstream; nil means
	// http.DefaultTransport.
	Transport http.RoundTripper
}

// Proxy returns the reverse-proxy handler: a request with a valid pass (or
// whose waiting-page session was just admitted) goes to cfg.Upstream, with
// streaming and WebSocket upgrades passed through. Anyone else joins the
// room: admitted at once, they go through with a new pass; else browsers
// are sent to the waiting page (which resumes the session from the cookie
// the gate set) and API clients (Accept: application/json) get 503 with
// Retry-After and their Session.
//
// The server must route the waiting room's own paths (web.Prefixes: /r/,
// /waitroom.js, /waitroom/; /v1/; JWKSPath) to waitroom's handlers on the
// same host, and everything else here.
func (g *Gate) Proxy(cfg ProxyConfig) (http.Handler, error) {
	if cfg.Upstream == nil || cfg.Upstream.Host == "" || (cfg.Upstream.Scheme != "http" && cfg.Upstream.Scheme != "https") {
		return nil, errors.New("gate: ProxyConfig.Upstream must be an absolute http(s) URL")
	}
	if !waitroom.ValidRoomName(cfg.Room) {
		return nil, fmt.Errorf("gate: ProxyConfig.Room %q is not a valid room name", cfg.Room)
	}
	up := cfg.Upstream
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(up)
			pr.SetXForwarded()
			o := g.original(pr.In)
			if o.host != "" {
				pr.Out.Header.Set("X-Forwarded-Host", o.host)
			}
			pr.Out.Header.Set("X-Forwarded-Proto", o.scheme)
			stripIdentity(pr.Out.Header)
			stripCookies(pr.Out.Header)
			if c, ok := gate.ClaimsFrom(pr.In.Context()); ok {
				setIdentity(pr.Out.Header, c)
			}
		},
		Transport:     cfg.Transport,
		FlushInterval: -1,
		// Without a pool every response allocates a fresh 32 KiB copy
		// buffer, which on a busy gate is most of its garbage.
		BufferPool: &copyBuffers,
		ErrorLog:   slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
		ModifyResponse: func(resp *http.Response) error {
			if n := stripSetCookies(resp.Header); n > 0 {
				g.log.Warn("gate: the protected app tried to set waitroom's cookies; dropped", "count", n, "path", resp.Request.URL.Path)
			}
			g.command(resp.Request.Context(), resp.Header, resp.Request)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if cb, ok := r.Context().Value(clientBodyKey{}).(*clientBody); ok && cb.failed.Load() {
				// The client broke its body (it ended early, or its chunks
				// are not chunks): its fault, not the app's.
				writeError(w, waitroom.CodeInvalidRequest, "The request's body could not be read: it ended before its length, or its chunked encoding is malformed.")
				return
			}
			g.log.Warn("gate: upstream failed", "err", err)
			// 502, not unavailable's 503: the app failed, not waitroom.
			apierror.WriteMessage(w, http.StatusBadGateway, waitroom.CodeUnavailable, "The protected app did not answer.")
		},
	}
	proxied := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			cb := &clientBody{ReadCloser: r.Body}
			r = r.WithContext(context.WithValue(r.Context(), clientBodyKey{}, cb))
			r.Body = cb
		}
		rp.ServeHTTP(w, r)
	})
	return g.enforce(cfg.Room, newBypass(cfg.Bypass), proxied, false), nil
}

// clientBody is a request body on its way to the protected app that
// remembers whether reading it failed, so that the proxy can tell a body
// the client broke from an app that failed.
type clientBody struct {
	io.ReadCloser
	failed atomic.Bool
}

type clientBodyKey struct{}

func (b *clientBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.failed.Store(true)
	}
	return n, err
}

// copyBuffers are the reverse proxy's buffers for copying response bodies.
var copyBuffers bufferPool

// bufferPool is an httputil.BufferPool over sync.Pool.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// command carries out a Waitroom-Command response header of the app and
// removes it: "revoke" ends the admitted visitor's session and clears the
// pass cookie; "sold" and "release" tell a room with an inventory that the
// visitor bought its reserved unit, or gave it back.
func (g *Gate) command(ctx context.Context, h http.Header, r *http.Request) {
	cmd := h.Values(gate.HeaderCommand)
	if len(cmd) == 0 {
		return
	}
	h.Del(gate.HeaderCommand)
	c, ok := gate.ClaimsFrom(ctx)
	if !ok {
		return
	}
	for _, v := range cmd {
		var op waitroom.StockOp
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "sold":
			op = waitroom.StockSold
		case "release":
			op = waitroom.StockReleased
		}
		if op != "" {
			if _, err := g.store.Stock(context.WithoutCancel(ctx), c.Room, op, 0, c.Session, g.clock.Now()); err != nil {
				g.log.Warn("gate: a stock command failed", "room", c.Room, "command", op, "err", err)
			}
			continue
		}
		if strings.EqualFold(strings.TrimSpace(v), "revoke") {
			if err := g.Revoke(context.WithoutCancel(ctx), c.Room, c.Session); err != nil {
				g.log.Warn("gate: revoking a session failed", "room", c.Room, "err", err)
			}
			h.Add("Set-Cookie", g.clearCookie(c.Room, g.original(r)).String())
			return
		}
	}
}

// Middleware returns middleware that admits to next only requests with a
// valid pass for room (or whose waiting-page session was just admitted).
// Others join the room: admitted at once they go through with a new pass;
// else browsers are sent to the waiting page and API clients get 503 with
// their Session. It counts admitted requests as activity and obeys a
// Waitroom-Command: revoke response header of next. Paths matching bypass
// (see ProxyConfig.Bypass) pass freely; TRACE and CONNECT never pass (405).
// next finds the pass's claims with ClaimsFrom.
func (g *Gate) Middleware(room string, bypass ...string) func(http.Handler) http.Handler {
	b := newBypass(bypass)
	return func(next http.Handler) http.Handler {
		return g.enforce(room, b, next, true)
	}
}

// enforce is the gate in front of next. wrap intercepts next's response
// headers for commands (the proxy sees them in ModifyResponse instead).
func (g *Gate) enforce(room string, bypass *bypass, next http.Handler, wrap bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refusedMethod(r.Method) {
			// Before the bypass: no path of a protected app is traced.
			methodNotAllowed(w)
			return
		}
		stripIdentity(r.Header)
		if bypass.match(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		now := g.clock.Now()
		o := g.original(r)
		d, err := g.decide(r.Context(), r, room, o, now)
		if err == nil && !d.ok {
			var s waitroom.Session
			s, d, err = g.join(w, r, room, o, d, now)
			if err == nil && !d.ok {
				g.turnAway(w, r, room, o, s)
				return
			}
		}
		if err != nil {
			if waitroom.ErrorCode(err) == waitroom.CodeUnavailable && g.failOpen != nil && g.failOpen() {
				// Fail open: the store has been down long enough that the
				// operator would rather let everyone through.
				next.ServeHTTP(w, r)
				return
			}
			g.storeError(w, err)
			return
		}
		if d.cookie != nil {
			http.SetCookie(w, d.cookie)
		}
		r = r.WithContext(gate.WithClaims(r.Context(), d.claims))
		if !wrap {
			setIdentity(r.Header, d.claims)
			next.ServeHTTP(w, r)
			return
		}
		setIdentity(r.Header, d.claims)
		cw := &commandWriter{ResponseWriter: w, g: g, r: r}
		next.ServeHTTP(cw, r)
		// A handler that wrote nothing gets net/http's implicit 200 after
		// this returns: its command must still be carried out.
		cw.check()
	})
}

// join puts a visitor without a pass in line (or finds its live session
// from the waiting page's cookie). When the room admits it at once it gets
// its pass and goes straight through, without a detour by the waiting page.
func (g *Gate) join(w http.ResponseWriter, r *http.Request, room string, o original, d decision, now time.Time) (waitroom.Session, decision, error) {
	var s waitroom.Session
	if d.session != nil {
		s = *d.session
	} else {
		// A room with a door: the waiting page asks for the invite or the
		// proof of work; the gate joins nobody past it. A session made here
		// gets the waiting page's cookie, so the page resumes it instead of
		// joining again.
		var err error
		s, err = g.admit.Enter(r, admit.Request{Room: room, StopAtDoor: true, Cookie: w, Secure: g.secure || o.tls()}, now)
		if errors.Is(err, admit.ErrGuarded) {
			return s, decision{}, nil
		}
		if err != nil {
			return s, d, err
		}
	}
	if s.Status != waitroom.StatusActive {
		return s, decision{}, nil
	}
	tok, p, err := g.passFor(r.Context(), s, now)
	if err != nil {
		if errors.Is(err, gate.ErrRevoked) {
			return s, decision{}, nil
		}
		return s, decision{}, err
	}
	c := gate.Claims{Room: room, Session: s.ID, Ticket: s.Ticket, IssuedAt: p.iat, Expires: p.exp}
	return s, decision{ok: true, claims: c, cookie: g.passCookie(room, tok, p.exp, o), fresh: true}, nil
}

// turnAway answers a visitor who must wait: browsers go to the waiting
// page, API clients get 503 with their Session and Retry-After.
func (g *Gate) turnAway(w http.ResponseWriter, r *http.Request, room string, o original, s waitroom.Session) {
	w.Header().Set("Cache-Control", "no-store")
	if !gate.WantsJSON(r) {
		http.Redirect(w, r, g.waitingURL(room, o), http.StatusSeeOther)
		return
	}
	if g.eta != nil && s.Status == waitroom.StatusWaiting {
		g.eta(&s, g.clock.Now())
	}
	retry := int64(5)
	if s.ETA != nil && s.ETA.Seconds > 0 {
		retry = min(max(s.ETA.Seconds, 1), 30)
	}
	h := w.Header()
	h.Set("Retry-After", strconv.FormatInt(retry, 10))
	h.Set("Content-Type", "application/json")
	h.Set(gate.HeaderLocation, g.waitingURL(room, o))
	w.WriteHeader(http.StatusServiceUnavailable)
	if s.ID == "" {
		_, _ = w.Write([]byte("{}\n")) // not in line yet: the waiting page's door comes first
		return
	}
	_, _ = w.Write(append(s.AppendJSON(nil), '\n'))
}

// commandWriter watches a handler's response headers for a
// Waitroom-Command. Unwrap lets http.ResponseController reach the real
// writer (flushing, deadlines, hijacking for WebSockets).
type commandWriter struct {
	http.ResponseWriter
	g    *Gate
	r    *http.Request
	done bool
}

func (cw *commandWriter) check() {
	if !cw.done {
		cw.done = true
		cw.g.command(cw.r.Context(), cw.ResponseWriter.Header(), cw.r)
	}
}

// WriteHeader carries out a command before the headers go out.
func (cw *commandWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		cw.check()
	}
	cw.ResponseWriter.WriteHeader(code)
}

// Write carries out a command before the implicit 200.
func (cw *commandWriter) Write(b []byte) (int, error) {
	cw.check()
	return cw.ResponseWriter.Write(b)
}

// Flush flushes, for handlers that assert http.Flusher.
func (cw *commandWriter) Flush() {
	cw.check()
	_ = http.NewResponseController(cw.ResponseWriter).Flush()
}

// Hijack hands over the connection, for WebSocket libraries that assert
// http.Hijacker.
func (cw *commandWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	cw.check()
	return http.NewResponseController(cw.ResponseWriter).Hijack()
}

// Unwrap returns the wrapped writer.
func (cw *commandWriter) Unwrap() http.ResponseWriter { return cw.ResponseWriter }

// bypass matches the paths that need no pass.
type bypass struct {
	prefixes, suffixes, patterns []string
}

func newBypass(rules []string) *bypass {
	b := &bypass{}
	for _, r := range rules {
		switch {
		case r == "":
		case strings.HasPrefix(r, "*") && !strings.ContainsAny(r[1:], "*?[/"):
			b.suffixes = append(b.suffixes, r[1:])
		case strings.ContainsAny(r, "*?["):
			b.patterns = append(b.patterns, r)
		default:
			b.prefixes = append(b.prefixes, r)
		}
	}
	return b
}

// match reports whether p needs no pass. The path is cleaned first, so
// "/static/../admin" is not mistaken for a static asset.
func (b *bypass) match(p string) bool {
	if b == nil || (len(b.prefixes) == 0 && len(b.suffixes) == 0 && len(b.patterns) == 0) {
		return false
	}
	if p == "" {
		p = "/"
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	if clean != p {
		return false
	}
	// A ';' is a path parameter to some servers (Tomcat, Jetty, Spring:
	// "/static/..;/admin" is "/admin" to them): such a path never passes
	// freely.
	if strings.Contains(p, ";") {
		return false
	}
	for _, pre := range b.prefixes {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	for _, suf := range b.suffixes {
		if strings.HasSuffix(p, suf) {
			return true
		}
	}
	for _, pat := range b.patterns {
		if ok, _ := path.Match(pat, p); ok {
			return true
		}
	}
	return false
}

// consoleCookie is the operator console's session cookie (the console's
// CookieName; package console is not imported here).
const consoleCookie = "waitroom_console"

// sessionCookiePrefix starts the waiting page's session cookies,
// admit.CookieName(room).
var sessionCookiePrefix = admit.CookieName("")

// privateCookie reports whether a cookie the visitor sent is waitroom's
// alone, never the app's to read: the console's sign-in (with it, a script
// or a log of the app would be the operator) and the waiting page's
// session ids. The pass cookie is not: an app may check the pass itself
// against the key set.
func privateCookie(name string) bool {
	return name == consoleCookie || strings.HasPrefix(name, sessionCookiePrefix)
}

// stripCookies removes waitroom's private cookies (see privateCookie) from
// the Cookie headers of a request on its way to the app, keeping the rest
// as they were.
func stripCookies(h http.Header) {
	lines := h["Cookie"]
	if len(lines) == 0 {
		return
	}
	kept := lines[:0]
	for _, line := range lines {
		if !strings.Contains(line, consoleCookie) && !strings.Contains(line, sessionCookiePrefix) {
			kept = append(kept, line)
			continue
		}
		var parts []string
		for _, part := range strings.Split(line, ";") {
			part = strings.TrimSpace(part)
			name, _, _ := strings.Cut(part, "=")
			if part != "" && !privateCookie(strings.TrimSpace(name)) {
				parts = append(parts, part)
			}
		}
		if len(parts) > 0 {
			kept = append(kept, strings.Join(parts, "; "))
		}
	}
	if len(kept) == 0 {
		h.Del("Cookie")
		return
	}
	h["Cookie"] = kept
}

// ownCookie reports whether a cookie name is one waitroom sets: the
// console's, the waiting page's session ids and the pass cookies
// (waitroom-<room>, __Host-waitroom-<room>).
func ownCookie(name string) bool {
	return name == consoleCookie || strings.HasPrefix(name, "waitroom-") || strings.HasPrefix(name, "__Host-waitroom-")
}

// stripSetCookies removes the app's Set-Cookie headers that name one of
// waitroom's cookies (see ownCookie) and returns how many it removed. An
// app, or whoever took it over, must not sign a visitor out of the
// console, swap their place in line for another, or clear their pass: only
// the gate sets those (a revoke is Waitroom-Command: revoke).
func stripSetCookies(h http.Header) int {
	lines := h["Set-Cookie"]
	if len(lines) == 0 {
		return 0
	}
	kept := lines[:0]
	for _, line := range lines {
		name, _, _ := strings.Cut(line, "=")
		if ownCookie(strings.TrimSpace(name)) {
			continue
		}
		kept = append(kept, line)
	}
	n := len(lines) - len(kept)
	if len(kept) == 0 {
		h.Del("Set-Cookie")
	} else {
		h["Set-Cookie"] = kept
	}
	return n
}
