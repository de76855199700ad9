package crowd_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/challenge"
	"github.com/waitroom/waitroom/internal/crowd"
)

// TestSolveCountingMatchesSolve: the attack's counting solver does the same
// work as challenge.Solve (same solution, one hash per number tried up to
// the answer), so hashes counted are the compute a browser would spend.
func TestSolveCountingMatchesSolve(t *testing.T) {
	iss := challenge.New([]byte("attack-test-key-0123456789abcdef"), time.Minute)
	now := time.Now()
	for i := range 20 {
		c, err := iss.Issue("attack", 5000, now)
		if err != nil {
			t.Fatal(err)
		}
		want, err := challenge.Solve(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		var hashes atomic.Int64
		got, err := crowd.SolveCounting(t.Context(), c, &hashes)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("challenge %d: SolveCounting gave %q, challenge.Solve %q", i, got, want)
		}
		if _, err := iss.Verify(got, "attack", now); err != nil {
			t.Fatalf("challenge %d: Verify: %v", i, err)
		}
		// The number found is n; n+1 numbers (0..n) were hashed.
		n := numberOf(t, iss, c, now)
		if hashes.Load() != n+1 {
			t.Fatalf("challenge %d: counted %d hashes, want %d (numbers 0 to %d)", i, hashes.Load(), n+1, n)
		}
	}
}

// numberOf finds c's secret number by asking Verify about each candidate:
// slow, independent of the solvers under test.
func numberOf(t *testing.T, iss *challenge.Issuer, c challenge.Challenge, now time.Time) int64 {
	t.Helper()
	for n := int64(0); n <= c.MaxNumber; n++ {
		p := `{"algorithm":"SHA-256","challenge":"` + c.Challenge + `","number":` + strconv.FormatInt(n, 10) + `,"salt":"` + c.Salt + `","signature":"` + c.Signature + `"}`
		if _, err := iss.Verify(p, "attack", now); err == nil {
			return n
		}
	}
	t.Fatal("no number solves the challenge")
	return 0
}

// TestSolveCountingStops: a solve cut short returns the context's error and
// has counted the hashes it tried.
func TestSolveCountingStops(t *testing.T) {
	iss := challenge.New([]byte("attack-test-key-0123456789abcdef"), time.Minute)
	c, err := iss.Issue("attack", challenge.MaxNumberLimit, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	var hashes atomic.Int64
	_, err = crowd.SolveCounting(ctx, c, &hashes)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got error %v, want the context's deadline", err)
	}
	if h := hashes.Load(); h < 1024 || h%1024 != 0 {
		t.Fatalf("counted %d hashes in 50ms, want a positive multiple of 1024 (one per number tried)", h)
	}
}
