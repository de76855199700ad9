package invite

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// FuzzVerify feeds arbitrary tokens to Verify. It must never panic, must
// fail only with the invite codes, and must accept only the tokens signed
// here: a forgery, or a second spelling of a signed token, is a finding.
func FuzzVerify(f *testing.F) {
	keys := []ed25519.PublicKey{testPub}
	c := testClaims()
	one := c
	one.Uses = 0
	one.Tier, one.Key = "", ""
	other := c
	other.Room = "other"
	expired := c
	expired.Expires = testNow

	valid := map[string]bool{}
	for _, sign := range []func(testing.TB, Claims) string{mustHMAC, mustEd} {
		for _, cl := range []Claims{c, one} {
			tok := sign(f, cl)
			valid[tok] = true
			f.Add(tok)
		}
		f.Add(sign(f, other))
		f.Add(sign(f, expired))
	}
	for tok := range valid {
		if _, err := Verify(tok, "drop", testNow, testSecret, keys); err != nil {
			f.Fatalf("seed %q does not verify: %v", tok, err)
		}
	}
	for _, s := range []string{"", "wr1.", "wr1..", "wr1.e30.", "wr1.bnVsbA.AAAA", strings.Repeat("A", MaxTokenLen+1)} {
		f.Add(s)
	}

	f.Fuzz(func(t *testing.T, tok string) {
		got, err := Verify(tok, "drop", testNow, testSecret, keys)
		if err == nil {
			if !valid[tok] {
				t.Fatalf("Verify accepted %q, which was never signed: %+v", tok, got)
			}
			return
		}
		var e *waitroom.Error
		if !errors.As(err, &e) {
			t.Fatalf("Verify(%q) error %v (%T), want a *waitroom.Error", tok, err, err)
		}
		switch e.Code {
		case waitroom.CodeInviteInvalid, waitroom.CodeInviteExpired, waitroom.CodeInviteWrongRoom:
		default:
			t.Fatalf("Verify(%q) error code %s, want an invite code", tok, e.Code)
		}
		if e.Code != waitroom.CodeInviteInvalid && !strings.HasPrefix(tok, "wr1.") {
			t.Fatalf("Verify(%q) = %v for input nobody signed, want invite_invalid", tok, err)
		}
		if got != (Claims{}) {
			t.Fatalf("Verify(%q) returned claims %+v with an error", tok, got)
		}
	})
}

// FuzzSignVerify signs arbitrary claims: whatever Sign accepts, Verify must
// return unchanged, whatever JSON escaping the fields need.
func FuzzSignVerify(f *testing.F) {
	f.Add("drop", "abc", "vip", "alice@example.com", 3, int64(1800003600))
	f.Add("r", "i", "", "\"<&>\u2028\\", 0, int64(1))
	f.Fuzz(func(t *testing.T, room, id, tier, key string, uses int, exp int64) {
		c := Claims{Room: room, ID: id, Tier: tier, Key: key, Uses: uses, Expires: time.Unix(exp, 0)}
		want := c
		if want.Uses == 0 {
			want.Uses = 1
		}
		now := time.Unix(0, 0)
		for _, sign := range []func() (string, error){
			func() (string, error) { return SignHMAC(c, testSecret) },
			func() (string, error) { return SignEd25519(c, testPriv) },
		} {
			tok, err := sign()
			if err != nil {
				if waitroom.ErrorCode(err) != waitroom.CodeInvalidRequest {
					t.Fatalf("Sign(%+v): %v, want invalid_request", c, err)
				}
				continue
			}
			got, err := Verify(tok, room, now, testSecret, []ed25519.PublicKey{testPub})
			if err != nil {
				t.Fatalf("Verify of a token signed from %+v: %v", c, err)
			}
			if got.Room != want.Room || got.ID != want.ID || got.Tier != want.Tier || got.Key != want.Key ||
				got.Uses != want.Uses || !got.Expires.Equal(want.Expires) {
				t.Fatalf("claims = %+v, want %+v", got, want)
			}
		}
	})
}
