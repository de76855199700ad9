package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admintoken"
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

// right reports whether r carries the admin token as a bearer token, and
// whether it carries a bearer token at all (a guess to count). With no
// token configured, nothing is right.
func (a adminToken) right(r *http.Request) (right, presented bool) {
	token, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		return false, false
	}
	d := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(d[:], a.digest[:]) == 1 && a.set, true
}

// tokenCheck returns nil when r carries the admin token, else
// CodeUnauthorized, or rate_limited (429) once r's address has sent too many
// wrong tokens (admintoken.Guard): every check of the bearer token goes
// through here, so every route that takes it shares the one limit.
func (s *server) tokenCheck(r *http.Request) error {
	right, presented := s.admin.right(r)
	if !presented {
		return errUnauthorized
	}
	if err := s.guard.Check(r, right, admintoken.ViaAPI); err != nil {
		return err
	}
	if !right {
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
// Authorization header, a signed-in console. Wrong tokens are limited per
// address (tokenCheck); a console cookie is not a guess and is not.
func (s *server) adminCheck(r *http.Request) error {
	if _, ok := r.Header["Authorization"]; ok || s.console == nil {
		return s.tokenCheck(r)
	}
	return s.console.Authorize(r)
}
