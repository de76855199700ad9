package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admintoken"
	"github.com/waitroom/waitroom/internal/apierror"
	"github.com/waitroom/waitroom/internal/reqbody"
)

// CookieName is the name of the console's session cookie.
const CookieName = "waitroom_console"

// CSRFHeader carries the session's CSRF token on every request that
// changes something.
const CSRFHeader = "X-CSRF-Token"

// The session id is 16 random bytes followed by the session's expiry (Unix
// milliseconds, 8 bytes big-endian), base64url: 32 characters. Carrying the
// expiry under the MAC lets any process refuse an expired cookie without
// asking the store, and tell the page when its sign-in ends.
const (
	idRandomBytes = 16
	idBytes       = idRandomBytes + 8
	idLen         = idBytes / 3 * 4 // 24 bytes, a multiple of 3: no padding
	macLen        = 43              // base64url of 32 bytes, unpadded
	cookieLen     = idLen + 1 + macLen
)

var b64 = base64.RawURLEncoding

// b64Strict refuses the encodings that are not canonical (unused bits set
// in the last character), so one MAC has one spelling.
var b64Strict = base64.RawURLEncoding.Strict()

// The refusals. The first is word for word the admin API's own, since a
// request to /v1 with neither a bearer token nor a cookie gets it.
var (
	errNoCookie = waitroom.Errorf(waitroom.CodeUnauthorized,
		"This needs the admin token (Authorization: Bearer <token>).")
	errEnded = waitroom.Errorf(waitroom.CodeUnauthorized,
		"The console sign-in has ended or is not valid; sign in again.")
	errCSRF = waitroom.Errorf(apierror.CodeForbidden,
		"The X-CSRF-Token header is missing or wrong.")
	errWrongToken = waitroom.Errorf(waitroom.CodeUnauthorized,
		"The admin token is wrong.")
)

// Authorize returns nil when r carries a live console cookie and, unless
// its method is GET, HEAD or OPTIONS, the session's X-CSRF-Token. Otherwise
// it returns a *waitroom.Error: CodeUnauthorized without a cookie or with
// one that is forged, expired or signed out, apierror.CodeForbidden for a
// missing or wrong CSRF token, CodeUnavailable when the store cannot say.
// The MAC is checked first, so a forged cookie costs no store round trip.
func (c *Console) Authorize(r *http.Request) error {
	_, _, err := c.authorize(r)
	return err
}

// authorize is Authorize, returning the session's id and expiry.
func (c *Console) authorize(r *http.Request) (string, time.Time, error) {
	id, expires, err := c.cookieSession(r)
	if err != nil {
		return "", time.Time{}, err
	}
	now := c.clock.Now()
	if !now.Before(expires) {
		return "", time.Time{}, errEnded
	}
	live, err := c.ledger.ConsoleSession(r.Context(), id, now)
	if err != nil {
		return "", time.Time{}, waitroom.Unavailable(err, "console: reading a sign-in session")
	}
	if !live {
		return "", time.Time{}, errEnded
	}
	if !safeMethod(r.Method) && !c.csrfOK(id, r.Header.Get(CSRFHeader)) {
		return "", time.Time{}, errCSRF
	}
	return id, expires, nil
}

// safeMethod reports whether method changes nothing, so it needs no CSRF
// token.
func safeMethod(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// maxCookies bounds the cookies of that name looked at: a browser sends
// more than one only when another path or subdomain set one too.
const maxCookies = 4

// cookieSession returns the id and expiry of r's console cookie when its
// MAC is right, whatever the expiry.
func (c *Console) cookieSession(r *http.Request) (string, time.Time, error) {
	cookies := r.CookiesNamed(CookieName)
	if len(cookies) == 0 {
		return "", time.Time{}, errNoCookie
	}
	if !c.keys.set {
		return "", time.Time{}, errEnded
	}
	for i, ck := range cookies {
		if i == maxCookies {
			break
		}
		id, mac, ok := parseCookie(ck.Value)
		if !ok || !hmac.Equal(mac, c.keys.sum(id)) {
			continue
		}
		exp, _ := idExpiry(id)
		return id, exp, nil
	}
	return "", time.Time{}, errEnded
}

// parseCookie splits a cookie value "<id>.<mac>" and decodes the MAC. It
// checks only the form: the MAC is checked by the caller.
func parseCookie(v string) (id string, mac []byte, ok bool) {
	if len(v) != cookieLen || v[idLen] != '.' {
		return "", nil, false
	}
	id = v[:idLen]
	if _, ok := idExpiry(id); !ok {
		return "", nil, false
	}
	mac, err := b64Strict.DecodeString(v[idLen+1:])
	if err != nil || len(mac) != sha256.Size {
		return "", nil, false
	}
	return id, mac, true
}

// idExpiry decodes the expiry carried in an id of the right form.
func idExpiry(id string) (time.Time, bool) {
	if len(id) != idLen {
		return time.Time{}, false
	}
	b, err := b64Strict.DecodeString(id)
	if err != nil || len(b) != idBytes {
		return time.Time{}, false
	}
	ms := int64(binary.BigEndian.Uint64(b[idRandomBytes:]))
	if ms <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms).UTC(), true
}

// newID returns a fresh session id expiring at expires.
func newID(expires time.Time) (string, error) {
	var b [idBytes]byte
	if _, err := io.ReadFull(rand.Reader, b[:idRandomBytes]); err != nil {
		return "", err
	}
	binary.BigEndian.PutUint64(b[idRandomBytes:], uint64(expires.UnixMilli()))
	return b64.EncodeToString(b[:]), nil
}

// sum is HMAC-SHA256 of msg under the console key. The cookie's MAC is
// the sum of the id, the CSRF token that of "csrf\x00"+id: an id is
// base64url, so the two messages, and the two sums, never coincide.
func (k keys) sum(msg string) []byte {
	m := hmac.New(sha256.New, k.mac)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// cookieValue is the cookie value of session id.
func (k keys) cookieValue(id string) string {
	return id + "." + b64.EncodeToString(k.sum(id))
}

// csrfToken is the CSRF token of session id.
func (k keys) csrfToken(id string) string {
	return b64.EncodeToString(k.sum("csrf\x00" + id))
}

// csrfOK compares a request's CSRF token with the session's in constant
// time (only the length, which is public, can show through timing).
func (c *Console) csrfOK(id, got string) bool {
	want := c.keys.csrfToken(id)
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// tokenOK compares a token with the admin token through SHA-256 digests,
// so timing shows neither its bytes nor its length.
func (k keys) tokenOK(token string) bool {
	d := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(d[:], k.digest[:]) == 1 && k.set
}

// sessionAnswer is the body of a successful sign-in and of GET.
type sessionAnswer struct {
	CSRF      string `json:"csrf"`
	ExpiresAt string `json:"expires_at"`
}

func (c *Console) answer(id string, expires time.Time) sessionAnswer {
	return sessionAnswer{CSRF: c.keys.csrfToken(id), ExpiresAt: expires.UTC().Format(waitroom.TimeFormat)}
}

// crossSite reports whether a browser says another site's page sent r
// (Sec-Fetch-Site): such a sign-in is refused before it counts as a try, so
// a page elsewhere can neither guess from the operator's address nor use up
// its tries. Clients that are not browsers send no such header.
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return false
	}
	return true
}

var errCrossSite = waitroom.Errorf(apierror.CodeForbidden, "Sign in from the console page itself.")

// signInBody is the body of POST /admin/api/session.
type signInBody struct {
	Token string `json:"token"`
}

// parseSignIn decodes a sign-in body; unknown fields and trailing data are
// refused like everywhere in the API.
func parseSignIn(b []byte) (string, error) {
	var in signInBody
	if err := waitroom.DecodeJSON(b, &in); err != nil {
		return "", err
	}
	return in.Token, nil
}

// signIn exchanges the admin token for a session. The token is compared,
// then reported to the admin-token guard, which counts a wrong one against
// the client's address and refuses an address that has had too many with
// 429 whatever it sends (the decision and the count are one step, so even
// racing requests get at most admintoken.DefaultMaxWrong wrong answers a minute).
// A body that is not a sign-in at all is no guess and is not counted.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) error {
	if crossSite(r) {
		return errCrossSite
	}
	addr := c.trusted.Client(r)
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	token, err := parseSignIn(b)
	if err != nil {
		return err
	}
	right := c.keys.tokenOK(token)
	if err := c.guard.Check(r, right, admintoken.ViaConsole); err != nil {
		return err
	}
	if !right {
		return errWrongToken
	}

	now := c.clock.Now()
	expires := now.Add(c.lifetime).Truncate(time.Millisecond)
	id, err := newID(expires)
	if err != nil {
		return &waitroom.Error{Code: waitroom.CodeInternal, Message: "An internal error occurred.", Err: err}
	}
	if err := c.ledger.PutConsoleSession(r.Context(), id, expires); err != nil {
		return waitroom.Unavailable(err, "console: recording a sign-in session")
	}
	http.SetCookie(w, c.cookie(r, c.keys.cookieValue(id), int(c.lifetime/time.Second)))
	c.log.Info("console: signed in", "addr", addr.String(), "expires", expires)
	return writeJSON(w, http.StatusOK, c.answer(id, expires))
}

// whoAmI answers the session of a signed-in browser, so a page loaded
// anew learns its CSRF token.
func (c *Console) whoAmI(w http.ResponseWriter, r *http.Request) error {
	id, expires, err := c.authorize(r)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, c.answer(id, expires))
}

// signOut ends the session everywhere: it is deleted from the store, so
// every process refuses its cookie from now on. An expired session may
// still sign out (its cookie is cleared); the CSRF token is required.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request) error {
	id, _, err := c.cookieSession(r)
	if err != nil {
		return err
	}
	if !c.csrfOK(id, r.Header.Get(CSRFHeader)) {
		return errCSRF
	}
	if err := c.ledger.DeleteConsoleSession(r.Context(), id); err != nil {
		return waitroom.Unavailable(err, "console: deleting a sign-in session")
	}
	http.SetCookie(w, c.cookie(r, "", -1))
	c.log.Info("console: signed out", "addr", c.trusted.Client(r).String())
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// cookie builds the session cookie (maxAge < 0 clears it).
func (c *Console) cookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     CookieName,
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
		Secure:   c.secure || c.overTLS(r),
	}
}

// overTLS reports whether the browser reached us over TLS: directly, or
// through a trusted proxy that says so in X-Forwarded-Proto (the first
// value of a list, the one the proxy nearest the browser wrote).
func (c *Console) overTLS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if !c.trusted.FromProxy(r) {
		return false
	}
	p, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(p), "https")
}

// maxBody is the largest sign-in body read.
const maxBody = 4 << 10

// bodyReadTimeout bounds the time to read a body, so a client sending a
// byte at a time cannot hold a connection.
const bodyReadTimeout = 10 * time.Second

// readBody reads the whole body, refusing more than maxBody bytes (at once
// if Content-Length says so).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > maxBody {
		return nil, reqbody.TooLarge(maxBody)
	}
	return reqbody.Read(w, r, maxBody, bodyReadTimeout)
}
