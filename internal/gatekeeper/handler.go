package gatekeeper

import (
	"errors"
	"net/http"

	"github.com/waitroom/waitroom/gate"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/apierror"
)

// Paths of the handler Handler returns.
const (
	// ForwardAuthPath is the Traefik/Caddy forward-auth endpoint.
	ForwardAuthPath = "/v1/gate/{room}/forward-auth"
	// AuthRequestPath is the nginx auth_request endpoint.
	AuthRequestPath = "/v1/gate/{room}/auth-request"
	// JWKSPath publishes the public keys that verify passes.
	JWKSPath = "/.well-known/jwks.json"
	// Prefix is the path prefix of the gate's own routes under /v1/.
	Prefix = "/v1/gate/"
)

// Handler serves the forward-auth and auth-request endpoints and the JWKS.
// A server mounts it on Prefix and JWKSPath. The endpoints answer every
// method but TRACE and CONNECT (see refusedMethod), because nginx's
// auth_request subrequest keeps the visitor's.
func (g *Gate) Handler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc(ForwardAuthPath, g.forwardAuth)
	m.HandleFunc(AuthRequestPath, g.authRequest)
	m.Handle("GET "+JWKSPath, g.keys)
	m.HandleFunc(JWKSPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, waitroom.CodeMethodNotAllowed, "The key set is read with GET.")
	})
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, waitroom.CodeNotFound, "There is no such route.")
	})
	return m
}

// forwardAuth: Traefik's forwardAuth and Caddy's forward_auth. An admitted
// visitor gets 200 with identity headers. A visitor whose session was just
// admitted gets the pass: browsers by a 307 back to the original URL with
// the cookie (Caddy drops the Set-Cookie of a 2xx), API clients by 200
// with the cookie. Anyone else: browsers 303 to the waiting page, API
// clients 401 JSON with the waiting page in Waitroom-Location.
func (g *Gate) forwardAuth(w http.ResponseWriter, r *http.Request) {
	g.authEndpoint(w, r, true)
}

// authRequest: nginx auth_request, which understands only 2xx, 401 and
// 403. Admitted: 204 with identity headers and, when a pass is issued or
// renewed, a Set-Cookie the config copies to the visitor's response.
// Otherwise 401 with the waiting page in Waitroom-Location.
func (g *Gate) authRequest(w http.ResponseWriter, r *http.Request) {
	g.authEndpoint(w, r, false)
}

func (g *Gate) authEndpoint(w http.ResponseWriter, r *http.Request, redirects bool) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	room := r.PathValue("room")
	if !waitroom.ValidRoomName(room) {
		writeError(w, waitroom.CodeInvalidRoomName, "That is not a valid room name.")
		return
	}
	now := g.clock.Now()
	o := g.original(r)
	if refusedMethod(r.Method) || (g.trusted.FromProxy(r) && refusedMethod(o.method)) {
		methodNotAllowed(w)
		return
	}
	if !g.trusted.FromProxy(r) {
		// The request is the proxy's question, not the visitor's page:
		// without a trusted account of that page there is nowhere to
		// return to.
		o.uri, o.method = "", ""
	}
	d, err := g.decide(r.Context(), r, room, o, now)
	if err != nil {
		if waitroom.ErrorCode(err) == waitroom.CodeUnavailable && g.failOpen != nil && g.failOpen() {
			// Fail open: let the request through, with no identity.
			w.WriteHeader(http.StatusOK)
			return
		}
		g.storeError(w, err)
		return
	}
	if d.ok {
		if d.cookie != nil {
			http.SetCookie(w, d.cookie)
			if redirects && d.fresh && !gate.WantsJSON(r) && o.host != "" && o.uri != "" {
				if to, ok := g.selfURL(o); ok {
					h.Set("Location", to)
					w.WriteHeader(http.StatusTemporaryRedirect)
					return
				}
			}
		}
		setIdentity(h, d.claims)
		if !g.trusted.FromProxy(r) {
			// The answer goes back to whoever asked, and anyone holding a
			// pass can ask: only a trusted proxy, which hands the identity
			// to the app and not to the visitor, gets the session id (a
			// secret). Room and ticket are public.
			h.Del(gate.HeaderSession)
		}
		if redirects {
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusNoContent)
		}
		return
	}
	loc := g.waitingURL(room, o)
	h.Set(gate.HeaderLocation, loc)
	if redirects && !gate.WantsJSON(r) {
		h.Set("Location", loc)
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	writeError(w, waitroom.CodeUnauthorized, "No valid pass for this room; join the line at the waiting page.")
}

// selfURL is the visitor's original URL, when the gate may send them there.
func (g *Gate) selfURL(o original) (string, bool) {
	allowed := map[string]bool{}
	for k := range g.origins {
		allowed[k] = true
	}
	if g.allowedOrigin(o.origin(), o) {
		allowed[o.origin()] = true
	}
	return SafeReturn(o.url(), allowed)
}

// storeError answers a store failure or an unknown room, with the status
// of its code and the gate's own messages: the store's may name more than
// a protected app's visitor should read.
func (g *Gate) storeError(w http.ResponseWriter, err error) {
	code := waitroom.ErrorCode(err)
	var e *waitroom.Error
	msg := "The waiting room cannot check passes right now; try again shortly."
	// A store that is down is asked again after 2 seconds, not the API's
	// 1: every request of the protected app comes through the gate.
	retry := int64(2)
	switch code {
	case waitroom.CodeRoomNotFound:
		msg = "There is no such room."
	case waitroom.CodeUnavailable:
	case waitroom.CodeRateLimited, waitroom.CodeRoomFull:
		// A join limit refused the visitor's join (package limit).
		retry = apierror.DefaultRetryAfter
		msg = "Too many people are joining right now; try again in a moment."
	default:
		if errors.As(err, &e) && e.Code != waitroom.CodeInternal && apierror.Status(e.Code) < 500 {
			// The room refused a join on the visitor's behalf: the API's
			// status for its code (409 room_closed, 409 sold_out, …).
			msg = e.Message
		} else {
			code = waitroom.CodeInternal
			msg = "Something went wrong."
		}
	}
	status := apierror.Status(code)
	if status >= 500 {
		g.log.Error("gate: store failure", "err", err)
	}
	apierror.SetRetryAfter(w.Header(), status, err, retry)
	apierror.WriteMessage(w, status, code, msg)
}

// writeError answers code with its status and msg.
func writeError(w http.ResponseWriter, code waitroom.Code, msg string) {
	apierror.WriteMessage(w, apierror.Status(code), code, msg)
}

// gateMethods are the methods the gate answers; Allow lists them.
const gateMethods = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"

// refusedMethod reports whether the gate refuses method: TRACE, which an
// app may answer by echoing the request, pass cookie included, and
// CONNECT, which would make the gate a tunnel. Neither is ever let through
// to a protected app.
func refusedMethod(method string) bool {
	return method == http.MethodTrace || method == http.MethodConnect
}

// methodNotAllowed answers a refused method with 405 and Allow.
func methodNotAllowed(w http.ResponseWriter) {
	w.Header().Set("Allow", gateMethods)
	writeError(w, waitroom.CodeMethodNotAllowed, "TRACE and CONNECT are not let through the waiting room's gate.")
}
