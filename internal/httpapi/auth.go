package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/waitroom/waitroom"
)

// adminToken checks the admin bearer token. It keeps only the token's
// SHA-256 digest: comparing fixed-length digests in constant time reveals
// neither the token's bytes nor its length through timing.
type adminToken struct {
	digest [sha256.Size]byte
	set    bool
}

func newAdminToken(token string) adminToken {
	if token == "" {
		return adminToken{}
	}
	return adminToken{digest: sha256.Sum256([]byte(token)), set: true}
}

var errUnauthorized = waitroom.Errorf(waitroom.CodeUnauthorized, "This needs the admin token (Authorization: Bearer <token>).")

// check returns CodeUnauthorized unless r carries the admin token. With no
// token configured, nothing passes.
func (a adminToken) check(r *http.Request) error {
	token, ok := bearer(r.Header.Get("Authorization"))
	if !ok || !a.set {
		return errUnauthorized
	}
	d := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(d[:], a.digest[:]) != 1 {
		return errUnauthorized
	}
	return nil
}

// bearer extracts the token of an "Authorization: Bearer <token>" header.
// The scheme is case-insensitive (RFC 9110).
func bearer(h string) (string, bool) {
	const scheme = "Bearer "
	if len(h) <= len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", false
	}
	return h[len(scheme):], true
}

// adminOnly serves f only to requests that carry the admin token. The check
// comes before anything else, so an unauthenticated caller learns nothing
// about rooms, not even whether a name is valid.
func (s *server) adminOnly(f func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return s.api(func(w http.ResponseWriter, r *http.Request) error {
		if err := s.adminCheck(r); err != nil {
			return err
		}
		return f(w, r)
	})
}

// Authorizer admits requests by something other than the bearer token: the
// operator console's signed session cookie (console.Console).
type Authorizer interface {
	// Authorize returns nil when r may use the admin endpoints, else the
	// *waitroom.Error to answer.
	Authorize(r *http.Request) error
}

// adminAsked reports whether a request to an endpoint that anyone may call
// (DELETE of a session) asks to act as the admin: it carries the bearer
// token, or it comes from the console, which always sends its CSRF token.
func (s *server) adminAsked(r *http.Request) bool {
	if _, ok := r.Header["Authorization"]; ok {
		return true
	}
	_, csrf := r.Header["X-Csrf-Token"]
	return csrf && s.console != nil
}

// adminCheck admits the admin token, or, on a request without an
// Authorization header, a signed-in console.
func (s *server) adminCheck(r *http.Request) error {
	if _, ok := r.Header["Authorization"]; ok || s.console == nil {
		return s.admin.check(r)
	}
	return s.console.Authorize(r)
}
