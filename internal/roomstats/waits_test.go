package roomstats_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/roomstats"
)

// TestWaitBinValue: each bin's value is within 5.2% of any wait in it from
// 100 ms to 24 h.
func TestWaitBinValue(t *testing.T) {
	worst := 0.0
	for ms := int64(100); ms <= 24*3600*1000; ms = ms*1001/1000 + 1 {
		d := time.Duration(ms) * time.Millisecond
		rel := math.Abs(float64(roomstats.WaitBinValue(waitroom.WaitBin(d))-d)) / float64(d)
		worst = max(worst, rel)
	}
	if worst > 0.052 {
		t.Fatalf("a bin's value is %.2f%% off a wait in it, want at most 5.2%%", 100*worst)
	}
	t.Logf("worst error of a bin's value: %.2f%%", 100*worst)
	if v := roomstats.WaitBinValue(0); v != 50*time.Millisecond {
		t.Errorf("WaitBinValue(0) = %s, want 50ms", v)
	}
	if v, want := roomstats.WaitBinValue(waitroom.WaitBins-1), waitroom.WaitBinStart(waitroom.WaitBins-1); v != want {
		t.Errorf("WaitBinValue(last) = %s, want its start %s", v, want)
	}
}

// TestWaitPercentile compares percentiles of a histogram with the exact
// nearest-rank percentiles of the waits put in it.
func TestWaitPercentile(t *testing.T) {
	var h [waitroom.WaitBins]int64
	if _, ok := roomstats.WaitPercentile(&h, 0.5); ok {
		t.Fatal("WaitPercentile of an empty histogram is ok")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 7, 100, 5000} {
		h = [waitroom.WaitBins]int64{}
		waits := make([]time.Duration, n)
		for i := range waits {
			// Log-uniform from 100 ms to 10 h.
			waits[i] = time.Duration(math.Exp(r.Float64()*math.Log(360_000)) * float64(100*time.Millisecond))
			h[waitroom.WaitBin(waits[i])]++
		}
		slices.Sort(waits)
		for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 1} {
			exact := waits[max(int(math.Ceil(q*float64(n)))-1, 0)]
			got, ok := roomstats.WaitPercentile(&h, q)
			if !ok {
				t.Fatalf("n=%d q=%v: not ok", n, q)
			}
			if rel := math.Abs(float64(got-exact)) / float64(exact); rel > 0.052 {
				t.Errorf("n=%d: p%v = %s, exact %s (%.1f%% off)", n, 100*q, got, exact, 100*rel)
			}
		}
	}
}
