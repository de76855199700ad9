package invite

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

var (
	testSecret = []byte("0123456789abcdef0123456789abcdef")
	testNow    = time.Unix(1_800_000_000, 0)
	testPriv   = ed25519.NewKeyFromSeed([]byte("seed-of-the-tests-32-bytes-long!"))
	testPub    = testPriv.Public().(ed25519.PublicKey)
)

// testClaims returns valid claims for room "drop", expiring an hour after
// testNow.
func testClaims() Claims {
	return Claims{
		Room:    "drop",
		ID:      "abc_DEF-123",
		Tier:    "vip",
		Key:     "alice@example.com",
		Uses:    3,
		Expires: testNow.Add(time.Hour),
	}
}

func mustHMAC(t testing.TB, c Claims) string {
	t.Helper()
	tok, err := SignHMAC(c, testSecret)
	if err != nil {
		t.Fatalf("SignHMAC(%+v): %v", c, err)
	}
	return tok
}

func mustEd(t testing.TB, c Claims) string {
	t.Helper()
	tok, err := SignEd25519(c, testPriv)
	if err != nil {
		t.Fatalf("SignEd25519(%+v): %v", c, err)
	}
	return tok
}

// wantCode fails unless err is a *waitroom.Error of code with a message.
func wantCode(t *testing.T, err error, code waitroom.Code) {
	t.Helper()
	var e *waitroom.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a *waitroom.Error with code %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("error code %s (%v), want %s", e.Code, err, code)
	}
	if e.Message == "" {
		t.Errorf("error %v has no message", err)
	}
}

func sameClaims(t *testing.T, got, want Claims) {
	t.Helper()
	if got.Room != want.Room || got.ID != want.ID || got.Tier != want.Tier || got.Key != want.Key ||
		got.Uses != want.Uses || !got.Expires.Equal(want.Expires) {
		t.Errorf("claims = %+v, want %+v", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	want := testClaims()
	for _, tc := range []struct {
		name string
		tok  string
	}{
		{"hs", mustHMAC(t, want)},
		{"ed", mustEd(t, want)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.HasPrefix(tc.tok, "wr1.") || strings.Count(tc.tok, ".") != 2 {
				t.Fatalf("token %q, want wr1.<payload>.<signature>", tc.tok)
			}
			got, err := Verify(tc.tok, "drop", testNow, testSecret, []ed25519.PublicKey{testPub})
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			sameClaims(t, got, want)
		})
	}
}

func TestPayloadIsTheDocumentedJSON(t *testing.T) {
	tok := mustEd(t, testClaims())
	part := strings.Split(tok, ".")[1]
	raw, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"alg":"ed","room":"drop","id":"abc_DEF-123","tier":"vip","key":"alice@example.com","uses":3,"exp":1800003600}`
	if string(raw) != want {
		t.Errorf("payload %s, want %s", raw, want)
	}
}

func TestEd25519VerifiesWithAnyConfiguredKey(t *testing.T) {
	other := ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey)
	tok := mustEd(t, testClaims())
	// A key of the wrong size in the configuration must not panic or match.
	keys := []ed25519.PublicKey{nil, ed25519.PublicKey("short"), other, testPub}
	if _, err := Verify(tok, "drop", testNow, nil, keys); err != nil {
		t.Fatalf("Verify with the key last of four: %v", err)
	}
}

func TestUsesDefaultsToOne(t *testing.T) {
	c := testClaims()
	c.Uses = 0
	for _, tok := range []string{mustHMAC(t, c), mustEd(t, c)} {
		got, err := Verify(tok, "drop", testNow, testSecret, []ed25519.PublicKey{testPub})
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if got.Uses != 1 {
			t.Errorf("Uses = %d, want 1", got.Uses)
		}
	}
	// Operators may leave "uses" out of a payload they write themselves.
	tok := signRaw(t, "ed", `{"alg":"ed","room":"drop","id":"x","exp":1800003600}`)
	got, err := Verify(tok, "drop", testNow, nil, []ed25519.PublicKey{testPub})
	if err != nil {
		t.Fatalf("Verify without uses: %v", err)
	}
	if got.Uses != 1 || got.Tier != "" || got.Key != "" {
		t.Errorf("claims = %+v, want Uses 1, no tier, no key", got)
	}
}

// signRaw signs payload JSON as given, the way an operator's own code may.
func signRaw(t *testing.T, alg, payload string) string {
	t.Helper()
	signed := "wr1." + base64.RawURLEncoding.EncodeToString([]byte(payload))
	var sig []byte
	switch alg {
	case "hs":
		m := hmac.New(sha256.New, testSecret)
		m.Write([]byte(signed))
		sig = m.Sum(nil)
	case "ed":
		sig = ed25519.Sign(testPriv, []byte(signed))
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestRefused(t *testing.T) {
	hs := mustHMAC(t, testClaims())
	ed := mustEd(t, testClaims())
	keys := []ed25519.PublicKey{testPub}
	otherPub := ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey)

	// flip changes one character of part (1 payload, 2 signature) of tok.
	flip := func(tok string, part int) string {
		p := strings.Split(tok, ".")
		b := []byte(p[part])
		i := len(b) / 2
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		p[part] = string(b)
		return strings.Join(p, ".")
	}
	// hsWithPublicKey is an "hs" token whose HMAC key is the room's public
	// key: anyone could make it, so it must never verify.
	hsWithPublicKey := func() string {
		signed := strings.SplitN(signRaw(t, "hs", `{"alg":"hs","room":"drop","id":"x","exp":1800003600}`), ".", 3)
		m := hmac.New(sha256.New, testPub)
		m.Write([]byte(signed[0] + "." + signed[1]))
		return signed[0] + "." + signed[1] + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}()
	expired := testClaims()
	expired.Expires = testNow
	past := testClaims()
	past.Expires = testNow.Add(-time.Second)
	other := testClaims()
	other.Room = "other"

	for _, tc := range []struct {
		name   string
		tok    string
		secret []byte
		keys   []ed25519.PublicKey
		code   waitroom.Code
	}{
		{"empty", "", testSecret, keys, waitroom.CodeInviteInvalid},
		{"no prefix", strings.TrimPrefix(hs, "wr1."), testSecret, keys, waitroom.CodeInviteInvalid},
		{"other version", "wr2." + strings.TrimPrefix(hs, "wr1."), testSecret, keys, waitroom.CodeInviteInvalid},
		{"no signature", hs[:strings.LastIndex(hs, ".")], testSecret, keys, waitroom.CodeInviteInvalid},
		{"extra part", hs + ".x", testSecret, keys, waitroom.CodeInviteInvalid},
		{"padding", hs + "=", testSecret, keys, waitroom.CodeInviteInvalid},
		{"newline", hs[:20] + "\n" + hs[20:], testSecret, keys, waitroom.CodeInviteInvalid},
		{"standard alphabet", strings.NewReplacer("-", "+", "_", "/").Replace(signRaw(t, "hs", `{"alg":"hs","room":"drop","id":"x","key":"??>>??>>","exp":1800003600}`)), testSecret, keys, waitroom.CodeInviteInvalid},
		{"oversized", "wr1." + strings.Repeat("A", MaxTokenLen), testSecret, keys, waitroom.CodeInviteInvalid},
		{"hs tampered payload", flip(hs, 1), testSecret, keys, waitroom.CodeInviteInvalid},
		{"hs tampered signature", flip(hs, 2), testSecret, keys, waitroom.CodeInviteInvalid},
		{"ed tampered payload", flip(ed, 1), testSecret, keys, waitroom.CodeInviteInvalid},
		{"ed tampered signature", flip(ed, 2), testSecret, keys, waitroom.CodeInviteInvalid},
		{"hs wrong secret", hs, []byte("another secret"), keys, waitroom.CodeInviteInvalid},
		{"hs with nil secret", hs, nil, keys, waitroom.CodeInviteInvalid},
		{"hs with the public key as secret", hsWithPublicKey, nil, keys, waitroom.CodeInviteInvalid},
		{"hs with the public key as secret and a secret", hsWithPublicKey, testSecret, keys, waitroom.CodeInviteInvalid},
		{"ed key not configured", ed, testSecret, []ed25519.PublicKey{otherPub}, waitroom.CodeInviteInvalid},
		{"ed no keys", ed, testSecret, nil, waitroom.CodeInviteInvalid},
		{"ed signed, hs declared", signRaw(t, "ed", `{"alg":"hs","room":"drop","id":"x","exp":1800003600}`), testSecret, keys, waitroom.CodeInviteInvalid},
		{"hs signed, ed declared", signRaw(t, "hs", `{"alg":"ed","room":"drop","id":"x","exp":1800003600}`), testSecret, keys, waitroom.CodeInviteInvalid},
		{"unknown alg", signRaw(t, "hs", `{"alg":"none","room":"drop","id":"x","exp":1800003600}`), testSecret, keys, waitroom.CodeInviteInvalid},
		{"no alg", signRaw(t, "hs", `{"room":"drop","id":"x","exp":1800003600}`), testSecret, keys, waitroom.CodeInviteInvalid},
		{"unknown member", signRaw(t, "hs", `{"alg":"hs","room":"drop","id":"x","exp":1800003600,"admin":true}`), testSecret, keys, waitroom.CodeInviteInvalid},
		{"not an object", signRaw(t, "hs", `null`), testSecret, keys, waitroom.CodeInviteInvalid},
		{"trailing JSON", signRaw(t, "hs", `{"alg":"hs","room":"drop","id":"x","exp":1800003600}{}`), testSecret, keys, waitroom.CodeInviteInvalid},
		{"exp as a string", signRaw(t, "hs", `{"alg":"hs","room":"drop","id":"x","exp":"1800003600"}`), testSecret, keys, waitroom.CodeInviteInvalid},
		{"exp fractional", signRaw(t, "hs", `{"alg":"hs","room":"drop","id":"x","exp":1800003600.5}`), testSecret, keys, waitroom.CodeInviteInvalid},
		{"no exp", signRaw(t, "hs", `{"alg":"hs","room":"drop","id":"x"}`), testSecret, keys, waitroom.CodeInviteInvalid},
		{"uses 0", signRaw(t, "hs", `{"alg":"hs","room":"drop","id":"x","uses":0,"exp":1800003600}`), testSecret, keys, waitroom.CodeInviteInvalid},
		{"uses too many", signRaw(t, "hs", `{"alg":"hs","room":"drop","id":"x","uses":1000001,"exp":1800003600}`), testSecret, keys, waitroom.CodeInviteInvalid},
		{"bad id", signRaw(t, "hs", `{"alg":"hs","room":"drop","id":"a.b","exp":1800003600}`), testSecret, keys, waitroom.CodeInviteInvalid},
		{"bad key", signRaw(t, "ed", `{"alg":"ed","room":"drop","id":"x","key":"a\u0007b","exp":1800003600}`), testSecret, keys, waitroom.CodeInviteInvalid},
		{"invisible key", signRaw(t, "ed", `{"alg":"ed","room":"drop","id":"x","key":"a\u200bb","exp":1800003600}`), testSecret, keys, waitroom.CodeInviteInvalid},
		// Invalid claims win over expiry: a token with both problems is invalid.
		{"bad room and expired", signRaw(t, "hs", `{"alg":"hs","room":"Drop!","id":"x","exp":1}`), testSecret, keys, waitroom.CodeInviteInvalid},
		{"expired at now", mustHMAC(t, expired), testSecret, keys, waitroom.CodeInviteExpired},
		{"expired before now", mustEd(t, past), testSecret, keys, waitroom.CodeInviteExpired},
		{"other room", mustHMAC(t, other), testSecret, keys, waitroom.CodeInviteWrongRoom},
		{"other room ed", mustEd(t, other), testSecret, keys, waitroom.CodeInviteWrongRoom},
		// A forged token for another room that has expired reveals neither.
		{"forged other room expired", flip(mustHMAC(t, func() Claims { c := other; c.Expires = testNow; return c }()), 2), testSecret, keys, waitroom.CodeInviteInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Verify(tc.tok, "drop", testNow, tc.secret, tc.keys)
			if err == nil {
				t.Fatalf("Verify accepted %q: %+v", tc.tok, c)
			}
			wantCode(t, err, tc.code)
			if c != (Claims{}) {
				t.Errorf("claims %+v returned with an error, want none", c)
			}
		})
	}
}

func TestSignValidatesClaims(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Claims)
	}{
		{"no room", func(c *Claims) { c.Room = "" }},
		{"room too long", func(c *Claims) { c.Room = strings.Repeat("a", 65) }},
		{"room not a room name", func(c *Claims) { c.Room = "Drop Room" }},
		{"no id", func(c *Claims) { c.ID = "" }},
		{"id too long", func(c *Claims) { c.ID = strings.Repeat("a", 65) }},
		{"id with a dot", func(c *Claims) { c.ID = "a.b" }},
		{"id with a plus", func(c *Claims) { c.ID = "a+b" }},
		{"tier too long", func(c *Claims) { c.Tier = strings.Repeat("t", 65) }},
		{"tier with a newline", func(c *Claims) { c.Tier = "v\nip" }},
		{"key too long", func(c *Claims) { c.Key = strings.Repeat("k", 257) }},
		{"key with a control character", func(c *Claims) { c.Key = "a\x00b" }},
		{"key not UTF-8", func(c *Claims) { c.Key = "a\xffb" }},
		{"key with a bidi override", func(c *Claims) { c.Key = "a\u202eb" }},
		{"key with a zero-width space", func(c *Claims) { c.Key = "a\u200bb" }},
		{"key with a no-break space", func(c *Claims) { c.Key = "a\u00a0b" }},
		{"tier with a bidi override", func(c *Claims) { c.Tier = "v\u202eip" }},
		{"negative uses", func(c *Claims) { c.Uses = -1 }},
		{"too many uses", func(c *Claims) { c.Uses = MaxUses + 1 }},
		{"no expiry", func(c *Claims) { c.Expires = time.Time{} }},
		{"expiry before 1970", func(c *Claims) { c.Expires = time.Unix(-5, 0) }},
		{"expiry after 9999", func(c *Claims) { c.Expires = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testClaims()
			tc.change(&c)
			if tok, err := SignHMAC(c, testSecret); err == nil {
				t.Errorf("SignHMAC accepted %+v: %s", c, tok)
			} else {
				wantCode(t, err, waitroom.CodeInvalidRequest)
			}
			if tok, err := SignEd25519(c, testPriv); err == nil {
				t.Errorf("SignEd25519 accepted %+v: %s", c, tok)
			} else {
				wantCode(t, err, waitroom.CodeInvalidRequest)
			}
		})
	}
}

func TestSignAcceptsLimits(t *testing.T) {
	c := Claims{
		Room:    strings.Repeat("r", 64),
		ID:      strings.Repeat("i", 64),
		Tier:    strings.Repeat("\"", 64),
		Key:     strings.Repeat(`\`, 256), // escaped by JSON to 2 bytes each, the most a printable key grows
		Uses:    MaxUses,
		Expires: time.Unix(maxExp, 0),
	}
	tok := mustEd(t, c)
	if len(tok) > MaxTokenLen {
		t.Fatalf("token of %d bytes, over %d", len(tok), MaxTokenLen)
	}
	got, err := Verify(tok, c.Room, testNow, nil, []ed25519.PublicKey{testPub})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	sameClaims(t, got, c)
}

func TestSignRefusesBadKeys(t *testing.T) {
	if _, err := SignHMAC(testClaims(), nil); err == nil {
		t.Error("SignHMAC with a nil secret succeeded")
	}
	if _, err := SignEd25519(testClaims(), testPriv[:32]); err == nil {
		t.Error("SignEd25519 with a 32-byte key succeeded")
	}
}

func TestExpiresInWholeSeconds(t *testing.T) {
	c := testClaims()
	c.Expires = testNow.Add(1500 * time.Millisecond)
	got, err := Verify(mustHMAC(t, c), "drop", testNow, testSecret, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := testNow.Add(time.Second); !got.Expires.Equal(want) {
		t.Errorf("Expires = %v, want %v (truncated to the second)", got.Expires, want)
	}
	// Valid until the second before the expiry, refused from it on.
	if _, err := Verify(mustHMAC(t, c), "drop", testNow.Add(999*time.Millisecond), testSecret, nil); err != nil {
		t.Errorf("Verify just before the expiry: %v", err)
	}
	_, err = Verify(mustHMAC(t, c), "drop", testNow.Add(time.Second), testSecret, nil)
	wantCode(t, err, waitroom.CodeInviteExpired)
}

func TestClaimsJSON(t *testing.T) {
	c := testClaims()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"room":"drop","id":"abc_DEF-123","tier":"vip","key":"alice@example.com","uses":3,"exp":1800003600}`
	if string(b) != want {
		t.Errorf("json.Marshal = %s, want %s", b, want)
	}
	var got Claims
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	sameClaims(t, got, c)
	if err := json.Unmarshal([]byte(`{"alg":"hs","room":"r","id":"i","exp":5}`), &got); err != nil {
		t.Fatal(err)
	}
	sameClaims(t, got, Claims{Room: "r", ID: "i", Uses: 1, Expires: time.Unix(5, 0)})
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := NewID()
		if len(id) != 22 || !validID(id) {
			t.Fatalf("NewID() = %q, want 22 characters of [A-Za-z0-9_-]", id)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
}

func TestKeys(t *testing.T) {
	pub := FormatPublicKey(testPub)
	raw := []byte(testPub)
	for _, s := range []string{
		pub,
		base64.RawStdEncoding.EncodeToString(raw),
		base64.URLEncoding.EncodeToString(raw),
		base64.RawURLEncoding.EncodeToString(raw),
		"  " + pub + "\n",
	} {
		k, err := ParsePublicKey(s)
		if err != nil {
			t.Errorf("ParsePublicKey(%q): %v", s, err)
			continue
		}
		if !k.Equal(testPub) {
			t.Errorf("ParsePublicKey(%q) = %x, want %x", s, k, testPub)
		}
	}
	for _, s := range []string{"", "not base64!", base64.StdEncoding.EncodeToString(raw[:31]), FormatPrivateKey(testPriv) + "AAAA"} {
		if _, err := ParsePublicKey(s); err == nil {
			t.Errorf("ParsePublicKey(%q) succeeded", s)
		}
	}

	priv := FormatPrivateKey(testPriv)
	if got := base64.StdEncoding.EncodeToString(testPriv.Seed()); priv != got {
		t.Errorf("FormatPrivateKey = %q, want the seed %q", priv, got)
	}
	for _, s := range []string{
		priv,
		base64.RawURLEncoding.EncodeToString(testPriv.Seed()),
		base64.StdEncoding.EncodeToString(testPriv),
	} {
		k, err := ParsePrivateKey(s)
		if err != nil {
			t.Errorf("ParsePrivateKey(%q): %v", s, err)
			continue
		}
		if !k.Equal(testPriv) {
			t.Errorf("ParsePrivateKey(%q) is another key", s)
		}
	}
	mismatched := append(append([]byte{}, testPriv.Seed()...), make([]byte, 32)...)
	for _, s := range []string{"", "%%%", base64.StdEncoding.EncodeToString(mismatched), base64.StdEncoding.EncodeToString(make([]byte, 48))} {
		if _, err := ParsePrivateKey(s); err == nil {
			t.Errorf("ParsePrivateKey(%q) succeeded", s)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	c := testClaims()
	keys := []ed25519.PublicKey{testPub}
	for _, bc := range []struct {
		name string
		tok  string
	}{
		{"hs", mustHMAC(b, c)},
		{"ed", mustEd(b, c)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Verify(bc.tok, "drop", testNow, testSecret, keys); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
