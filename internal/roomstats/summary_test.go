package roomstats_test

import (
	"math"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/roomstats"
	"github.com/waitroom/waitroom/memstore"
)

// spec is the bucket k steps after t0 of TestSummaryOfAnHour, or false
// where the room had no bucket.
func spec(k int) (waitroom.StatsBucket, bool) {
	if k%7 == 3 {
		return waitroom.StatsBucket{}, false
	}
	b := waitroom.StatsBucket{
		At:         t0.Add(time.Duration(k) * waitroom.StatsStep),
		Joins:      int64(k),
		Admissions: int64(k % 5),
		Abandons:   int64(k % 3),
	}
	if k%2 == 1 {
		e := int64(k*10 - 1500)
		b.EstErrMs, b.EstErrAbsMs, b.EstN = e, max(e, -e), 1
	}
	b.Waits[k%40+1] = int64(k%5) + 1
	if k%4 == 0 {
		b.HasGauges, b.Waiting, b.Active, b.ETALastMs = true, 1000+k, k%10, int64(k)*1000
		if k%8 == 4 {
			b.ETALastMs = -1
		}
	}
	return b, true
}

// TestSummaryOfAnHour writes 400 buckets (a little over an hour, with gaps
// and with gauges in every fourth) and checks every point of the Summary,
// its waits and its estimate block against sums made here.
func TestSummaryOfAnHour(t *testing.T) {
	const last = 400 // the bucket of now
	s := memstore.New()
	defer s.Close()
	rec := roomstats.New(s, s, roomstats.Options{Sample: -1})
	defer rec.Close()
	for k := 0; k <= last; k++ {
		if b, ok := spec(k); ok {
			if err := s.AddStats(t.Context(), "r", b); err != nil {
				t.Fatal(err)
			}
		}
	}
	now := t0.Add(last*waitroom.StatsStep + 3*time.Second)
	sum, err := rec.Summary(t.Context(), "r", now)
	if err != nil {
		t.Fatalf("Summary: %v", err)
	}
	if sum.Room != "r" || !sum.At.Equal(now) || sum.StepSeconds != 10 || len(sum.Series) != 360 {
		t.Fatalf("Summary head = %q at %s, step %d, %d points", sum.Room, sum.At, sum.StepSeconds, len(sum.Series))
	}
	// The gauges the first point carries come from the latest bucket with
	// gauges at or before it: the ledger keeps the bucket just before the
	// window for that.
	first := last - 359
	var hist [waitroom.WaitBins]int64
	var errSum, errAbs, n int64
	eta := int64(-1)
	for i, p := range sum.Series {
		k := first + i
		if !p.T.Equal(t0.Add(time.Duration(k) * waitroom.StatsStep)) {
			t.Fatalf("point %d at %s, want bucket %d", i, p.T, k)
		}
		b, ok := spec(k)
		if !ok {
			b = waitroom.StatsBucket{}
		}
		var gw, ga int
		found := false
		for g := k; g >= first-1 && !found; g-- {
			if gb, ok := spec(g); ok && gb.HasGauges {
				gw, ga, found = gb.Waiting, gb.Active, true
				eta = gb.ETALastMs
			}
		}
		if p.Joins != b.Joins || p.Admissions != b.Admissions || p.Abandons != b.Abandons || p.Waiting != gw || p.Active != ga {
			t.Fatalf("point %d (bucket %d) = %+v; want joins %d, admissions %d, abandons %d, waiting %d, active %d",
				i, k, p, b.Joins, b.Admissions, b.Abandons, gw, ga)
		}
		if k > last-90 {
			for j, c := range b.Waits {
				hist[j] += c
			}
			errSum += b.EstErrMs
			errAbs += b.EstErrAbsMs
			n += b.EstN
		}
	}
	var count int64
	for _, c := range hist {
		count += c
	}
	if sum.Waits.Count != count || sum.Waits.WindowSeconds != 900 {
		t.Fatalf("waits = %+v, want %d in 900 s", sum.Waits, count)
	}
	for _, q := range []struct {
		q   float64
		got int64
	}{{0.5, sum.Waits.P50Ms}, {0.9, sum.Waits.P90Ms}, {0.99, sum.Waits.P99Ms}} {
		want, _ := roomstats.WaitPercentile(&hist, q.q)
		if q.got != want.Milliseconds() {
			t.Fatalf("p%v = %d ms, want %d", q.q*100, q.got, want.Milliseconds())
		}
	}
	e := sum.Estimate
	if e.Count != n || math.Abs(e.MeanErrorSeconds-float64(errSum)/float64(n)/1000) > 0.0005 ||
		math.Abs(e.MeanAbsErrorSeconds-float64(errAbs)/float64(n)/1000) > 0.0005 {
		t.Fatalf("estimate = %+v, want %d errors, mean %.3f, abs %.3f", e, n, float64(errSum)/float64(n)/1000, float64(errAbs)/float64(n)/1000)
	}
	if eta < 0 || e.LastETASeconds == nil || *e.LastETASeconds != float64(eta)/1000 {
		t.Fatalf("last ETA = %v, want %d ms", e.LastETASeconds, eta)
	}

	// The rates: the six complete buckets before now's.
	rates, err := rec.Overview(t.Context(), "r", now)
	if err != nil {
		t.Fatalf("Overview: %v", err)
	}
	var want roomstats.Rates
	for k := last - 6; k < last; k++ {
		if b, ok := spec(k); ok {
			want.JoinsPerMinute += b.Joins
			want.AdmissionsPerMinute += b.Admissions
		}
	}
	if rates != want {
		t.Fatalf("Overview = %+v, want %+v", rates, want)
	}

	// A room without data has a flat series and empty blocks.
	empty, err := rec.Summary(t.Context(), "quiet", now)
	if err != nil || len(empty.Series) != 360 || empty.Waits.Count != 0 || empty.Estimate.Count != 0 || empty.Estimate.LastETASeconds != nil {
		t.Fatalf("Summary of a room without data = %+v, %v", empty, err)
	}
	if _, err := rec.Summary(t.Context(), "Bad Name", now); waitroom.ErrorCode(err) != waitroom.CodeInvalidRoomName {
		t.Fatalf("Summary of a bad name: %v", err)
	}
}

// TestRelErrorBp: an estimate's error is relative to the actual wait,
// taken as at least a second.
func TestRelErrorBp(t *testing.T) {
	for _, c := range []struct{ e, wait, want int64 }{
		{9_000, 10_000, 1_000},  // told 9s, waited 10s: 10%
		{12_000, 10_000, 2_000}, // told 12s: 20%
		{1_000, 500, 5_000},     // told 1s, waited half a second: 0.5s of a second
		{10_000, 10_000, 0},
	} {
		if got := roomstats.RelErrorBp(c.e, c.wait); got != c.want {
			t.Errorf("RelErrorBp(%d, %d) = %d, want %d", c.e, c.wait, got, c.want)
		}
	}
}
