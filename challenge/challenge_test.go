package challenge_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/challenge"
)

var (
	testKey = []byte("0123456789abcdef0123456789abcdef")
	t0      = time.Unix(1_750_000_000, 0)
)

// issueSolved issues a challenge for room and solves it.
func issueSolved(t testing.TB, iss *challenge.Issuer, room string, maxN int64) (challenge.Challenge, string) {
	t.Helper()
	c, err := iss.Issue(room, maxN, t0)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	p, err := challenge.Solve(context.Background(), c)
	if err != nil {
		t.Fatalf("Solve: %v", err)
	}
	return c, p
}

// fields decodes a base64 payload into its JSON object.
func fields(t testing.TB, payload string) map[string]any {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		t.Fatalf("payload is not base64: %v", err)
	}
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("payload is not JSON: %v", err)
	}
	return m
}

// encode returns the base64 payload of m.
func encode(t testing.TB, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func wantCode(t *testing.T, err error, want waitroom.Code) {
	t.Helper()
	var we *waitroom.Error
	if !errors.As(err, &we) {
		t.Fatalf("error = %v (%T), want a *waitroom.Error with code %s", err, err, want)
	}
	if we.Code != want {
		t.Fatalf("code = %s (%s), want %s", we.Code, we.Message, want)
	}
	if we.Message == "" || strings.Contains(we.Message, "%!") {
		t.Fatalf("bad message %q", we.Message)
	}
}

func TestRoundTrip(t *testing.T) {
	iss := challenge.New(testKey, time.Minute)
	c, p := issueSolved(t, iss, "sale-2025", 5000)
	if c.Algorithm != "SHA-256" || len(c.Challenge) != 64 || len(c.Signature) != 64 || c.MaxNumber != 5000 {
		t.Fatalf("challenge = %+v", c)
	}
	if want := "?expires=1750000060&room=sale-2025&max=5000&"; !strings.HasSuffix(c.Salt, want) || len(c.Salt) != 24+len(want) {
		t.Fatalf("salt = %q, want 24 hex digits then %q", c.Salt, want)
	}
	s, err := iss.Verify(p, "sale-2025", t0.Add(59*time.Second))
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if s.ID != c.Challenge || !s.Expires.Equal(t0.Add(time.Minute)) || s.MaxNumber != 5000 {
		t.Fatalf("Solved = %+v, want ID %s, Expires %v", s, c.Challenge, t0.Add(time.Minute))
	}

	// Another Issuer with the same key (another process) accepts it too.
	if _, err := challenge.New(testKey, 0).Verify(p, "sale-2025", t0); err != nil {
		t.Fatalf("Verify by a second issuer: %v", err)
	}

	// The JSON forms API clients may send: plain, HTML-escaped by
	// encoding/json, spaced out and with the widget's extra "took" field,
	// and base64 without padding.
	raw, _ := base64.StdEncoding.DecodeString(p)
	m := fields(t, p)
	m["took"] = 1234
	m["test"] = map[string]any{"nested": []any{1.5e3, -2, true, false, nil, "\u00e9\"\\"}}
	escaped, _ := json.Marshal(m)
	if !strings.Contains(string(escaped), `\u0026`) {
		t.Fatalf("want encoding/json to escape '&': %s", escaped)
	}
	spaced, _ := json.MarshalIndent(m, "", "\t")
	for name, form := range map[string]string{
		"json":      string(raw),
		"escaped":   string(escaped),
		"indented":  string(spaced),
		"unpadded":  strings.TrimRight(base64.StdEncoding.EncodeToString(spaced), "="),
		"unpadded2": base64.RawStdEncoding.EncodeToString(escaped),
	} {
		if _, err := iss.Verify(form, "sale-2025", t0); err != nil {
			t.Errorf("Verify(%s form %q): %v", name, form, err)
		}
	}
}

func TestEveryNumberReachable(t *testing.T) {
	// With maxnumber 3, every number 0..3 is drawn and nothing larger.
	iss := challenge.New(testKey, 0)
	seen := map[string]int{}
	for range 400 {
		_, p := issueSolved(t, iss, "r", 3)
		n := fields(t, p)["number"].(json.Number).String()
		seen[n]++
	}
	for _, n := range []string{"0", "1", "2", "3"} {
		if seen[n] == 0 {
			t.Errorf("number %s never drawn: %v", n, seen)
		}
	}
	if len(seen) != 4 {
		t.Errorf("numbers drawn = %v, want only 0..3", seen)
	}
}

func TestVerifyRejects(t *testing.T) {
	iss := challenge.New(testKey, time.Minute)
	c, p := issueSolved(t, iss, "room-a", 2000)
	m := fields(t, p)
	n, _ := m["number"].(json.Number).Int64()

	with := func(k string, v any) string {
		mm := map[string]any{}
		for kk, vv := range m {
			mm[kk] = vv
		}
		if v == nil {
			delete(mm, k)
		} else {
			mm[k] = v
		}
		return encode(t, mm)
	}
	flip := func(s string) string { // change the last hex digit
		b := []byte(s)
		if b[len(b)-1] == '0' {
			b[len(b)-1] = '1'
		} else {
			b[len(b)-1] = '0'
		}
		return string(b)
	}
	_, otherKeyPayload := issueSolved(t, challenge.New([]byte("another key of 16+ bytes"), time.Minute), "room-a", 2000)
	c2, p2 := issueSolved(t, iss, "room-a", 2000)
	m2 := fields(t, p2)

	invalid := map[string]string{
		"empty":              "",
		"junk":               "hello world",
		"not base64 json":    base64.StdEncoding.EncodeToString([]byte("not json")),
		"empty object":       "{}",
		"wrong number":       with("number", n+1),
		"number as string":   with("number", m["number"].(json.Number).String()),
		"negative number":    with("number", -1),
		"fraction":           with("number", json.Number(m["number"].(json.Number).String()+".0")),
		"missing number":     with("number", nil),
		"missing salt":       with("salt", nil),
		"wrong algorithm":    with("algorithm", "SHA-1"),
		"lowercase alg":      with("algorithm", "sha-256"),
		"tampered salt":      with("salt", strings.Replace(c.Salt, "room=room-a", "room=room-b", 1)),
		"higher max":         with("salt", strings.Replace(c.Salt, "max=2000&", "max=20000&", 1)),
		"salt with a suffix": with("salt", c.Salt+"x=1&"),
		"salt cut short":     with("salt", strings.TrimSuffix(c.Salt, "&")),
		"number into salt":   with("salt", c.Salt+m["number"].(json.Number).String()),
		"later expiry":       with("salt", strings.Replace(c.Salt, "expires=17", "expires=27", 1)),
		"tampered signature": with("signature", flip(c.Signature)),
		"upper signature":    with("signature", strings.ToUpper(c.Signature)),
		"short signature":    with("signature", c.Signature[:63]),
		"tampered challenge": with("challenge", flip(c.Challenge)),
		"swapped signature":  with("signature", c2.Signature),
		"swapped salt":       with("salt", m2["salt"]),
		"other key":          otherKeyPayload,
		"too long":           with("pad", strings.Repeat("x", challenge.MaxPayloadLen)),
		"trailing junk":      base64.StdEncoding.EncodeToString(append(mustDecode(t, p), 'x')),
		"two objects":        base64.StdEncoding.EncodeToString(append(mustDecode(t, p), mustDecode(t, p)...)),
		"duplicate field":    base64.StdEncoding.EncodeToString(append([]byte(`{"number":0,`), mustDecode(t, p)[1:]...)),
	}
	for name, payload := range invalid {
		t.Run(name, func(t *testing.T) {
			_, err := iss.Verify(payload, "room-a", t0)
			wantCode(t, err, waitroom.CodeChallengeInvalid)
		})
	}

	// The same solution is still good: the cases above changed copies.
	if _, err := iss.Verify(p, "room-a", t0); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func mustDecode(t testing.TB, p string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVerifyExpiredAndWrongRoom(t *testing.T) {
	iss := challenge.New(testKey, time.Minute)
	_, p := issueSolved(t, iss, "room-a", 1000)

	if _, err := iss.Verify(p, "room-a", t0.Add(time.Minute-time.Nanosecond)); err != nil {
		t.Fatalf("Verify just before expiry: %v", err)
	}
	_, err := iss.Verify(p, "room-a", t0.Add(time.Minute))
	wantCode(t, err, waitroom.CodeChallengeExpired)
	_, err = iss.Verify(p, "room-a", t0.Add(time.Hour))
	wantCode(t, err, waitroom.CodeChallengeExpired)

	_, err = iss.Verify(p, "room-b", t0)
	wantCode(t, err, waitroom.CodeChallengeWrongRoom)
	_, err = iss.Verify(p, "", t0)
	wantCode(t, err, waitroom.CodeChallengeWrongRoom)

	// Unsigned input gets challenge_invalid even when expired and for
	// another room: nothing unsigned is read.
	_, err = challenge.New([]byte("yet another 16 byte key"), time.Minute).Verify(p, "room-b", t0.Add(time.Hour))
	wantCode(t, err, waitroom.CodeChallengeInvalid)
}

func TestRoomEscaping(t *testing.T) {
	// Waitroom's room names need no escaping, but the salt must survive
	// any name.
	iss := challenge.New(testKey, time.Minute)
	for _, room := range []string{"a&room=b", "spaces and +plus", "é/ü?x=1", "%41"} {
		c, p := issueSolved(t, iss, room, 100)
		if strings.Count(c.Salt, "&") != 3 || strings.Count(c.Salt, "?") != 1 || !strings.HasSuffix(c.Salt, "&") {
			t.Errorf("room %q: salt %q has other separators than its four", room, c.Salt)
		}
		if _, err := iss.Verify(p, room, t0); err != nil {
			t.Errorf("room %q: Verify: %v", room, err)
		}
		_, err := iss.Verify(p, "b", t0)
		wantCode(t, err, waitroom.CodeChallengeWrongRoom)
	}
}

func TestIssueArguments(t *testing.T) {
	iss := challenge.New(testKey, 0)
	for _, n := range []int64{0, -1, challenge.MaxNumberLimit + 1, math.MaxInt64} {
		if _, err := iss.Issue("r", n, t0); err == nil {
			t.Errorf("Issue(maxNumber %d) succeeded, want an error", n)
		}
	}
	if _, err := iss.Issue("r", challenge.MaxNumberLimit, t0); err != nil {
		t.Errorf("Issue(MaxNumberLimit): %v", err)
	}
	if _, err := iss.Issue(strings.Repeat("r", challenge.MaxRoomLen+1), 10, t0); err == nil {
		t.Errorf("Issue with a too long room succeeded")
	}

	// The default TTL is five minutes.
	c, err := iss.Issue("r", 10, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Salt, "expires=1750000300&") {
		t.Errorf("salt %q, want expiry five minutes after issue", c.Salt)
	}

	defer func() {
		if recover() == nil {
			t.Errorf("New with a 15-byte key did not panic")
		}
	}()
	challenge.New(make([]byte, 15), time.Minute)
}

func TestLongestRoomFits(t *testing.T) {
	// A solution for the longest room Issue accepts, with a maximal number
	// and the widget's extra field, still fits MaxPayloadLen.
	iss := challenge.New(testKey, time.Minute)
	room := strings.Repeat("r", challenge.MaxRoomLen)
	c, err := iss.Issue(room, challenge.MaxNumberLimit, t0)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{
		"algorithm": c.Algorithm, "challenge": c.Challenge, "number": int64(challenge.MaxNumberLimit),
		"salt": c.Salt, "signature": c.Signature, "took": 1_000_000_000,
	}
	if p := encode(t, m); len(p) > challenge.MaxPayloadLen {
		t.Fatalf("payload of %d bytes for the longest room exceeds MaxPayloadLen", len(p))
	}
}

func TestDifficulty(t *testing.T) {
	const lo, hi, calm = challenge.DefaultMin, challenge.DefaultMax, challenge.DefaultCalm
	for _, tc := range []struct {
		minN, maxN, rate, calm, want int64
	}{
		{lo, hi, 0, calm, lo},
		{lo, hi, -5, calm, lo},
		{lo, hi, calm, calm, lo},
		{lo, hi, calm + 1, calm, lo + lo/calm}, // 20,033
		{lo, hi, 2 * calm, calm, 2 * lo},
		{lo, hi, 3 * calm, calm, 3 * lo},
		{lo, hi, 4 * calm, calm, 4 * lo},
		{lo, hi, 64 * calm, calm, 64 * lo},
		{lo, hi, 100 * calm, calm, hi},
		{lo, hi, 1000 * calm, calm, hi},
		{lo, hi, math.MaxInt64, calm, hi},
		{math.MaxInt64 / 2, math.MaxInt64, math.MaxInt64, 3, math.MaxInt64}, // product overflows 64 bits
		{1 << 40, 1 << 62, 1 << 30, 1 << 20, 1 << 50},                       // product needs 70 bits; quotient fits
		{lo, hi, 1, 0, hi},                                                  // no calm rate: any join is busy
		{lo, hi, 0, 0, lo},                                                  // … but no joins is calm
		{lo, lo / 2, 10 * calm, calm, lo},                                   // maxN below minN
		{0, hi, 10 * calm, calm, 0},
	} {
		if got := challenge.Difficulty(tc.minN, tc.maxN, tc.rate, tc.calm); got != tc.want {
			t.Errorf("Difficulty(%d, %d, %d, %d) = %d, want %d", tc.minN, tc.maxN, tc.rate, tc.calm, got, tc.want)
		}
	}
}

func TestSolveContext(t *testing.T) {
	iss := challenge.New(testKey, time.Minute)
	// The secret number is drawn from [0, 2^53): reaching it takes years,
	// so only the context can end Solve.
	c, err := iss.Issue("r", challenge.MaxNumberLimit, t0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := challenge.Solve(ctx, c); !errors.Is(err, context.Canceled) {
		t.Errorf("Solve with a cancelled context: %v, want context.Canceled", err)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = challenge.Solve(ctx, c)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Solve with a deadline: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Solve returned %v after its deadline of 50ms", d)
	}
}

func TestSolveErrors(t *testing.T) {
	iss := challenge.New(testKey, time.Minute)
	c, err := iss.Issue("r", 1000, t0)
	if err != nil {
		t.Fatal(err)
	}
	bad := c
	bad.Algorithm = "SHA-512"
	if _, err := challenge.Solve(context.Background(), bad); err == nil {
		t.Errorf("Solve of a SHA-512 challenge succeeded")
	}
	bad = c
	bad.Challenge = "xyz"
	if _, err := challenge.Solve(context.Background(), bad); err == nil {
		t.Errorf("Solve of a non-hex challenge succeeded")
	}
	// A challenge whose maxnumber hides the secret has no solution.
	bad = c
	bad.Challenge = strings.Repeat("0", 64)
	if _, err := challenge.Solve(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "no number") {
		t.Errorf("Solve of an unsolvable challenge: %v, want no number", err)
	}
}

func BenchmarkVerify(b *testing.B) {
	iss := challenge.New(testKey, time.Minute)
	_, p := issueSolved(b, iss, "sale-2025", challenge.DefaultMin)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := iss.Verify(p, "sale-2025", t0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyParallel(b *testing.B) {
	iss := challenge.New(testKey, time.Minute)
	_, p := issueSolved(b, iss, "sale-2025", challenge.DefaultMin)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := iss.Verify(p, "sale-2025", t0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkVerifyBadSignature is the cost of junk that parses: what an
// attacker can make the server pay without doing any work.
func BenchmarkVerifyBadSignature(b *testing.B) {
	iss := challenge.New(testKey, time.Minute)
	_, p := issueSolved(b, challenge.New([]byte("some other key, 16+"), time.Minute), "sale-2025", 100)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := iss.Verify(p, "sale-2025", t0); err == nil {
			b.Fatal("accepted")
		}
	}
}

func BenchmarkIssue(b *testing.B) {
	iss := challenge.New(testKey, time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := iss.Issue("sale-2025", challenge.DefaultMin, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSolve reports Go's hash rate: a challenge of DefaultMax takes
// DefaultMax/2 hashes on average.
func BenchmarkSolve(b *testing.B) {
	iss := challenge.New(testKey, time.Minute)
	c, err := iss.Issue("sale-2025", challenge.MaxNumberLimit, t0)
	if err != nil {
		b.Fatal(err)
	}
	c.MaxNumber = 100_000 // almost surely below the secret: exactly 100,001 hashes
	b.ResetTimer()
	for b.Loop() {
		challenge.Solve(context.Background(), c)
	}
	b.ReportMetric(float64(b.N)*100_001/b.Elapsed().Seconds(), "hashes/s")
}

// TestSplicedNumberRefused: the hashed text is salt + number, so the
// number's leading digits could be moved onto the end of the salt, whose
// last parameter was max: max=20000 and number 19664 hash as max=200001966
// and number 4. Every such split is refused, as expired with the advice to
// solve a fresh challenge, since an unterminated salt is also what a
// challenge issued before salts ended with '&' looks like.
func TestSplicedNumberRefused(t *testing.T) {
	iss := challenge.New(testKey, time.Minute)
	var c challenge.Challenge
	var digits string
	for len(digits) < 3 { // a number of three digits or more, for two splits at least
		var p string
		c, p = issueSolved(t, iss, "room-a", 20_000)
		digits = fields(t, p)["number"].(json.Number).String()
	}
	for k := 1; k < len(digits); k++ {
		moved, left := digits[:k], digits[k:]
		if left[0] == '0' {
			continue // not a canonical number: refused by the parser already
		}
		for _, tc := range []struct {
			name, salt string
			want       waitroom.Code
		}{
			{"after the salt", c.Salt + moved, waitroom.CodeChallengeExpired},                    // hashes right, unterminated
			{"onto max", strings.TrimSuffix(c.Salt, "&") + moved, waitroom.CodeChallengeInvalid}, // the terminator is hashed too
		} {
			p := `{"algorithm":"SHA-256","challenge":"` + c.Challenge + `","number":` + left + `,"salt":"` + tc.salt + `","signature":"` + c.Signature + `"}`
			s, err := iss.Verify(p, "room-a", t0)
			if err == nil {
				t.Fatalf("%d digits moved %s: accepted with max %d, want refused", k, tc.name, s.MaxNumber)
			}
			wantCode(t, err, tc.want)
		}
	}
}
