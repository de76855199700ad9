// Package gate verifies waitroom's passes: the signed tokens (JWTs, EdDSA by
// default, HS256 as an option) that a waitroom server gives every admitted
// session, for an app to check before it serves a visitor.
//
// It is what an app embeds to trust waitroom without calling it:
//   - KeySet holds the signing keys (LoadKeys reads the folder a server
//     writes; its ServeHTTP is the JWKS);
//   - Verify checks a token offline; a Verifier does the same from a key
//     set or a server's JWKS URL, and its Require is net/http middleware
//     that sends visitors without a pass to the waiting page;
//   - Claims is what a valid pass says, and ClaimsFrom finds it in a
//     request's context.
//
// A pass names its session by ticket (its subject), never by session id:
// the id owns the session, and a pass is seen by apps, their logs and
// whatever they hand it to. The id rides in the pass sealed for the key
// that signed it, so Verify reads it (Claims.Session) only with that key's
// private half; with the public keys of a JWKS it stays hidden.
//
// A pass cannot tell whether its session has since ended; a waitroom
// server's own gate (forward-auth, the reverse proxy) also refuses passes
// of ended sessions within a second. That gate lives in the server (package
// server), not here.
package gate
