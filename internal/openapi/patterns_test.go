package openapi_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	mrand "math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/waitroom/waitroom"
)

// schemaPattern returns the pattern of a schema of the document.
func schemaPattern(t *testing.T, name string) string {
	t.Helper()
	s := doc(t)["components"].(map[string]any)["schemas"].(map[string]any)[name].(map[string]any)
	p, _ := s["pattern"].(string)
	if p == "" {
		t.Fatalf("schema %s has no pattern", name)
	}
	return p
}

// printablePattern is the pattern of waitroom.PrintableRune: a class of
// the allowed ranges, each written with its own characters (which every
// regex dialect reads alike), as the document must hold it.
func printablePattern() string {
	var b strings.Builder
	b.WriteString("^[")
	in, start := false, rune(0)
	for r := rune(0); r <= utf8.MaxRune+1; r++ {
		ok := r <= utf8.MaxRune && utf8.ValidRune(r) && waitroom.PrintableRune(r)
		switch {
		case ok && !in:
			in, start = true, r
		case !ok && in:
			in = false
			b.WriteRune(start)
			if end := r - 1; end > start {
				if end > start+1 {
					b.WriteByte('-')
				}
				b.WriteRune(end)
			}
		}
	}
	b.WriteString("]*$")
	return b.String()
}

// TestPrintableTextIsTheServersRule: the document's PrintableText pattern
// is exactly the server's printable rule, range for range. It depends on
// the Unicode version of the Go release: after an upgrade that assigns
// new characters, write the pattern this test wants into openapi.json
// (its JSON escapes are \uXXXX, surrogate pairs above U+FFFF).
func TestPrintableTextIsTheServersRule(t *testing.T) {
	got, want := schemaPattern(t, "PrintableText"), printablePattern()
	if got != want {
		t.Fatalf("PrintableText's pattern (%d characters) is not waitroom.PrintableRune's ranges (%d characters)", utf8.RuneCountInString(got), utf8.RuneCountInString(want))
	}
	re := regexp.MustCompile(got)
	for _, s := range []string{"", "Zoë", "日本", "🎉", "a b", "mailto:x@y"} {
		if !re.MatchString(s) || !waitroom.Printable(s) {
			t.Errorf("%q: pattern %v, Printable %v; want both true", s, re.MatchString(s), waitroom.Printable(s))
		}
	}
	for _, s := range []string{"\x00", "a\u202eb", "\u200b", "\u00a0", "\ufffd", "\u2800", "\ufe0f", "\u3164", "\ue000", "\U000e0041", "\t"} {
		if re.MatchString(s) || waitroom.Printable(s) {
			t.Errorf("%q: pattern %v, Printable %v; want both false", s, re.MatchString(s), waitroom.Printable(s))
		}
	}
}

// TestSessionIDPatternIsExact: the document's SessionID pattern matches
// exactly the ids waitroom.ParseSessionID accepts, around every bound of
// the ticket and entry numbers and over random ids.
func TestSessionIDPatternIsExact(t *testing.T) {
	re := regexp.MustCompile(schemaPattern(t, "SessionID"))
	check := func(s string) {
		t.Helper()
		_, err := waitroom.ParseSessionID(s)
		if (err == nil) != re.MatchString(s) {
			t.Fatalf("%q: ParseSessionID %v, pattern matches %v", s, err, re.MatchString(s))
		}
	}
	id := func(first uint64, secret []byte) string {
		var raw [24]byte
		binary.BigEndian.PutUint64(raw[:8], first)
		copy(raw[8:], secret)
		return base64.RawURLEncoding.EncodeToString(raw[:])
	}
	ones := []byte(strings.Repeat("\xff", 16))
	for _, n := range []uint64{0, 1, 2, 15, 16, 1<<62 - 1, 1 << 62, 1<<62 + 1, 1<<63 - 1} {
		for _, top := range []uint64{0, 1 << 63} {
			check(id(n|top, nil))
			check(id(n|top, ones))
		}
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	secret := make([]byte, 16)
	for range 50_000 {
		_, _ = rand.Read(secret)
		n := rng.Uint64() >> rng.IntN(64)
		if rng.IntN(2) == 0 {
			n |= 1 << 63
		}
		check(id(n, secret))
	}
	for _, s := range []string{"", "x", strings.Repeat("A", 31), strings.Repeat("A", 33), "AAAAAAAAAAEAAAAAAAAAAAAAAAAAAAA=", "AAAAAAAAAAEAAAAAAAAAAAAAAAAAAA+/"} {
		check(s)
	}
}
