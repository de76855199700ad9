package gate

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom"
)

func testSession() waitroom.Session {
	return waitroom.Session{ID: waitroom.NewSessionID(7).String(), Room: "default", Ticket: 7, Status: waitroom.StatusActive}
}

// rawToken signs arbitrary claims with method and key, with header kid.
func rawToken(t *testing.T, m jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("signing test token: %v", err)
	}
	return s
}

func TestVerifyRejects(t *testing.T) {
	ks, err := NewKeySet(AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewKeySet(AlgEdDSA)
	hm, _ := NewKeySet(AlgHS256)
	s := testSession()
	now := t0
	valid, err := SignPass(ks, DefaultIssuer, s, now, now.Add(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	kid := ks.SigningKID()
	pub := ks.byKID[kid].pub
	seal := ks.byKID[kid].seal
	claims := func(mod func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"iss": DefaultIssuer, "sub": "7", "tkt": 7, "ssn": seal.seal(s.ID, "default", 7), "aud": []string{"default"}, "exp": now.Add(time.Minute).Unix(), "iat": now.Unix()}
		if mod != nil {
			mod(c)
		}
		return c
	}
	otherPriv := other.byKID[other.SigningKID()].priv
	forgedKID := rawToken(t, jwt.SigningMethodEdDSA, otherPriv, kid, claims(nil))
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + strings.TrimRight(parts[1], "=") + "x." + parts[2]
	noneTok := rawToken(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, kid, claims(nil))
	confused := rawToken(t, jwt.SigningMethodHS256, []byte(pub), kid, claims(nil))

	tests := []struct {
		name  string
		token string
		room  string
		now   time.Time
		ok    bool
	}{
		{"valid", valid, "default", now, true},
		{"valid, made by hand", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(nil)), "default", now, true},
		{"valid within leeway", valid, "default", now.Add(5*time.Minute + Leeway - time.Second), true},
		{"expired", valid, "default", now.Add(5*time.Minute + Leeway + time.Second), false},
		{"other room", valid, "other", now, false},
		{"forged with another key under our kid", forgedKID, "default", now, false},
		{"tampered payload", tampered, "default", now, false},
		{"alg none", noneTok, "default", now, false},
		{"HS256 keyed with the public key", confused, "default", now, false},
		{"HS256 from another set", rawToken(t, jwt.SigningMethodHS256, hm.byKID[hm.SigningKID()].hmac, hm.SigningKID(), claims(nil)), "default", now, false},
		{"no exp", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { delete(c, "exp") })), "default", now, false},
		{"no iat", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { delete(c, "iat") })), "default", now, false},
		{"wrong issuer", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { c["iss"] = "evil" })), "default", now, false},
		{"two audiences", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { c["aud"] = []string{"default", "other"} })), "default", now, false},
		{"subject not the ticket", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { c["sub"] = "admin" })), "default", now, false},
		{"subject another ticket", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { c["sub"] = "8" })), "default", now, false},
		{"subject the session id, no seal (a pass of before)", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { c["sub"] = s.ID; delete(c, "ssn") })), "default", now, false},
		{"no ticket", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { delete(c, "tkt") })), "default", now, false},
		{"no seal", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { delete(c, "ssn") })), "default", now, false},
		{"seal of another ticket", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { c["ssn"] = seal.seal(s.ID, "default", 8) })), "default", now, false},
		{"seal of another room", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { c["ssn"] = seal.seal(s.ID, "other", 7) })), "default", now, false},
		{"seal of another key", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { c["ssn"] = other.byKID[other.SigningKID()].seal.seal(s.ID, "default", 7) })), "default", now, false},
		{"seal of no session id", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { c["ssn"] = seal.seal("admin", "default", 7) })), "default", now, false},
		{"seal not base64", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { c["ssn"] = "!!" })), "default", now, false},
		{"seal too long", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { c["ssn"] = strings.Repeat("A", maxSealLen+1) })), "default", now, false},
		{"unknown kid", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, "nope", claims(nil)), "default", now, false},
		{"no kid", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, "", claims(nil)), "default", now, false},
		{"issued in the future", rawToken(t, jwt.SigningMethodEdDSA, ks.signing.priv, kid, claims(func(c jwt.MapClaims) { c["iat"] = now.Add(time.Hour).Unix() })), "default", now, false},
		{"empty", "", "default", now, false},
		{"garbage", "a.b.c", "default", now, false},
		{"too long", valid + strings.Repeat("A", MaxPassLength), "default", now, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Verify(ks, "", tc.room, tc.token, tc.now)
			if tc.ok {
				if err != nil {
					t.Fatalf("Verify: got error %v, want a valid pass", err)
				}
				if c.Session != s.ID || c.Room != "default" || c.Ticket != 7 {
					t.Errorf("claims: got %+v, want session of ticket 7 in default", c)
				}
				return
			}
			if err == nil {
				t.Fatalf("Verify: got valid claims %+v, want an error", c)
			}
			if !errors.Is(err, ErrInvalidPass) {
				t.Errorf("Verify: got %v, want it to wrap ErrInvalidPass", err)
			}
		})
	}
}

func TestHMACKeySet(t *testing.T) {
	if _, err := NewHMACKeySet([]byte("short")); err == nil {
		t.Error("NewHMACKeySet(short secret): got no error, want one")
	}
	ks, err := NewHMACKeySet([]byte(strings.Repeat("s", 32)))
	if err != nil {
		t.Fatal(err)
	}
	s := testSession()
	tok, err := SignPass(ks, DefaultIssuer, s, t0, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(ks, "", "default", tok, t0); err != nil {
		t.Errorf("Verify HS256 pass: got %v, want valid", err)
	}
	ed, _ := NewKeySet(AlgEdDSA)
	edTok, _ := SignPass(ed, DefaultIssuer, s, t0, t0.Add(time.Minute))
	if _, err := Verify(ks, "", "default", edTok, t0); err == nil {
		t.Error("Verify an EdDSA pass with an HS256 set: got valid, want refused")
	}
	var set struct{ Keys []any }
	if err := json.Unmarshal(ks.JWKS(), &set); err != nil || len(set.Keys) != 0 {
		t.Errorf("HS256 JWKS: got %s (err %v), want no keys", ks.JWKS(), err)
	}
	if strings.Contains(string(ks.JWKS()), "sss") || strings.Contains(ks.SigningKID(), "sss") {
		t.Error("the HS256 secret shows in the JWKS or kid")
	}
}

func TestLoadKeysRotation(t *testing.T) {
	for _, alg := range []string{AlgEdDSA, AlgHS256} {
		t.Run(alg, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "keys")
			ks, err := LoadKeys(dir, alg)
			if err != nil {
				t.Fatalf("LoadKeys: %v", err)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Fatalf("key folder holds %d files, want 1", len(entries))
			}
			info, _ := entries[0].Info()
			if info.Mode().Perm() != 0o600 {
				t.Errorf("key file mode: got %v, want 0600", info.Mode().Perm())
			}
			if d, _ := os.Stat(dir); d.Mode().Perm() != 0o700 {
				t.Errorf("key folder mode: got %v, want 0700", d.Mode().Perm())
			}
			again, err := LoadKeys(dir, alg)
			if err != nil || again.SigningKID() != ks.SigningKID() {
				t.Fatalf("LoadKeys again: got kid %q (err %v), want the same key %q", again.SigningKID(), err, ks.SigningKID())
			}
			s := testSession()
			old, _ := SignPass(ks, DefaultIssuer, s, t0, t0.Add(time.Minute))
			// Make sure the new key's mtime is later even on coarse clocks.
			past := time.Now().Add(-time.Hour)
			_ = os.Chtimes(filepath.Join(dir, entries[0].Name()), past, past)
			kid, err := RotateKey(dir, alg)
			if err != nil {
				t.Fatalf("RotateKey: %v", err)
			}
			rotated, err := LoadKeys(dir, alg)
			if err != nil {
				t.Fatal(err)
			}
			if rotated.SigningKID() != kid || kid == ks.SigningKID() {
				t.Errorf("after rotation: signing kid %q, want the new %q", rotated.SigningKID(), kid)
			}
			if _, err := Verify(rotated, "", "default", old, t0); err != nil {
				t.Errorf("a pass signed before the rotation: got %v, want still valid", err)
			}
			if alg == AlgEdDSA {
				var set struct {
					Keys []map[string]string `json:"keys"`
				}
				if err := json.Unmarshal(rotated.JWKS(), &set); err != nil || len(set.Keys) != 2 {
					t.Fatalf("JWKS: got %s (err %v), want 2 keys", rotated.JWKS(), err)
				}
				for _, k := range set.Keys {
					if _, ok := k["d"]; ok {
						t.Error("JWKS publishes a private key (d)")
					}
				}
				// A JWKS verifier built from it checks both.
				pubs, err := parseJWKS(rotated.JWKS())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := Verify(pubs, "", "default", old, t0); err != nil {
					t.Errorf("verify with the published keys: %v", err)
				}
				if _, err := SignPass(pubs, DefaultIssuer, s, t0, t0.Add(time.Minute)); err == nil {
					t.Error("signing with a public-only set: got a token, want an error")
				}
			}
		})
	}
}

func TestNewEd25519KeySet(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(nil)
	ks, err := NewEd25519KeySet(priv)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := SignPass(ks, "me", testSession(), t0, t0.Add(time.Minute))
	if _, err := Verify(ks, "me", "default", tok, t0); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if _, err := NewEd25519KeySet(); err == nil {
		t.Error("NewEd25519KeySet(): got no error, want one")
	}
}

func TestVerifyRefusesOtherSpellings(t *testing.T) {
	ks, _ := NewKeySet(AlgEdDSA)
	tok, _ := SignPass(ks, DefaultIssuer, testSession(), t0, t0.Add(time.Minute))
	// The last character of the signature carries two unused bits; setting
	// them gives the same bytes in a non-canonical spelling.
	last := tok[len(tok)-1]
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, last)
	variant := tok[:len(tok)-1] + string(alphabet[i^1])
	if _, err := Verify(ks, "", "default", variant, t0); err == nil {
		t.Errorf("Verify of a non-canonical spelling of a valid pass: got valid, want refused")
	}
}

// t0 is the tests' fixed now.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// TestPassHidesSession: a pass names its session by ticket, never by id.
// Nothing in the token (header, payload, signature) holds the id or its
// secret; waitroom's own key set reads the id from the seal, and an app
// with the public keys (the JWKS) verifies the pass without learning it.
func TestPassHidesSession(t *testing.T) {
	for _, alg := range []string{AlgEdDSA, AlgHS256} {
		t.Run(alg, func(t *testing.T) {
			ks, err := NewKeySet(alg)
			if err != nil {
				t.Fatal(err)
			}
			s := testSession()
			tok, err := SignPass(ks, DefaultIssuer, s, t0, t0.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			secret := s.ID[11:] // the 16 random bytes, after the ticket
			if strings.Contains(tok, secret) {
				t.Fatalf("the pass %s holds the session's secret", tok)
			}
			parts := strings.Split(tok, ".")
			for _, p := range parts[:2] {
				b, err := base64.RawURLEncoding.DecodeString(p)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(b), s.ID) || strings.Contains(string(b), secret) {
					t.Fatalf("the pass's %s holds the session id", b)
				}
			}
			var body map[string]any
			b, _ := base64.RawURLEncoding.DecodeString(parts[1])
			if err := json.Unmarshal(b, &body); err != nil || body["sub"] != "7" {
				t.Fatalf("the pass's subject = %v (%v), want the ticket \"7\"", body["sub"], err)
			}
			c, err := Verify(ks, "", "default", tok, t0)
			if err != nil || c.Session != s.ID || c.Ticket != 7 {
				t.Fatalf("Verify with the signing set = %+v, %v; want the session id from the seal", c, err)
			}
			if alg != AlgEdDSA {
				return
			}
			pub, err := parseJWKS(ks.JWKS())
			if err != nil {
				t.Fatal(err)
			}
			c, err = Verify(pub, "", "default", tok, t0)
			if err != nil || c.Session != "" || c.Ticket != 7 || c.Room != "default" {
				t.Fatalf("Verify with the JWKS = %+v, %v; want a valid pass of ticket 7 without the session id", c, err)
			}
		})
	}
}

// FuzzOpenSeal feeds arbitrary seals to a key's opener: never a panic, and
// nothing opens but a seal this key made for that room and ticket.
func FuzzOpenSeal(f *testing.F) {
	ks, err := NewKeySet(AlgEdDSA)
	if err != nil {
		f.Fatal(err)
	}
	s := ks.byKID[ks.SigningKID()].seal
	id := waitroom.NewSessionID(7).String()
	good := s.seal(id, "default", 7)
	f.Add(good, "default", int64(7))
	f.Add(good, "default", int64(8))
	f.Add(good, "other", int64(7))
	f.Add(good[:len(good)-1], "default", int64(7))
	f.Add("", "default", int64(7))
	f.Add("AAAA", "default", int64(0))
	f.Add(strings.Repeat("_", maxSealLen), "default", int64(-1))
	f.Fuzz(func(t *testing.T, sealed, room string, ticket int64) {
		got, err := s.open(sealed, room, ticket)
		if err != nil {
			return
		}
		if sealed != good || room != "default" || ticket != 7 || got != id {
			t.Fatalf("open(%q, %q, %d) = %q, which this key did not seal", sealed, room, ticket, got)
		}
	})
}
