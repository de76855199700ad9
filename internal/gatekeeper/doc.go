// Package gatekeeper is the server's door keeper: it gives every admitted
// session a signed pass (package gate's format) and enforces it in front
// of, or inside, the protected app.
//
// A Gate (New) signs passes (Fill, for the API and the event streams),
// checks them (Check, with a cache so a known pass costs a map lookup),
// records activity through the gate in batches (Touch), and refuses the
// pass of any session that ended, learning of ends from the store's events
// (so within a second in every process sharing the store).
//
// It enforces passes three ways:
//   - Proxy: a reverse proxy in front of an app (waitroom serve --upstream);
//   - Handler: forward-auth endpoints for Traefik and Caddy
//     (GET /v1/gate/{room}/forward-auth) and nginx's auth_request
//     (GET /v1/gate/{room}/auth-request), and the JWKS;
//   - Middleware: for net/http apps in the same process as a Gate.
//
// A browser without a pass is sent to the waiting page /r/{room} with a
// return_to of the URL it asked for. When it is admitted the page sends it
// back, and the gate sees the page's session cookie (waitroom-sid-<room>),
// reads the session, and, if it is active, sets the pass cookie
// (waitroom-<room>, or __Host-waitroom-<room> over TLS) and lets it in.
// Passes also come as Authorization: Bearer tokens, for API clients that
// read the pass from their Session.
package gatekeeper
