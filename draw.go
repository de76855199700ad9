package waitroom

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// A scheduled room (one with OpensAt) collects joins in a pre-queue until it
// opens, then gives every entrant a ticket in one draw. The draw is commit,
// then reveal: when the room gets its OpensAt the store picks a secret seed
// and publishes only its SHA-256 (the commitment); at the opening it orders
// the entrants by HMAC-SHA256(seed, entry) and publishes the seed with every
// entry, its value and its ticket. Anyone can then check, with VerifyDraw,
// that the order follows from a seed fixed before anyone joined.

// DrawSeedLen is the length of a draw's secret seed in bytes.
const DrawSeedLen = 32

// DrawSeed is a draw's secret seed.
type DrawSeed [DrawSeedLen]byte

// NewDrawSeed returns a fresh random seed.
func NewDrawSeed() DrawSeed {
	var s DrawSeed
	// crypto/rand.Read never returns an error on supported platforms.
	_, _ = rand.Read(s[:])
	return s
}

// Commitment returns the hex SHA-256 of the seed, published before the draw.
func (s DrawSeed) Commitment() string {
	h := sha256.Sum256(s[:])
	return hex.EncodeToString(h[:])
}

// String returns the seed in hex, as the draw record publishes it.
func (s DrawSeed) String() string { return hex.EncodeToString(s[:]) }

// ParseDrawSeed reads a seed in hex.
func ParseDrawSeed(v string) (DrawSeed, error) {
	var s DrawSeed
	b, err := hex.DecodeString(v)
	if err != nil || len(b) != DrawSeedLen {
		return s, fmt.Errorf("a seed is %d hex digits", 2*DrawSeedLen)
	}
	copy(s[:], b)
	return s, nil
}

// DrawValue is an entrant's value in the draw: HMAC-SHA256(seed, entry).
// Smaller values draw earlier tickets.
func DrawValue(seed DrawSeed, entry string) [32]byte {
	m := hmac.New(sha256.New, seed[:])
	m.Write([]byte(entry))
	var v [32]byte
	m.Sum(v[:0])
	return v
}

// EntryForSecret is the public entry of a keyless session: 22 base64url
// characters of the SHA-256 of its secret, prefixed "s:". It names the
// session in the published draw without revealing its id, and neither the
// person nor the operator can choose it.
func EntryForSecret(secret [16]byte) string {
	h := sha256.Sum256(secret[:])
	return "s:" + base64.RawURLEncoding.EncodeToString(h[:16])
}

// EntryForKey is the public entry of a session joined with a key: a hash of
// the room and key, prefixed "k:". Joining again with the same key gives
// the same entry and so the same value: a key cannot re-roll its draw. The
// key itself is not published; its owner can recompute the entry.
func EntryForKey(room, key string) string {
	h := sha256.Sum256([]byte(room + "\x00" + key))
	return "k:" + base64.RawURLEncoding.EncodeToString(h[:16])
}

// EntryFor is the public entry of a session of room that entered a
// pre-queue: EntryForKey when it joined with a key, else EntryForSecret of
// its id's secret. Every store names entrants by this one rule.
func EntryFor(room, key string, secret [16]byte) string {
	if key != "" {
		return EntryForKey(room, key)
	}
	return EntryForSecret(secret)
}

// DrawEntry is one entrant in a published draw.
type DrawEntry struct {
	Entry  string `json:"entry"`
	Value  string `json:"value"` // hex HMAC-SHA256(seed, entry)
	Ticket int64  `json:"ticket"`
}

// DrawRecord is what GET /v1/rooms/{room}/draw publishes. Before the draw it
// holds the commitment and the count of entrants so far; after it, also the
// seed, every entry in draw order, and a digest of that list.
type DrawRecord struct {
	Room       string    `json:"room"`
	OpensAt    time.Time `json:"opens_at"`
	Commitment string    `json:"commitment"`
	// Drawn says whether the draw took place.
	Drawn   bool      `json:"drawn"`
	DrawnAt time.Time `json:"drawn_at,omitzero"`
	// Entrants counts the pre-queue before the draw and the drawn entries
	// after it.
	Entrants int `json:"entrants"`
	// Seed, FirstTicket, Entries and Digest are published after the draw.
	Seed        string      `json:"seed,omitempty"`
	FirstTicket int64       `json:"first_ticket,omitempty"`
	Entries     []DrawEntry `json:"entries,omitempty"`
	Digest      string      `json:"digest,omitempty"`
}

// DrawOrder orders entries by their draw values (ties, which need a
// SHA-256 collision, by entry) and hands out tickets from first on.
func DrawOrder(seed DrawSeed, entries []string, first int64) []DrawEntry {
	type valued struct {
		v     [32]byte
		entry string
	}
	vs := make([]valued, len(entries))
	for i, e := range entries {
		vs[i] = valued{DrawValue(seed, e), e}
	}
	slices.SortFunc(vs, func(a, b valued) int {
		if c := bytes.Compare(a.v[:], b.v[:]); c != 0 {
			return c
		}
		switch {
		case a.entry < b.entry:
			return -1
		case a.entry > b.entry:
			return 1
		}
		return 0
	})
	out := make([]DrawEntry, len(vs))
	for i, x := range vs {
		out[i] = DrawEntry{Entry: x.entry, Value: hex.EncodeToString(x.v[:]), Ticket: first + int64(i)}
	}
	return out
}

// DrawDigest is the hex SHA-256 of the entries, one line each of
// "entry value ticket\n", in the order given.
func DrawDigest(entries []DrawEntry) string {
	h := sha256.New()
	var line []byte
	for _, e := range entries {
		line = append(line[:0], e.Entry...)
		line = append(line, ' ')
		line = append(line, e.Value...)
		line = append(line, ' ')
		line = strconv.AppendInt(line, e.Ticket, 10)
		line = append(line, '\n')
		h.Write(line)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// VerifyDraw checks a published draw: the seed hashes to the commitment,
// every value is HMAC-SHA256(seed, entry), the entries are in value order
// with consecutive tickets from FirstTicket, the count matches and the
// digest is that of the list. It proves the order was fixed by a seed
// committed to before the draw; it cannot prove that every entrant was a
// real person.
func VerifyDraw(d DrawRecord) error {
	if !d.Drawn {
		return fmt.Errorf("the draw has not taken place: there is only a commitment")
	}
	seed, err := ParseDrawSeed(d.Seed)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if got := seed.Commitment(); got != d.Commitment {
		return fmt.Errorf("the seed does not match the commitment: SHA-256(seed) is %s, the commitment %s", got, d.Commitment)
	}
	if d.Entrants != len(d.Entries) {
		return fmt.Errorf("the record counts %d entrants but lists %d entries", d.Entrants, len(d.Entries))
	}
	seen := make(map[string]bool, len(d.Entries))
	var prev []byte
	for i, e := range d.Entries {
		if seen[e.Entry] {
			return fmt.Errorf("entry %q is listed twice", e.Entry)
		}
		seen[e.Entry] = true
		v := DrawValue(seed, e.Entry)
		if got := hex.EncodeToString(v[:]); got != e.Value {
			return fmt.Errorf("entry %d (%q): value %s does not recompute: HMAC-SHA256(seed, entry) is %s", i+1, e.Entry, e.Value, got)
		}
		if i > 0 && (bytes.Compare(prev, v[:]) > 0 || (bytes.Equal(prev, v[:]) && d.Entries[i-1].Entry > e.Entry)) {
			return fmt.Errorf("entry %d (%q) is out of order: its value is smaller than the one before it", i+1, e.Entry)
		}
		prev = v[:]
		if want := d.FirstTicket + int64(i); e.Ticket != want {
			return fmt.Errorf("entry %d (%q) has ticket %d, want %d (tickets follow the draw order from first_ticket %d)", i+1, e.Entry, e.Ticket, want, d.FirstTicket)
		}
	}
	if got := DrawDigest(d.Entries); got != d.Digest {
		return fmt.Errorf("the digest does not match the entries: it is %s, the record says %s", got, d.Digest)
	}
	return nil
}
