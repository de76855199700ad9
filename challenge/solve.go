package challenge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
)

// widgetMaxNumber is the ALTCHA widget's maxnumber for a challenge that
// names none.
const widgetMaxNumber = 1_000_000

// checkEvery is how many hashes Solve tries between looks at its context:
// about a millisecond's work.
const checkEvery = 4096

// Solve finds the secret number of c by brute force, as the ALTCHA widget
// does, and returns the solution as the widget sends it (standard base64 of
// the solution's JSON), ready for Verify. It is for Go clients: bots of the
// load generator and API clients. It returns ctx's error, wrapped, once ctx
// is done, checking every few thousand hashes.
func Solve(ctx context.Context, c Challenge) (payload string, err error) {
	return SolveCounted(ctx, c, nil)
}

// SolveCounted is Solve that adds the hashes it tries to hashes (when not
// nil) as it goes, every few thousand and at the end, so the compute a
// party spent is known even for solves cut short; and it yields the CPU at
// each count, so many solvers in one process share it alike (a load
// generator's crowd, each one browser's worth of compute).
func SolveCounted(ctx context.Context, c Challenge, hashes *atomic.Int64) (payload string, err error) {
	if c.Algorithm != Algorithm {
		return "", fmt.Errorf("challenge: unsupported algorithm %q", c.Algorithm)
	}
	target, err := hex.DecodeString(c.Challenge)
	if err != nil || len(target) != sha256.Size {
		return "", errors.New("challenge: the challenge is not a hex SHA-256 hash")
	}
	maxN := c.MaxNumber
	if maxN <= 0 {
		maxN = widgetMaxNumber
	}
	buf := []byte(c.Salt)
	saltLen := len(buf)
	var tried, counted int64
	if hashes != nil {
		defer func() { hashes.Add(tried - counted) }()
	}
	for n := int64(0); n <= maxN; n++ {
		if tried-counted == checkEvery {
			if hashes != nil {
				hashes.Add(checkEvery)
				runtime.Gosched()
			}
			counted = tried
			if err := ctx.Err(); err != nil {
				return "", fmt.Errorf("challenge: solving: %w", err)
			}
		}
		buf = strconv.AppendInt(buf[:saltLen], n, 10)
		tried++
		if sum := sha256.Sum256(buf); bytes.Equal(sum[:], target) {
			return EncodeSolution(c, n)
		}
	}
	return "", fmt.Errorf("challenge: no number in [0, %d] solves the challenge", maxN)
}

// EncodeSolution returns the widget's form of the solution n to c:
// standard base64 of its JSON, as Verify takes it.
func EncodeSolution(c Challenge, n int64) (string, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false) // the salt's '&' stays one byte, as the widget's JSON.stringify writes it
	err := e.Encode(struct {
		Algorithm string `json:"algorithm"`
		Challenge string `json:"challenge"`
		Number    int64  `json:"number"`
		Salt      string `json:"salt"`
		Signature string `json:"signature"`
	}{c.Algorithm, c.Challenge, n, c.Salt, c.Signature})
	if err != nil {
		return "", fmt.Errorf("challenge: encoding the solution: %w", err)
	}
	return base64.StdEncoding.EncodeToString(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}
