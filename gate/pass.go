package gate

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom"
)

// DefaultIssuer is the iss claim of passes when Config.Issuer is empty.
const DefaultIssuer = "waitroom"

// Leeway is the clock skew allowed when checking a pass's times: its exp
// (a pass is refused once now is Leeway past it) and its iat (a pass
// stamped up to Leeway in the future is taken). Passes are signed by one
// waitroom process and checked by another, or by an app with Verify, on
// hosts whose clocks NTP keeps within milliseconds of each other; one
// second covers a host whose clock has drifted a little without letting
// an expired pass live on noticeably. It is not a grace period: a pass's
// exp is already rounded down to the whole second when it is signed, and
// the gate renews passes long before they expire.
const Leeway = time.Second

// MaxPassLength is the longest token accepted; anything longer is refused
// before parsing, since no pass this package signs comes near it.
const MaxPassLength = 2048

// Claims is what a valid pass says.
//
// A pass's subject (sub) is its session's ticket in decimal, the same as
// Ticket: public (the waiting page shows it), unique in its room, stable
// across renewals and key rotations. It is not the session id, which owns
// the session (reads it, leaves it, gets its passes) and so must not be
// readable by whoever sees a pass (app logs, downstream services). Passes
// signed before this rule, whose sub was the session id, are refused.
type Claims struct {
	// Room is the room the pass admits to (the audience).
	Room string
	// Session is the session id, a secret. The pass carries it sealed
	// (encrypted for the key that signed it; see the "ssn" claim), and
	// Verify fills it only with a key set that holds that key's private
	// half: waitroom's own, or an HS256 secret. With public keys (a JWKS,
	// a Verifier from NewJWKSVerifier) it is "": an app that needs the
	// session id gets it from waitroom's gate instead (the
	// Waitroom-Session header of the proxy and of forward-auth, or the
	// claims of the in-process Middleware).
	Session string
	// Ticket is the session's ticket, also the pass's subject: with Room,
	// the public identity of the session.
	Ticket int64
	// IssuedAt and Expires bound the pass's life.
	IssuedAt, Expires time.Time
	// AdmittedAt is when the session was admitted (to the millisecond), so
	// that a pass of an admission an operator took back (queue-all) is
	// refused while one of its later admission is not. Zero in passes
	// signed before it was added.
	AdmittedAt time.Time
}

// passClaims is the JWT body: the registered claims (sub the ticket in
// decimal), the ticket and the sealed session id.
type passClaims struct {
	jwt.RegisteredClaims
	Ticket int64 `json:"tkt,omitempty"`
	// Admitted is the admission time in Unix milliseconds.
	Admitted int64 `json:"adm,omitempty"`
	// Sealed is the session id sealed for the signing key (seal.go).
	Sealed string `json:"ssn,omitempty"`
}

// ErrInvalidPass is returned (wrapped) for any pass that does not verify:
// malformed, forged, expired, for another room or issuer, or of an
// algorithm other than the key set's.
var ErrInvalidPass = errors.New("gate: invalid pass")

// ErrRevoked is returned for a pass whose session has ended.
var ErrRevoked = errors.New("gate: the pass's session has ended")

// SignPass signs a pass for s valid until exp with the signing key of ks.
// Its subject is s's ticket; s's id goes in sealed (see Claims). s needs a
// ticket: only an admitted session holds a pass.
func SignPass(ks *KeySet, issuer string, s waitroom.Session, now, exp time.Time) (string, error) {
	if s.Ticket < 1 {
		return "", errors.New("gate: a pass is for a session with a ticket")
	}
	k, err := ks.signingKey()
	if err != nil {
		return "", err
	}
	c := passClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    issuer,
			Subject:   strconv.FormatInt(s.Ticket, 10),
			Audience:  jwt.ClaimStrings{s.Room},
			ExpiresAt: jwt.NewNumericDate(exp),
			IssuedAt:  jwt.NewNumericDate(now),
		},
		Ticket: s.Ticket,
		Sealed: k.seal.seal(s.ID, s.Room, s.Ticket),
	}
	if !s.AdmittedAt.IsZero() {
		c.Admitted = s.AdmittedAt.UnixMilli()
	}
	return ks.sign(k, c)
}

// Verify checks token as a pass of room signed by a key of ks with issuer
// ("" means DefaultIssuer), at now. It checks the signature, the algorithm
// (only the set's own), the issuer, the audience and the expiry (which is
// required); it cannot know whether the session has since ended, which
// (*Gate).Check and the Middleware also check.
func Verify(ks *KeySet, issuer, room, token string, now time.Time) (Claims, error) {
	if issuer == "" {
		issuer = DefaultIssuer
	}
	if len(token) > MaxPassLength {
		return Claims{}, fmt.Errorf("%w: too long", ErrInvalidPass)
	}
	p := jwt.NewParser(
		jwt.WithValidMethods([]string{ks.alg}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithAudience(room),
		jwt.WithIssuer(issuer),
		jwt.WithLeeway(Leeway),
		// Canonical base64 only, so one signed pass has one spelling.
		jwt.WithStrictDecoding(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	var c passClaims
	t, err := p.ParseWithClaims(token, &c, ks.keyfunc)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %v", ErrInvalidPass, err)
	}
	if c.Ticket < 1 || c.Subject != strconv.FormatInt(c.Ticket, 10) {
		return Claims{}, fmt.Errorf("%w: subject is not the pass's ticket", ErrInvalidPass)
	}
	if c.Sealed == "" || len(c.Sealed) > maxSealLen {
		return Claims{}, fmt.Errorf("%w: no session seal", ErrInvalidPass)
	}
	if len(c.Audience) != 1 || c.IssuedAt == nil {
		return Claims{}, fmt.Errorf("%w: want one audience and an issue time", ErrInvalidPass)
	}
	out := Claims{
		Room:     room,
		Ticket:   c.Ticket,
		IssuedAt: c.IssuedAt.Time,
		Expires:  c.ExpiresAt.Time,
	}
	kid, _ := t.Header["kid"].(string)
	if s := ks.sealerOf(kid); s != nil {
		// The set holds the signing key: the seal must open, to a session
		// id (of this room and ticket, which the seal is bound to; an id
		// made in a pre-queue holds its entry number, not its ticket).
		id, err := s.open(c.Sealed, room, c.Ticket)
		if err != nil {
			return Claims{}, fmt.Errorf("%w: %v", ErrInvalidPass, err)
		}
		if _, err := waitroom.ParseSessionID(id); err != nil {
			return Claims{}, fmt.Errorf("%w: the sealed session is not a session id", ErrInvalidPass)
		}
		out.Session = id
	}
	if c.Admitted > 0 {
		out.AdmittedAt = time.UnixMilli(c.Admitted).UTC()
	}
	return out, nil
}

// String describes the claims for logs, without the session id (a secret).
func (c Claims) String() string {
	return c.Room + "#" + strconv.FormatInt(c.Ticket, 10)
}
