package server

import (
	"net"
	"net/http"
	"strings"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/apierror"
	"github.com/waitroom/waitroom/internal/httpapi"
)

// The operator console on a host of its own (Config.ConsoleHost). Served on
// the protected app's origin, the console is the app's too: any script
// running there (an XSS in the app) could read the console's CSRF token
// with the operator's cookie and change rooms. On a host of its own it is
// another origin, which the browser keeps the app's scripts from reading;
// its cookie, host-only, never goes to the app's host; and the admin API
// takes the cookie only on that host, so a cookie sent elsewhere (the same
// host name on another port shares cookies) is worth nothing.

// onConsoleHost reports whether r was sent to host: the Host header the
// browser wrote, compared whole when host names a port, else by its name.
func onConsoleHost(r *http.Request, host string) bool {
	got := r.Host
	if _, _, err := net.SplitHostPort(host); err != nil {
		if name, _, err := net.SplitHostPort(got); err == nil {
			got = name
		}
		got = strings.Trim(got, "[]")
		host = strings.Trim(host, "[]")
	}
	return strings.EqualFold(got, host)
}

// consoleOnHost serves the console's routes on host alone; elsewhere they
// are no route.
func consoleOnHost(host string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !onConsoleHost(r, host) {
			apierror.WriteMessage(w, http.StatusNotFound, waitroom.CodeNotFound, "There is no such route.")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// hostAuthorizer accepts the console's cookie for the admin API on the
// console's host alone.
type hostAuthorizer struct {
	host string
	next httpapi.Authorizer
}

// errNoAdmin is the admin API's own refusal of a request without the token.
var errNoAdmin = waitroom.Errorf(waitroom.CodeUnauthorized, "This needs the admin token (Authorization: Bearer <token>).")

func (a hostAuthorizer) Authorize(r *http.Request) error {
	if !onConsoleHost(r, a.host) {
		return errNoAdmin
	}
	return a.next.Authorize(r)
}

// validConsoleHost accepts host or host:port, nothing that is not part of a
// Host header.
func validConsoleHost(h string) bool {
	if h == "" || len(h) > 255 || strings.ContainsAny(h, "/\\@?#% \t") {
		return false
	}
	name := h
	if n, port, err := net.SplitHostPort(h); err == nil {
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return false
		}
		name = n
	}
	return strings.Trim(name, "[]") != ""
}
