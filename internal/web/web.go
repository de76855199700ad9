package web

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/apierror"
	"github.com/waitroom/waitroom/internal/roomview"
)

// Paths the handler serves. A server mounts the handler on these prefixes
// (DemoPrefix only with Config.Demo) and routes everything else elsewhere.
const (
	// PagePrefix is followed by a room name: /r/{room} is the waiting page.
	PagePrefix = "/r/"
	// ClientPath is the JavaScript client.
	ClientPath = "/waitroom.js"
	// TypesPath is the TypeScript declarations of the JavaScript client.
	TypesPath = "/waitroom.d.ts"
	// AssetPrefix holds the page's own script and style sheet.
	AssetPrefix = "/waitroom/"
	// ClaimPrefix is followed by a room name and a session id:
	// /claim/{room}/{id} is the claim page of a held place (the path
	// waitroom.ClaimPath builds, which webhooks send).
	ClaimPrefix = "/claim/"
	// DemoPrefix holds the demo (Config.Demo): /demo/ is a page that puts
	// each tab in the demo room's line, DemoAppPath the sample app.
	DemoPrefix = "/demo/"
)

// The demo's room and the path of its sample app, which is the room's
// target_url. The room is not "demo", which the README's walkthrough (and
// so many an operator's first room) uses: --demo must not meet a room of
// someone else's.
const (
	DemoRoom    = "demo-room"
	DemoAppPath = "/demo/app/"
)

// Prefixes returns the paths a server routes to a handler made with cfg:
// PagePrefix, ClientPath, TypesPath, AssetPrefix, ClaimPrefix, with
// cfg.Demo DemoPrefix and with cfg.Home HomePath.
func Prefixes(cfg Config) []string {
	p := []string{PagePrefix, ClientPath, TypesPath, AssetPrefix, ClaimPrefix}
	if cfg.Demo {
		p = append(p, DemoPrefix)
	}
	if cfg.Home {
		p = append(p, HomePath)
	}
	return p
}

// Config holds what the handler needs.
type Config struct {
	// Store holds the rooms. It is required.
	Store waitroom.Store
	// Rooms is the room view over Store that the pages read rooms'
	// configurations from (target, refresh, door, tiers; and, for
	// FailOpen, the last known target). It is required.
	Rooms *roomview.View
	// Clock gives the now passed to the store; nil means waitroom.SystemClock.
	Clock waitroom.Clock
	// ETA completes a waiting session with its estimated wait (the
	// eta.Estimator's Fill); nil leaves estimates out.
	ETA func(s *waitroom.Session, now time.Time)
	// Templates is a folder of operator templates; "" uses only the
	// built-in page. See the package documentation.
	Templates string
	// Logger receives store failures; nil discards them.
	Logger *slog.Logger
	// Secure marks the session cookie Secure on every response. When false
	// it is marked Secure on requests that arrived over TLS, directly or
	// (X-Forwarded-Proto: https) through a proxy.
	Secure bool
	// PublicURL is the origin (scheme://host[:port]) browsers reach the
	// pages at, when a proxy in front may change the Host header: a POST
	// whose Origin is this one is the pages' own. "" means the request's
	// Host alone.
	PublicURL string
	// Admit makes the sessions the page joins (its door's invites and
	// challenges, the per-address rate, the caps); share the API's, so every
	// way of joining uses one door and one allowance. It is required; an
	// Admission without a door lets rooms that ask for an invite or a
	// challenge join on the first visit like any other.
	Admit *admit.Admission
	// FailOpen, when set and true, lets a visitor through while the store is
	// unreachable: the page sends them to the room's target as last seen
	// in Rooms (see package outage; a room the view forgot, unread for
	// roomview's IdleAfter, has none). Unset or false, the page says the line is
	// paused and tries again by itself (fail closed).
	FailOpen func() bool
	// Demo serves the demo of room DemoRoom (which the server creates):
	// DemoAppPath is a sample app behind the room that shows "you are in"
	// with a Leave button, and DemoPrefix itself a page that puts each
	// browser tab in the line as one more person, using /waitroom.js.
	Demo bool
	// Home serves the home page at HomePath (the server's root), unless the
	// root is someone else's (the app --upstream protects).
	Home bool
}

// Handler serves the waiting pages, the JavaScript client and (optionally)
// the demo. It holds no room state (rooms are the room view's); every
// request is one to three Store calls. It is safe for concurrent use.
type Handler struct {
	store  waitroom.Store
	rooms  *roomview.View
	clock  waitroom.Clock
	eta    func(s *waitroom.Session, now time.Time)
	log    *slog.Logger
	secure bool
	// public is Config.PublicURL without a trailing slash.
	public string
	// failOpen says whether to send visitors to a room's last known
	// target while the store is down.
	failOpen func() bool
	admit    *admit.Admission
	pages    *pageTemplates
	mux      *http.ServeMux
	// demo says whether the demo is served (the home page links it).
	demo bool
}

// New returns the handler for cfg. It fails when cfg.Templates cannot be
// read or a template in it does not parse or does not run on sample data;
// the error names the file and the problem.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("web: Config.Store is nil")
	}
	if cfg.Rooms == nil {
		return nil, fmt.Errorf("web: Config.Rooms is nil")
	}
	if cfg.Admit == nil {
		return nil, fmt.Errorf("web: Config.Admit is nil")
	}
	if cfg.Clock == nil {
		cfg.Clock = waitroom.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	pages, err := loadTemplates(cfg.Templates)
	if err != nil {
		return nil, err
	}
	h := &Handler{
		store:    cfg.Store,
		rooms:    cfg.Rooms,
		clock:    cfg.Clock,
		eta:      cfg.ETA,
		log:      cfg.Logger,
		secure:   cfg.Secure,
		public:   strings.TrimSuffix(cfg.PublicURL, "/"),
		failOpen: cfg.FailOpen,
		admit:    cfg.Admit,
		pages:    pages,
		mux:      http.NewServeMux(),
		demo:     cfg.Demo,
	}
	h.routes(cfg.Demo, cfg.Home)
	return h, nil
}

// NewHandler is New for configurations that cannot fail: it panics when New
// returns an error (a missing Store, or operator templates that do not
// parse). Servers that take a templates folder from their operator call New
// and report the error.
func NewHandler(cfg Config) http.Handler {
	h, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return h
}

// routes registers every path the handler answers.
func (h *Handler) routes(demo, home bool) {
	m := h.mux
	m.HandleFunc("GET /r/{room}", h.page)
	m.HandleFunc("POST /r/{room}", h.rejoin)
	m.HandleFunc("POST /r/{room}/join", h.join)
	m.HandleFunc("GET "+ClaimPrefix+"{room}/{id}", h.claimPage)
	m.HandleFunc("POST "+ClaimPrefix+"{room}/{id}", h.claim)
	m.HandleFunc("GET "+ClientPath, h.asset(clientJS))
	m.HandleFunc("GET "+TypesPath, h.asset(clientTypes))
	for _, a := range pageAssets {
		m.HandleFunc("GET "+AssetPrefix+a.name, h.asset(a))
	}
	if demo {
		m.HandleFunc("GET "+DemoPrefix+"{$}", h.demoClient)
		m.HandleFunc("GET "+DemoAppPath+"{$}", h.demoApp)
	}
	if home {
		m.HandleFunc("GET "+HomePath, h.home)
	}
}

// ServeHTTP sets the security headers every answer carries and dispatches.
// Paths the handler does not know get the friendly 404 page.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	if _, pattern := h.mux.Handler(r); pattern == "" {
		if allow := h.allowed(r); allow != "" {
			// A route of another method, such as GET /r/{room}/join, whether
			// or not the room exists: 405 with Allow in the API's JSON, as
			// every route of the server answers a method it does not serve.
			hd.Set("Allow", allow)
			hd.Set("Cache-Control", "no-store")
			apierror.WriteMessage(w, http.StatusMethodNotAllowed, waitroom.CodeMethodNotAllowed,
				"This page is not answered to "+clipMethod(r.Method)+"; allowed: "+allow+".")
			return
		}
		lang := pickLanguage(r.Header.Get("Accept-Language"))
		h.errorPage(w, r, lang, apierror.Status(waitroom.CodeNotFound), lang.NotFoundTitle, lang.PageNotFound)
		return
	}
	if r.Method == http.MethodPost && h.crossOrigin(r) {
		h.forbidCrossOrigin(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// allowed returns the methods a route serves r's path with, as an Allow
// header ("GET, HEAD, POST"), or "" when no route serves the path.
func (h *Handler) allowed(r *http.Request) string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		o := r.Clone(r.Context())
		o.Method = m
		if _, pattern := h.mux.Handler(o); pattern != "" {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	return strings.Join(allow, ", ")
}

// clipMethod keeps a method short enough to quote.
func clipMethod(m string) string {
	if len(m) > 16 {
		return m[:16] + "…"
	}
	return m
}

// nonce returns a fresh value for the Content-Security-Policy nonce that
// lets an operator template carry inline scripts and styles.
func nonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	// URL-safe: no "+" or "/", which templates would escape in nonce="…".
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// htmlHeaders sets the headers of an HTML answer: its type, language, the
// Content-Security-Policy (nothing but this origin, plus inline code that
// carries nonce), and no caching, since the page is one person's.
func htmlHeaders(w http.ResponseWriter, lang *Messages, nonce string) {
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Language", lang.Lang)
	hd.Set("Cache-Control", "no-store")
	hd.Set("Vary", "Accept-Language, Cookie")
	hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'nonce-"+nonce+
		"'; style-src 'self' 'nonce-"+nonce+"'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
}

// errorData is what the built-in error page receives.
type errorData struct {
	Lang    string
	T       *Messages
	Heading string
	Body    string
	// Detail is the server's own message (in English, as every
	// waitroom.Error message is), shown below Body when set.
	Detail string
	// Refresh, when positive, reloads the page after that many seconds.
	Refresh int
	Style   template.URL
	Nonce   string
}

// errorPage writes a friendly HTML error in the visitor's language.
func (h *Handler) errorPage(w http.ResponseWriter, r *http.Request, lang *Messages, status int, heading, body string) {
	h.retryPage(w, r, lang, status, heading, body, "", 5)
}

// retryPage is errorPage with the server's own message (detail, "" for
// none) and the seconds after which a 429 or 503 page reloads itself (and
// says so in Retry-After).
func (h *Handler) retryPage(w http.ResponseWriter, r *http.Request, lang *Messages, status int, heading, body, detail string, retry int64) {
	d := errorData{Lang: lang.Lang, T: lang, Heading: heading, Body: body, Detail: detail, Style: styleCSS.url(), Nonce: nonce()}
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		d.Refresh = int(max(retry, 1))
		w.Header().Set("Retry-After", strconv.Itoa(d.Refresh))
	}
	htmlHeaders(w, lang, d.Nonce)
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	if err := builtin.ExecuteTemplate(w, "error.html", d); err != nil {
		h.log.Error("web: error page", "err", err)
	}
}

// storeError answers a store failure, with the status of its code (the
// one map, apierror's): unknown rooms get the 404 page, a join after the
// room closed or sold out the 409 page with the store's message, a backend
// that is down the 503 page that retries by itself, the rest 500.
func (h *Handler) storeError(w http.ResponseWriter, r *http.Request, lang *Messages, room string, err error) {
	code := waitroom.ErrorCode(err)
	switch code {
	case waitroom.CodeRoomNotFound:
		h.errorPage(w, r, lang, apierror.Status(code), lang.NotFoundTitle, fill(lang.NotFoundBody, "room", shorten(room)))
	case waitroom.CodeInvalidRoomName:
		h.errorPage(w, r, lang, apierror.Status(code), lang.BadRoomTitle, fill(lang.BadRoomBody, "room", shorten(room)))
	case waitroom.CodeRateLimited, waitroom.CodeRoomFull:
		// The join limits (package limit): the same refusal as the API's.
		retry, _ := apierror.RetryAfter(err)
		h.retryPage(w, r, lang, apierror.Status(code), lang.BusyTitle, lang.BusyBody, "", retry)
	case waitroom.CodeRoomClosed:
		// Joining ended at the room's closes_at, for good: no reload. The
		// store's message says when; it is written to be shown.
		h.retryPage(w, r, lang, apierror.Status(code), lang.ClosedTitle, lang.ClosedBody, waitroom.ErrorMessage(err), 0)
	case waitroom.CodeSoldOut:
		// Everything was sold: the line has ended, and nothing is left to
		// wait for, so no reload either.
		h.retryPage(w, r, lang, apierror.Status(code), lang.SoldOutTitle, lang.SoldOutBody, waitroom.ErrorMessage(err), 0)
	case waitroom.CodeUnavailable:
		h.log.Warn("web: store unavailable", "room", room, "err", err)
		if h.failOpen != nil && h.failOpen() {
			if snap := h.rooms.Known(room); snap != nil {
				if target := h.destination(r, *snap.Config); target != "" {
					http.Redirect(w, r, target, http.StatusSeeOther)
					return
				}
			}
		}
		h.errorPage(w, r, lang, apierror.Status(code), lang.UnavailableTitle, lang.UnavailableBody)
	default:
		h.log.Error("web: store failure", "room", room, "err", err)
		h.errorPage(w, r, lang, apierror.Status(waitroom.CodeInternal), lang.ErrorTitle, lang.ErrorBody)
	}
}
