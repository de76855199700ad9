// Package challenge is a proof-of-work door for joins. It speaks version 1
// of the ALTCHA protocol, so the open-source ALTCHA widget works against it
// as well as the waiting page's own worker (web/assets/pow-worker.js) and Go
// clients (Solve).
//
// A challenge asks for the secret number n in [0, maxnumber] such that
// SHA-256(salt + decimal(n)) is the challenge hash. The server picks n at
// random, so a client needs maxnumber/2 hashes on average, while checking an
// answer costs the server one hash and one HMAC. The salt carries the
// challenge's expiry, room and difficulty as URL query parameters after a
// '?', and ends with '&'. The HMAC signature covers the hash and the hash
// covers salt + number; because the salt ends with a byte that is not a
// digit and the number is nothing but digits (without a leading zero),
// that text splits into salt and number one way only, so no part of the
// salt can be changed without the key. (Without the terminator, digits of
// the number could be moved onto the end of the last parameter: a cheap
// solution's max=20000 and number 19664 become max=200001966 and number 4.
// Verify refuses a salt that does not end with '&'.)
//
// The package keeps no state: Verify reports each solved challenge's ID and
// expiry, and the caller records the ID until then to make every solution
// single use.
package challenge

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/bits"
	"net/url"
	"strconv"
	"time"

	"github.com/waitroom/waitroom"
)

// Defaults for the difficulty and limits of challenges.
const (
	// DefaultMin is the maxnumber of a challenge while joins are calm:
	// about 10,000 hashes on average, well under a second in a browser.
	DefaultMin = 20_000
	// DefaultMax is the largest maxnumber Difficulty hands out under load:
	// about a million hashes on average, a few seconds in a browser.
	DefaultMax = 2_000_000
	// DefaultCalm is the join rate, in joins per minute, up to which
	// challenges stay at their minimum difficulty.
	DefaultCalm = 600
	// DefaultTTL is how long a challenge may be solved and used when New is
	// given no TTL.
	DefaultTTL = 5 * time.Minute
	// MaxPayloadLen is the longest solution Verify reads, in bytes; a
	// solution for the longest room name is under half of it.
	MaxPayloadLen = 1024
	// MaxNumberLimit is the largest maxnumber Issue accepts: the largest
	// integer a browser's JavaScript counts to exactly (2^53 - 1).
	MaxNumberLimit = 1<<53 - 1
	// MaxRoomLen is the longest room name Issue accepts, once query-escaped,
	// so that every solution fits in MaxPayloadLen.
	MaxRoomLen = 256
)

// Algorithm is the only hash algorithm this package issues and accepts.
const Algorithm = "SHA-256"

// Challenge is an ALTCHA v1 challenge, as sent to clients in JSON.
type Challenge struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	MaxNumber int64  `json:"maxnumber"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
}

// Solved is what Verify learns from a correct solution.
type Solved struct {
	// ID identifies the challenge (its hash, in hex): unique per challenge,
	// so a caller that records it until Expires makes solutions single use.
	ID string
	// Expires is when the challenge stops being accepted; the record of ID
	// is not needed after it.
	Expires time.Time
	// MaxNumber is the difficulty the challenge was issued with (its salt's
	// signed max parameter), always at least 1.
	MaxNumber int64
}

// Issuer issues challenges and verifies their solutions with one HMAC key.
// It is safe for concurrent use.
type Issuer struct {
	ttl time.Duration
	// ipad and opad are the HMAC key blocks, key XOR 0x36 and key XOR
	// 0x5c (RFC 2104), kept to sign with sha256.Sum256 alone: no hash
	// state on the heap and no interface call, so Verify allocates
	// nothing but its result.
	ipad, opad [sha256.BlockSize]byte
}

// New returns an Issuer that signs with key, which must hold at least 16
// bytes (New panics otherwise: a short key is a programming error), and
// whose challenges expire ttl after issue (DefaultTTL if ttl <= 0). Every
// process that verifies must share the key.
func New(key []byte, ttl time.Duration) *Issuer {
	if len(key) < 16 {
		panic(fmt.Sprintf("challenge: key must be at least 16 bytes, got %d", len(key)))
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	i := &Issuer{ttl: ttl}
	if len(key) > sha256.BlockSize {
		k := sha256.Sum256(key)
		key = k[:]
	}
	copy(i.ipad[:], key)
	copy(i.opad[:], key)
	for j := range i.ipad {
		i.ipad[j] ^= 0x36
		i.opad[j] ^= 0x5c
	}
	return i
}

// sign appends the hex HMAC-SHA256 of msg, the hex challenge, to dst.
func (i *Issuer) sign(dst, msg []byte) []byte {
	var buf [sha256.BlockSize + 2*sha256.Size]byte
	inner := sha256.Sum256(append(append(buf[:0], i.ipad[:]...), msg...))
	sum := sha256.Sum256(append(append(buf[:0], i.opad[:]...), inner[:]...))
	return hex.AppendEncode(dst, sum[:])
}

// Issue returns a new challenge for room whose secret number is drawn
// uniformly from [0, maxNumber], valid until now plus the Issuer's TTL.
// maxNumber must be in [1, MaxNumberLimit]; Difficulty picks one. The
// room, query-escaped, may be at most MaxRoomLen bytes.
func (i *Issuer) Issue(room string, maxNumber int64, now time.Time) (Challenge, error) {
	if maxNumber < 1 || maxNumber > MaxNumberLimit {
		return Challenge{}, fmt.Errorf("challenge: maxNumber %d is outside [1, %d]", maxNumber, int64(MaxNumberLimit))
	}
	escRoom := url.QueryEscape(room)
	if len(escRoom) > MaxRoomLen {
		return Challenge{}, fmt.Errorf("challenge: room name of %d bytes is too long", len(room))
	}
	var r [12 + 8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return Challenge{}, fmt.Errorf("challenge: reading random bytes: %w", err)
	}
	n, err := uniform(binary.LittleEndian.Uint64(r[12:]), uint64(maxNumber)+1)
	if err != nil {
		return Challenge{}, err
	}

	salt := make([]byte, 0, 2*12+len("?expires=&room=&max=&")+2*20+len(escRoom))
	salt = hex.AppendEncode(salt, r[:12])
	salt = append(salt, "?expires="...)
	salt = strconv.AppendInt(salt, now.Add(i.ttl).Unix(), 10)
	salt = append(salt, "&room="...)
	salt = append(salt, escRoom...)
	salt = append(salt, "&max="...)
	salt = strconv.AppendInt(salt, maxNumber, 10)
	salt = append(salt, saltEnd)

	sum := hashNumber(salt, n)
	chal := hex.EncodeToString(sum[:])
	sig := i.sign(make([]byte, 0, 2*sha256.Size), []byte(chal))
	return Challenge{
		Algorithm: Algorithm,
		Challenge: chal,
		MaxNumber: maxNumber,
		Salt:      string(salt),
		Signature: string(sig),
	}, nil
}

// saltEnd ends every salt: a byte that is never a digit, so that the
// hashed text salt + decimal(number) splits into the two one way only.
const saltEnd = '&'

// uniform returns a number uniform in [0, n), starting from the random u
// and drawing more only in the rare case that u falls in the last, partial
// run of n (rejection sampling, so no number is favoured).
func uniform(u, n uint64) (uint64, error) {
	limit := math.MaxUint64 - math.MaxUint64%n // a multiple of n; u < limit is unbiased
	for u >= limit {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("challenge: reading random bytes: %w", err)
		}
		u = binary.LittleEndian.Uint64(b[:])
	}
	return u % n, nil
}

// hashNumber returns SHA-256(salt + decimal(n)).
func hashNumber(salt []byte, n uint64) [sha256.Size]byte {
	var buf [256]byte
	b := append(buf[:0], salt...)
	b = strconv.AppendUint(b, n, 10)
	return sha256.Sum256(b)
}

// The errors of Verify. Their messages are safe to show to a client.
func errMalformed() error {
	return waitroom.Errorf(waitroom.CodeChallengeInvalid, "The proof-of-work solution is malformed.")
}

func errTooLong() error {
	return waitroom.Errorf(waitroom.CodeChallengeInvalid, "The proof-of-work solution is longer than %d bytes.", MaxPayloadLen)
}

func errAlgorithm() error {
	return waitroom.Errorf(waitroom.CodeChallengeInvalid, "The proof-of-work solution must use the SHA-256 algorithm.")
}

func errSignature() error {
	return waitroom.Errorf(waitroom.CodeChallengeInvalid, "The proof-of-work challenge was not issued by this server.")
}

func errNumber() error {
	return waitroom.Errorf(waitroom.CodeChallengeInvalid, "The number does not solve the proof-of-work challenge.")
}

func errParams() error {
	return waitroom.Errorf(waitroom.CodeChallengeInvalid, "The proof-of-work challenge lacks a valid expiry, room or difficulty.")
}

func errUnterminated() error {
	return waitroom.Errorf(waitroom.CodeChallengeExpired, "The proof-of-work challenge is of an older form or was altered; solve the new one.")
}

func errExpired() error {
	return waitroom.Errorf(waitroom.CodeChallengeExpired, "The proof-of-work challenge has expired; solve a new one.")
}

func errWrongRoom() error {
	return waitroom.Errorf(waitroom.CodeChallengeWrongRoom, "The proof-of-work challenge was issued for another room.")
}

// Verify checks a solution for room at time now. payload is what the ALTCHA
// widget sends (standard base64 of the solution's JSON) or the JSON object
// itself. The error is a *waitroom.Error: CodeChallengeInvalid for anything
// malformed, unsigned or unsolved, and, only for a correctly signed and
// solved challenge, CodeChallengeExpired once its expiry is not after now
// or CodeChallengeWrongRoom when it was issued for another room. A
// solution whose salt does not end with '&' is refused as expired too: it
// was issued before salts were terminated, or its number's digits were
// moved into the salt (see the package comment); either way the client
// should solve a fresh challenge.
//
// Verify does not detect replays; see Solved.
func (i *Issuer) Verify(payload, room string, now time.Time) (Solved, error) {
	if len(payload) > MaxPayloadLen {
		return Solved{}, errTooLong()
	}
	var buf [MaxPayloadLen]byte
	var text []byte
	if len(payload) > 0 && payload[0] == '{' {
		text = buf[:copy(buf[:], payload)]
	} else {
		enc := base64.StdEncoding
		if len(payload)%4 != 0 {
			enc = base64.RawStdEncoding // btoa pads, but be lenient with clients that strip it
		}
		var src [MaxPayloadLen]byte
		n, err := enc.Decode(buf[:], src[:copy(src[:], payload)])
		if err != nil {
			return Solved{}, errMalformed()
		}
		text = buf[:n]
	}
	s, ok := parseSolution(text)
	if !ok {
		return Solved{}, errMalformed()
	}
	if string(s.algorithm) != Algorithm {
		return Solved{}, errAlgorithm()
	}

	// The signature first: until it holds, nothing else in the payload is
	// ours, and an attacker learns nothing but "invalid".
	var sig [2 * sha256.Size]byte
	if len(s.challenge) != len(sig) || subtle.ConstantTimeCompare(i.sign(sig[:0], s.challenge), s.signature) != 1 {
		return Solved{}, errSignature()
	}

	// The number: the salt is ours only if it hashes, with the number, to
	// the signed challenge.
	var hb [256]byte
	sum := sha256.Sum256(append(append(hb[:0], s.salt...), s.number...))
	var got [2 * sha256.Size]byte
	hex.Encode(got[:], sum[:])
	if subtle.ConstantTimeCompare(got[:], s.challenge) != 1 {
		return Solved{}, errNumber()
	}

	// The salt must end with the terminator, or its last parameter could
	// have been lengthened with the number's leading digits.
	if len(s.salt) == 0 || s.salt[len(s.salt)-1] != saltEnd {
		return Solved{}, errUnterminated()
	}
	expires, saltRoom, maxN, ok := saltParams(s.salt)
	if !ok {
		return Solved{}, errParams()
	}
	exp := time.Unix(expires, 0)
	if !now.Before(exp) {
		return Solved{}, errExpired()
	}
	if saltRoom != room {
		return Solved{}, errWrongRoom()
	}
	return Solved{ID: string(s.challenge), Expires: exp, MaxNumber: maxN}, nil
}

// saltParams returns the expires, room and max parameters of a salt
// "<random>?expires=<unix seconds>&room=<query-escaped room>&max=<maxnumber>&".
// Other parameters and empty ones (the terminating '&' makes one) are
// ignored; a missing, repeated or malformed expires, room or max, or a max
// of 0, is not ok.
func saltParams(salt []byte) (expires int64, room string, maxN int64, ok bool) {
	q := -1
	for j, c := range salt {
		if c == '?' {
			q = j
			break
		}
	}
	if q < 0 {
		return 0, "", 0, false
	}
	var haveExp, haveRoom, haveMax bool
	rest := salt[q+1:]
	for len(rest) > 0 {
		var kv []byte
		kv, rest = cut(rest, '&')
		k, v := cut(kv, '=')
		switch string(k) {
		case "expires":
			n, good := parseUint(v)
			if haveExp || !good || n > math.MaxInt64 {
				return 0, "", 0, false
			}
			expires, haveExp = int64(n), true
		case "room":
			r, err := url.QueryUnescape(string(v))
			if haveRoom || err != nil {
				return 0, "", 0, false
			}
			room, haveRoom = r, true
		case "max":
			n, good := parseUint(v)
			if haveMax || !good || n < 1 || n > MaxNumberLimit {
				return 0, "", 0, false
			}
			maxN, haveMax = int64(n), true
		}
	}
	return expires, room, maxN, haveExp && haveRoom && haveMax
}

// cut splits b at the first sep, dropping it.
func cut(b []byte, sep byte) (before, after []byte) {
	for j, c := range b {
		if c == sep {
			return b[:j], b[j+1:]
		}
	}
	return b, nil
}

// parseUint parses 1 to 19 ASCII decimal digits, which cannot overflow.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

// Difficulty returns the maxnumber for a new challenge given the recent join
// rate, so that work grows with the crowd: minN while joinsPerMinute is at
// most calmPerMinute, and above that minN scaled by the rate's multiple of
// calm (minN * joinsPerMinute / calmPerMinute, computed without overflow),
// so each doubling of the rate doubles the expected work. The result is
// clamped to [minN, maxN]; a maxN below minN counts as minN, and a
// calmPerMinute of zero or less means any positive rate gets maxN.
// DefaultMin, DefaultMax and DefaultCalm are sensible arguments.
func Difficulty(minN, maxN, joinsPerMinute, calmPerMinute int64) int64 {
	maxN = max(maxN, minN)
	if joinsPerMinute <= calmPerMinute || minN <= 0 {
		return minN
	}
	if calmPerMinute <= 0 {
		return maxN
	}
	// Both factors are positive here: minN > 0 and joinsPerMinute > calm > 0.
	hi, lo := bits.Mul64(uint64(minN), uint64(joinsPerMinute))
	if hi >= uint64(calmPerMinute) {
		return maxN // the quotient needs more than 64 bits
	}
	q, _ := bits.Div64(hi, lo, uint64(calmPerMinute))
	if q > uint64(maxN) {
		return maxN
	}
	return max(int64(q), minN)
}
