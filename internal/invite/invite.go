// Package invite signs, parses and verifies invite tokens: a token lets a
// person join a waiting room, optionally under an identity key and in a
// priority tier, a limited number of times before an expiry.
//
// The package does not count uses; the store does, keyed by the token's ID.
//
// # Token format
//
// The format is public so that operators can mint tokens in their own
// backends, in any language. A token is three parts joined by dots:
//
//	wr1.<payload>.<signature>
//
// "wr1" names the format's version. <payload> is the base64url encoding,
// without padding (RFC 4648 section 5), of a UTF-8 JSON object:
//
//	{"alg":"ed","room":"drop","id":"k3L9vQ2xR0mH8aTb1cYw4g","tier":"vip","key":"alice@example.com","uses":2,"exp":1767225600}
//
// with these members and no others:
//
//   - alg (required): "hs" for HMAC-SHA256 with the server's secret, used by
//     tokens the server's admin API issues; "ed" for Ed25519 with an
//     operator's private key whose public half is in the room's invite_keys.
//   - room (required): the room the token admits to; a valid room name.
//   - id (required): 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-',
//     unique per token (16 random bytes in base64url are a good choice).
//     Uses are counted per id.
//   - tier (optional): a priority tier name, up to 64 bytes of printable
//     UTF-8.
//   - key (optional): an identity key the person joins under, up to 256
//     bytes of printable UTF-8. A key holds one live session per room: a
//     join with a token whose uses are spent is refused as used before its
//     key is looked at, and one whose key is already in line is refused as
//     already joined, naming the live session only to its holder (the
//     session's cookie). A copy of the link never reaches the place.
//   - uses (optional): how many joins the token allows, 1 to 1000000;
//     1 when absent.
//   - exp (required): the expiry as an integer count of Unix seconds; the
//     token is refused from that second on.
//
// <signature> is the base64url encoding, without padding, of the signature
// over the ASCII bytes "wr1.<payload>" (the first two parts and the dot
// between them, exactly as they appear in the token): the 32-byte
// HMAC-SHA256 for "hs", the 64-byte Ed25519 signature (RFC 8032, pure
// Ed25519) for "ed".
//
// A whole token is at most 2048 bytes. Base64 must be canonical: no padding,
// no characters outside the base64url alphabet, and zero unused bits.
//
// Public keys are configured as the standard base64 of the 32 raw key bytes
// (see FormatPublicKey); private keys are kept as the base64 of the 32-byte
// seed (see FormatPrivateKey). The example of SignEd25519 is a test vector.
package invite

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
)

// Limits of the format.
const (
	// MaxTokenLen is the longest token Verify accepts, in bytes.
	MaxTokenLen = 2048
	// MaxIDLen is the longest token ID.
	MaxIDLen = 64
	// MaxTierLen is the longest tier name, in bytes.
	MaxTierLen = 64
	// MaxUses is the most uses one token may allow.
	MaxUses = 1_000_000
)

// The signature algorithms, as they appear in the payload's "alg" member.
const (
	algHMAC    = "hs"
	algEd25519 = "ed"
)

// prefix starts every token and names the format's version.
const prefix = "wr1."

// maxExp is the latest expiry, the last second of year 9999, so every
// expiry converts to a time.Time and back without surprise.
const maxExp = 253402300799

// b64 is the token's base64: URL alphabet, no padding, zero unused bits.
var b64 = base64.RawURLEncoding.Strict()

// Claims is what a token asserts. The JSON encoding of Claims is the
// payload's, without "alg".
type Claims struct {
	// Room is the room the token admits to.
	Room string `json:"room"`
	// ID identifies the token; the store counts uses per ID.
	ID string `json:"id"`
	// Tier is the priority tier the person joins in; empty for none.
	Tier string `json:"tier,omitempty"`
	// Key is the identity key the person joins under; empty for none.
	Key string `json:"key,omitempty"`
	// Uses is how many joins the token allows. Zero when signing means 1;
	// Verify always returns 1 to MaxUses.
	Uses int `json:"uses,omitempty"`
	// Expires is when the token stops being accepted, in whole seconds.
	Expires time.Time `json:"exp"`
}

// wire is the payload as JSON carries it.
type wire struct {
	Alg  string `json:"alg,omitempty"`
	Room string `json:"room"`
	ID   string `json:"id"`
	Tier string `json:"tier,omitempty"`
	Key  string `json:"key,omitempty"`
	Uses *int   `json:"uses,omitempty"`
	Exp  int64  `json:"exp"`
}

// toWire returns c as the payload of alg, with Uses 1 left out to keep
// tokens short.
func (c Claims) toWire(alg string) wire {
	w := wire{Alg: alg, Room: c.Room, ID: c.ID, Tier: c.Tier, Key: c.Key}
	if c.Uses != 0 && c.Uses != 1 {
		uses := c.Uses
		w.Uses = &uses
	}
	if !c.Expires.IsZero() {
		w.Exp = c.Expires.Unix()
	}
	return w
}

// claims returns the Claims of w, with an absent uses read as 1.
func (w wire) claims() Claims {
	c := Claims{Room: w.Room, ID: w.ID, Tier: w.Tier, Key: w.Key, Uses: 1}
	if w.Uses != nil {
		c.Uses = *w.Uses
	}
	if w.Exp != 0 {
		c.Expires = time.Unix(w.Exp, 0)
	}
	return c
}

// MarshalJSON encodes c as the token payload does, with exp in Unix
// seconds and no "alg".
func (c Claims) MarshalJSON() ([]byte, error) {
	return encodeJSON(c.toWire(""))
}

// UnmarshalJSON decodes a payload-shaped object into c. An "alg" member is
// accepted and ignored; an absent "uses" reads as 1. It does not validate.
func (c *Claims) UnmarshalJSON(b []byte) error {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("decode invite claims: %w", err)
	}
	*c = w.claims()
	return nil
}

// encodeJSON marshals v without HTML escaping, which would only lengthen
// keys holding '<', '>' or '&'.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode invite claims: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// NewID returns a fresh token ID: 16 random bytes in base64url without
// padding, 22 characters.
func NewID() string {
	var b [16]byte
	// crypto/rand.Read never returns an error; it crashes the program
	// irrecoverably instead when the system's randomness fails.
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// SignHMAC returns the "hs" token of c signed with the server's secret. It
// fails with a CodeInvalidRequest *waitroom.Error when c is not valid and
// with a plain error when secret is empty.
func SignHMAC(c Claims, secret []byte) (string, error) {
	if len(secret) == 0 {
		return "", errors.New("sign invite: the HMAC secret is empty")
	}
	signed, err := signingInput(c, algHMAC)
	if err != nil {
		return "", err
	}
	return finish(signed, macOf(secret, signed))
}

// SignEd25519 returns the "ed" token of c signed with priv. It fails with a
// CodeInvalidRequest *waitroom.Error when c is not valid and with a plain
// error when priv is not an Ed25519 private key.
func SignEd25519(c Claims, priv ed25519.PrivateKey) (string, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return "", fmt.Errorf("sign invite: an Ed25519 private key is %d bytes, got %d", ed25519.PrivateKeySize, len(priv))
	}
	signed, err := signingInput(c, algEd25519)
	if err != nil {
		return "", err
	}
	return finish(signed, ed25519.Sign(priv, []byte(signed)))
}

// signingInput validates c and returns "wr1.<payload>" for alg.
func signingInput(c Claims, alg string) (string, error) {
	if c.Uses == 0 {
		c.Uses = 1
	}
	if msg := check(c); msg != "" {
		return "", waitroom.Errorf(waitroom.CodeInvalidRequest, "The invite cannot be signed: %s", msg)
	}
	payload, err := encodeJSON(c.toWire(alg))
	if err != nil {
		return "", err
	}
	return prefix + b64.EncodeToString(payload), nil
}

// finish appends the signature to signed and checks the length limit,
// which valid claims always meet; the check guards against a change to
// the limits that would mint tokens Verify refuses.
func finish(signed string, sig []byte) (string, error) {
	tok := signed + "." + b64.EncodeToString(sig)
	if len(tok) > MaxTokenLen {
		return "", fmt.Errorf("sign invite: the token is %d bytes, more than the %d allowed", len(tok), MaxTokenLen)
	}
	return tok, nil
}

// macOf returns HMAC-SHA256(secret, signed).
func macOf(secret []byte, signed string) []byte {
	m := hmac.New(sha256.New, secret)
	io.WriteString(m, signed)
	return m.Sum(nil)
}

// check returns why c is not valid, as the end of a sentence, or "" when
// it is. Uses must already be 1 or more.
func check(c Claims) string {
	switch {
	case !waitroom.ValidRoomName(c.Room):
		return "the room must be a valid room name."
	case !validID(c.ID):
		return fmt.Sprintf("the ID must be 1 to %d characters of A-Z, a-z, 0-9, '_' and '-'.", MaxIDLen)
	case len(c.Tier) > MaxTierLen || !waitroom.Printable(c.Tier):
		return fmt.Sprintf("the tier must be at most %d bytes of printable text.", MaxTierLen)
	case len(c.Key) > waitroom.MaxKeyLen || !waitroom.Printable(c.Key):
		return fmt.Sprintf("the key must be at most %d bytes of printable text.", waitroom.MaxKeyLen)
	case c.Uses < 1 || c.Uses > MaxUses:
		return fmt.Sprintf("the uses must be 1 to %d.", MaxUses)
	case c.Expires.IsZero():
		return "it needs an expiry."
	case c.Expires.Unix() <= 0 || c.Expires.Unix() > maxExp:
		return "the expiry must be after 1970 and before year 10000."
	}
	return ""
}

// validID reports whether id is 1 to MaxIDLen characters of [A-Za-z0-9_-].
func validID(id string) bool {
	if id == "" || len(id) > MaxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !urlSafe(id[i]) {
			return false
		}
	}
	return true
}

// urlSafe reports whether c is in the base64url alphabet.
func urlSafe(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// Verify checks token for room at now and returns its claims. secret is
// the server's HMAC secret ("hs" tokens); keys are the room's Ed25519
// public keys ("ed" tokens), any of which may have signed. A nil secret or
// no keys refuses tokens of that algorithm; a public key is never used as
// an HMAC secret.
//
// Errors are *waitroom.Error with a message safe to show to the person
// holding the token: CodeInviteInvalid for anything malformed, wrongly
// signed or with invalid claims; CodeInviteExpired when the expiry is at or
// before now; CodeInviteWrongRoom for a validly signed token of another
// room. The signature is checked first, so input nobody signed only ever
// gets CodeInviteInvalid.
func Verify(token, room string, now time.Time, secret []byte, keys []ed25519.PublicKey) (Claims, error) {
	if len(token) > MaxTokenLen {
		return Claims{}, invalid("it is too long.")
	}
	rest, ok := strings.CutPrefix(token, prefix)
	if !ok {
		return Claims{}, invalid("it is not a waitroom invite.")
	}
	payloadPart, sigPart, ok := strings.Cut(rest, ".")
	if !ok {
		return Claims{}, invalid("it is incomplete.")
	}
	// The decoder skips newlines; refusing every byte outside the alphabet
	// keeps exactly one spelling of each token.
	for i := 0; i < len(rest); i++ {
		if !urlSafe(rest[i]) && i != len(payloadPart) {
			return Claims{}, invalid("it holds characters an invite cannot have.")
		}
	}
	payload, err := b64.DecodeString(payloadPart)
	if err != nil {
		return Claims{}, invalid("it is not encoded correctly.")
	}
	sig, err := b64.DecodeString(sigPart)
	if err != nil {
		return Claims{}, invalid("it is not encoded correctly.")
	}
	w, err := decodePayload(payload)
	if err != nil {
		return Claims{}, invalid("its contents cannot be read.")
	}
	signed := token[:len(prefix)+len(payloadPart)]
	switch w.Alg {
	case algHMAC:
		if len(secret) == 0 {
			return Claims{}, invalid("this server does not accept invites of this kind.")
		}
		if len(sig) != sha256.Size || !hmac.Equal(sig, macOf(secret, signed)) {
			return Claims{}, invalid("its signature does not match.")
		}
	case algEd25519:
		if !verifyEd25519(keys, signed, sig) {
			if len(keys) == 0 {
				return Claims{}, invalid("this room does not accept invites of this kind.")
			}
			return Claims{}, invalid("its signature does not match any of the room's keys.")
		}
	default:
		return Claims{}, invalid("its signature algorithm is unknown.")
	}

	c := w.claims()
	if w.Uses != nil && *w.Uses == 0 {
		c.Uses = 0 // an explicit 0 is invalid, not the default
	}
	if msg := check(c); msg != "" {
		return Claims{}, invalid(msg)
	}
	if !c.Expires.After(now) {
		return Claims{}, waitroom.Errorf(waitroom.CodeInviteExpired, "This invite expired at %s.", c.Expires.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	if c.Room != room {
		return Claims{}, waitroom.Errorf(waitroom.CodeInviteWrongRoom, "This invite is for the room %q, not %q.", c.Room, room)
	}
	return c, nil
}

// invalid returns the CodeInviteInvalid error ending in why.
func invalid(why string) *waitroom.Error {
	return waitroom.Errorf(waitroom.CodeInviteInvalid, "This invite is not valid: %s", why)
}

// verifyEd25519 reports whether any key of the right size signed msg.
func verifyEd25519(keys []ed25519.PublicKey, msg string, sig []byte) bool {
	if len(sig) != ed25519.SignatureSize {
		return false
	}
	for _, k := range keys {
		// ed25519.Verify panics on a key of another size.
		if len(k) == ed25519.PublicKeySize && ed25519.Verify(k, []byte(msg), sig) {
			return true
		}
	}
	return false
}

// decodePayload decodes exactly one JSON object holding only the payload's
// members.
func decodePayload(payload []byte) (wire, error) {
	var w wire
	if len(payload) == 0 || payload[0] != '{' {
		return w, errors.New("the payload is not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return w, fmt.Errorf("decode payload: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return w, errors.New("more follows the payload's JSON object")
	}
	return w, nil
}
