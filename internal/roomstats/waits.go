package roomstats

import (
	"math"
	"time"

	"github.com/waitroom/waitroom"
)

// This file reads the wait histograms of waitroom.StatsBucket. The bins
// are the Ledger's (waitroom.WaitBin: every store bins alike, so buckets
// from many processes add up); what value stands for a bin is this
// package's choice.

// WaitBinValue returns the value that stands for every wait in bin i: the
// geometric middle of its edges, so it is within 5.2% of any wait in the
// bin. Bin 0 (under 100 ms) gives 50 ms; the last bin gives its lower edge.
func WaitBinValue(i int) time.Duration {
	switch {
	case i <= 0:
		return 50 * time.Millisecond
	case i >= waitroom.WaitBins-1:
		return waitroom.WaitBinStart(waitroom.WaitBins - 1)
	}
	lo, hi := waitroom.WaitBinStart(i).Milliseconds(), waitroom.WaitBinStart(i+1).Milliseconds()
	mid := math.Sqrt(float64(lo) * float64(hi))
	return time.Duration(math.Round(mid)) * time.Millisecond
}

// WaitPercentile returns the q-quantile (0 < q ≤ 1) of the waits in h by
// nearest rank, as WaitBinValue of the bin it falls in: between 100 ms and
// about 25 h it is within 5.2% of the exact nearest-rank quantile of the
// waits counted. ok is false when h is empty.
func WaitPercentile(h *[waitroom.WaitBins]int64, q float64) (d time.Duration, ok bool) {
	var total int64
	for _, n := range h {
		total += n
	}
	if total == 0 {
		return 0, false
	}
	rank := int64(math.Ceil(q * float64(total)))
	rank = min(max(rank, 1), total)
	var seen int64
	for i, n := range h {
		seen += n
		if seen >= rank {
			return WaitBinValue(i), true
		}
	}
	return WaitBinValue(waitroom.WaitBins - 1), true
}
