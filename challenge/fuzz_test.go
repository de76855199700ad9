package challenge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/waitroom/waitroom"
)

// FuzzVerify checks that Verify never panics and fails only with the
// challenge codes, that only the one solution signed with the key passes,
// and that whatever the hand parser accepts, encoding/json reads the same.
func FuzzVerify(f *testing.F) {
	now := time.Unix(1_750_000_000, 0)
	iss := New([]byte("fuzzing key, 16+ bytes"), time.Minute)
	// Not Issue: fuzzing workers run this setup again, and the seeds the
	// coordinator made must stay valid in every one of them.
	c := fixedChallenge(iss, "0123456789abcdef01234567?expires=1750000060&room=room-a&max=1000&", 568)
	valid, err := Solve(context.Background(), c)
	if err != nil {
		f.Fatal(err)
	}
	text, _ := base64.StdEncoding.DecodeString(valid)
	var m map[string]any
	if err := json.Unmarshal(text, &m); err != nil {
		f.Fatal(err)
	}
	m["took"] = 321
	escaped, _ := json.Marshal(m) // '&' as \u0026, and the extra field
	other, _ := Solve(context.Background(), fixedChallenge(New([]byte("another key, 16+ bytes"), 0), c.Salt, 568))

	for _, s := range []string{
		valid, string(text), string(escaped), base64.RawStdEncoding.EncodeToString(escaped), other,
		strings.Replace(string(text), `"number":`, `"number":1`, 1),
		strings.Replace(string(text), `"number":`, `"number":-`, 1),
		strings.Replace(string(text), `"salt":"`, `"salt":"\ud800\udc00\u00e9`, 1),
		// The number's digits moved into the salt, with and without its
		// terminator: each still hashes to the signed challenge.
		spliced(c, c.Salt+"5", "68"), spliced(c, c.Salt+"56", "8"),
		spliced(c, strings.TrimSuffix(c.Salt, "&")+"5", "68"), spliced(c, strings.TrimSuffix(c.Salt, "&")+"56", "8"),
		string(text[:len(text)-1]) + `,"x":[{"y":[1.5e-3,true,false,null,"\n"]}]}`,
		"", "{", "}", "{}", "[]", `{"number":0}`, "null", "e30=", "e30", "!!!!", "\x00\xff",
		strings.Repeat("[", 100), `{"a":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "}",
		strings.Repeat("A", MaxPayloadLen+1),
	} {
		f.Add(s)
	}

	f.Fuzz(func(t *testing.T, payload string) {
		s, err := iss.Verify(payload, "room-a", now)
		if err == nil {
			// Nobody without the key can sign, so the seed is the only
			// solution there is.
			if s.ID != c.Challenge || !s.Expires.Equal(now.Add(time.Minute)) || s.MaxNumber != 1000 {
				t.Fatalf("Verify(%q) = %+v, want the seed's challenge", payload, s)
			}
			if _, err := iss.Verify(payload, "room-b", now); waitroom.ErrorCode(err) != waitroom.CodeChallengeWrongRoom {
				t.Fatalf("for another room: %v, want wrong room", err)
			}
			if _, err := iss.Verify(payload, "room-a", now.Add(time.Minute)); waitroom.ErrorCode(err) != waitroom.CodeChallengeExpired {
				t.Fatalf("at expiry: %v, want expired", err)
			}
		} else {
			var we *waitroom.Error
			if !errors.As(err, &we) {
				t.Fatalf("Verify(%q): %v (%T), want a *waitroom.Error", payload, err, err)
			}
			switch we.Code {
			case waitroom.CodeChallengeInvalid, waitroom.CodeChallengeExpired, waitroom.CodeChallengeWrongRoom:
			default:
				t.Fatalf("Verify(%q): code %s", payload, we.Code)
			}
			if we.Message == "" {
				t.Fatalf("Verify(%q): empty message", payload)
			}
		}

		// The parser against encoding/json, on the JSON text of either form.
		raw := []byte(payload)
		if len(raw) == 0 || raw[0] != '{' {
			raw, err = base64.StdEncoding.DecodeString(payload)
			if err != nil {
				return
			}
		}
		if !utf8.Valid(raw) {
			return // encoding/json turns invalid UTF-8 into U+FFFD; we keep it (it can never match)
		}
		sol, ok := parseSolution(bytes.Clone(raw))
		if !ok {
			return
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			t.Fatalf("parser accepted %q, encoding/json did not: %v", raw, err)
		}
		if got := string(fields["number"]); got != string(sol.number) {
			t.Fatalf("%q: number = %q, encoding/json read %q", raw, sol.number, got)
		}
		for name, got := range map[string][]byte{"algorithm": sol.algorithm, "challenge": sol.challenge, "salt": sol.salt, "signature": sol.signature} {
			var want string
			if err := json.Unmarshal(fields[name], &want); err != nil {
				t.Fatalf("%q: %s: encoding/json: %v", raw, name, err)
			}
			if string(got) != want {
				t.Fatalf("%q: %s = %q, encoding/json read %q", raw, name, got, want)
			}
		}
	})
}

// spliced is the JSON of a solution to c with salt and number replaced.
func spliced(c Challenge, salt, number string) string {
	return `{"algorithm":"SHA-256","challenge":"` + c.Challenge + `","number":` + number + `,"salt":"` + salt + `","signature":"` + c.Signature + `"}`
}

// fixedChallenge returns the challenge of secret number n with salt,
// signed by iss.
func fixedChallenge(iss *Issuer, salt string, n uint64) Challenge {
	sum := hashNumber([]byte(salt), n)
	h := hex.EncodeToString(sum[:])
	return Challenge{Algorithm: Algorithm, Challenge: h, MaxNumber: 1000, Salt: salt, Signature: string(iss.sign(nil, []byte(h)))}
}
