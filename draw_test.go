package waitroom_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// testSeed is a fixed seed, so known-answer tests are reproducible.
func testSeed() waitroom.DrawSeed {
	var s waitroom.DrawSeed
	for i := range s {
		s[i] = byte(i)
	}
	return s
}

// randomEntries returns n keyless entries from fresh random secrets, in
// arrival order.
func randomEntries(t testing.TB, n int) []string {
	t.Helper()
	entries := make([]string, n)
	for i := range entries {
		var secret [16]byte
		if _, err := rand.Read(secret[:]); err != nil {
			t.Fatalf("rand.Read: %v", err)
		}
		entries[i] = waitroom.EntryForSecret(secret)
	}
	return entries
}

// drawnRecord returns the record a store would publish after drawing
// entries with seed, tickets from first.
func drawnRecord(seed waitroom.DrawSeed, entries []string, first int64) waitroom.DrawRecord {
	drawn := waitroom.DrawOrder(seed, entries, first)
	return waitroom.DrawRecord{
		Room:        "drop",
		OpensAt:     time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC),
		Commitment:  seed.Commitment(),
		Drawn:       true,
		DrawnAt:     time.Date(2030, 1, 2, 10, 0, 0, 5e6, time.UTC),
		Entrants:    len(drawn),
		Seed:        seed.String(),
		FirstTicket: first,
		Entries:     drawn,
		Digest:      waitroom.DrawDigest(drawn),
	}
}

func TestDrawCommitmentIsSHA256OfSeed(t *testing.T) {
	// Known answer: SHA-256 of 32 zero bytes (sha256sum of head -c 32 /dev/zero).
	var zero waitroom.DrawSeed
	if got, want := zero.Commitment(), "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925"; got != want {
		t.Errorf("Commitment of the zero seed = %s, want %s", got, want)
	}
	for range 20 {
		s := waitroom.NewDrawSeed()
		h := sha256.Sum256(s[:])
		if got, want := s.Commitment(), hex.EncodeToString(h[:]); got != want {
			t.Fatalf("Commitment(%s) = %s, want %s", s, got, want)
		}
	}
}

func TestNewDrawSeedDiffers(t *testing.T) {
	seen := make(map[waitroom.DrawSeed]bool)
	for range 100 {
		s := waitroom.NewDrawSeed()
		if seen[s] {
			t.Fatalf("NewDrawSeed repeated %s", s)
		}
		seen[s] = true
	}
}

func TestDrawSeedStringParses(t *testing.T) {
	s := waitroom.NewDrawSeed()
	got, err := waitroom.ParseDrawSeed(s.String())
	if err != nil {
		t.Fatalf("ParseDrawSeed(%s): %v", s, err)
	}
	if got != s {
		t.Errorf("ParseDrawSeed(%s) = %s, want the same seed", s, got)
	}
	for _, bad := range []string{"", "00", s.String()[:62], s.String() + "00", "zz" + s.String()[2:], s.String()[:63] + " "} {
		if _, err := waitroom.ParseDrawSeed(bad); err == nil || !strings.Contains(err.Error(), "64 hex digits") {
			t.Errorf("ParseDrawSeed(%q) error = %v, want one saying a seed is 64 hex digits", bad, err)
		}
	}
}

func TestDrawValueIsHMACSHA256(t *testing.T) {
	// Known answer from Python: hmac.new(bytes(range(32)), b"s:abc", hashlib.sha256).hexdigest().
	v := waitroom.DrawValue(testSeed(), "s:abc")
	if got, want := hex.EncodeToString(v[:]), "8b5304b15e3243b9f93e446392bea950db68e5ac7cd04fde874d6823778a85c4"; got != want {
		t.Errorf("DrawValue = %s, want %s", got, want)
	}
}

func TestEntryForms(t *testing.T) {
	var secret [16]byte
	e := waitroom.EntryForSecret(secret)
	if !strings.HasPrefix(e, "s:") || len(e) != 2+22 {
		t.Errorf("EntryForSecret = %q, want \"s:\" and 22 characters", e)
	}
	secret[15] = 1
	if e2 := waitroom.EntryForSecret(secret); e2 == e {
		t.Errorf("EntryForSecret gives %q for two different secrets", e)
	}
	k := waitroom.EntryForKey("drop", "alice")
	if !strings.HasPrefix(k, "k:") || len(k) != 2+22 {
		t.Errorf("EntryForKey = %q, want \"k:\" and 22 characters", k)
	}
	if again := waitroom.EntryForKey("drop", "alice"); again != k {
		t.Errorf("EntryForKey is not stable: %q then %q", k, again)
	}
	for _, other := range []string{waitroom.EntryForKey("drop", "bob"), waitroom.EntryForKey("drop2", "alice"), waitroom.EntryForKey("dropa", "lice")} {
		if other == k {
			t.Errorf("EntryForKey gives %q for another room or key", k)
		}
	}
}

func TestDrawOrderSortsByValueWithConsecutiveTickets(t *testing.T) {
	seed := waitroom.NewDrawSeed()
	entries := randomEntries(t, 500)
	const first = 41
	got := waitroom.DrawOrder(seed, entries, first)
	if len(got) != len(entries) {
		t.Fatalf("DrawOrder returned %d entries, want %d", len(got), len(entries))
	}
	var names []string
	for i, e := range got {
		v := waitroom.DrawValue(seed, e.Entry)
		if want := hex.EncodeToString(v[:]); e.Value != want {
			t.Fatalf("entry %d (%s): value %s, want %s", i, e.Entry, e.Value, want)
		}
		if e.Ticket != first+int64(i) {
			t.Fatalf("entry %d: ticket %d, want %d", i, e.Ticket, first+int64(i))
		}
		if i > 0 && got[i-1].Value >= e.Value {
			t.Fatalf("entries %d and %d are out of value order: %s then %s", i-1, i, got[i-1].Value, e.Value)
		}
		names = append(names, e.Entry)
	}
	slices.Sort(names)
	want := slices.Clone(entries)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("DrawOrder did not return exactly the entries it was given")
	}
	// The order depends on the seed and entries only, not on arrival.
	rev := slices.Clone(entries)
	slices.Reverse(rev)
	if again := waitroom.DrawOrder(seed, rev, first); !slices.Equal(again, got) {
		t.Errorf("DrawOrder of the same entries in another order gave another draw")
	}
	if empty := waitroom.DrawOrder(seed, nil, first); len(empty) != 0 {
		t.Errorf("DrawOrder of no entries = %v, want none", empty)
	}
}

func TestDrawDigestChangesWithEveryField(t *testing.T) {
	entries := waitroom.DrawOrder(testSeed(), []string{"s:a", "s:b", "s:c"}, 1)
	base := waitroom.DrawDigest(entries)
	// Known shape: SHA-256 of the lines "entry value ticket\n".
	var buf bytes.Buffer
	for _, e := range entries {
		fmt.Fprintf(&buf, "%s %s %d\n", e.Entry, e.Value, e.Ticket)
	}
	h := sha256.Sum256(buf.Bytes())
	if want := hex.EncodeToString(h[:]); base != want {
		t.Errorf("DrawDigest = %s, want SHA-256 of the lines, %s", base, want)
	}
	for _, c := range []struct {
		name   string
		change func(es []waitroom.DrawEntry) []waitroom.DrawEntry
	}{
		{"entry", func(es []waitroom.DrawEntry) []waitroom.DrawEntry { es[1].Entry += "x"; return es }},
		{"value", func(es []waitroom.DrawEntry) []waitroom.DrawEntry { es[2].Value = "0" + es[2].Value[1:]; return es }},
		{"ticket", func(es []waitroom.DrawEntry) []waitroom.DrawEntry { es[0].Ticket++; return es }},
		{"order", func(es []waitroom.DrawEntry) []waitroom.DrawEntry { es[0], es[1] = es[1], es[0]; return es }},
		{"removed", func(es []waitroom.DrawEntry) []waitroom.DrawEntry { return es[:2] }},
		{"added", func(es []waitroom.DrawEntry) []waitroom.DrawEntry { return append(es, es[0]) }},
		{"none", func(es []waitroom.DrawEntry) []waitroom.DrawEntry { return nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			es := c.change(slices.Clone(entries))
			if got := waitroom.DrawDigest(es); got == base {
				t.Errorf("DrawDigest did not change when the %s changed: %s", c.name, got)
			}
		})
	}
	if again := waitroom.DrawDigest(slices.Clone(entries)); again != base {
		t.Errorf("DrawDigest of the same entries = %s, then %s", base, again)
	}
}

func TestVerifyDraw(t *testing.T) {
	seed := waitroom.NewDrawSeed()
	good := drawnRecord(seed, randomEntries(t, 1000), 7)
	if err := waitroom.VerifyDraw(good); err != nil {
		t.Fatalf("VerifyDraw of a real draw: %v", err)
	}
	empty := drawnRecord(seed, nil, 1)
	if err := waitroom.VerifyDraw(empty); err != nil {
		t.Errorf("VerifyDraw of a draw with no entrants: %v", err)
	}

	// Each change below leaves the digest consistent with the (changed)
	// list unless the digest is what it changes, so that the check named
	// in want, not the digest, must catch it.
	redigest := func(d *waitroom.DrawRecord) { d.Digest = waitroom.DrawDigest(d.Entries) }
	renumber := func(d *waitroom.DrawRecord) {
		for i := range d.Entries {
			d.Entries[i].Ticket = d.FirstTicket + int64(i)
		}
	}
	for _, c := range []struct {
		name   string
		change func(d *waitroom.DrawRecord)
		want   string
	}{
		{"value changed", func(d *waitroom.DrawRecord) {
			v := []byte(d.Entries[500].Value)
			if v[10] == '0' {
				v[10] = '1'
			} else {
				v[10] = '0'
			}
			d.Entries[500].Value = string(v)
			redigest(d)
		}, fmt.Sprintf("entry 501 (%q): value", good.Entries[500].Entry)},
		{"seed changed", func(d *waitroom.DrawRecord) {
			d.Seed = waitroom.NewDrawSeed().String()
		}, "the seed does not match the commitment"},
		{"seed and commitment changed", func(d *waitroom.DrawRecord) {
			other := waitroom.NewDrawSeed()
			d.Seed, d.Commitment = other.String(), other.Commitment()
		}, fmt.Sprintf("entry 1 (%q): value", good.Entries[0].Entry)},
		{"two entries swapped", func(d *waitroom.DrawRecord) {
			d.Entries[300], d.Entries[301] = d.Entries[301], d.Entries[300]
			renumber(d)
			redigest(d)
		}, fmt.Sprintf("entry 302 (%q) is out of order", good.Entries[300].Entry)},
		{"ticket changed", func(d *waitroom.DrawRecord) {
			d.Entries[999].Ticket = 5
			redigest(d)
		}, "has ticket 5, want 1006"},
		{"entry removed", func(d *waitroom.DrawRecord) {
			d.Entries = slices.Delete(d.Entries, 10, 11)
			renumber(d)
			redigest(d)
		}, "counts 1000 entrants but lists 999 entries"},
		{"entry duplicated", func(d *waitroom.DrawRecord) {
			d.Entries[1] = d.Entries[0]
			d.Entries[1].Ticket = d.FirstTicket + 1
			redigest(d)
		}, "is listed twice"},
		{"digest changed", func(d *waitroom.DrawRecord) {
			d.Digest = strings.Repeat("0", 64)
		}, "the digest does not match the entries"},
		{"not drawn", func(d *waitroom.DrawRecord) {
			d.Drawn = false
		}, "has not taken place"},
		{"seed missing", func(d *waitroom.DrawRecord) {
			d.Seed = ""
		}, "seed: a seed is 64 hex digits"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := good
			d.Entries = slices.Clone(good.Entries)
			c.change(&d)
			err := waitroom.VerifyDraw(d)
			if err == nil {
				t.Fatalf("VerifyDraw accepted a record with the %s", c.name)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("VerifyDraw error = %q, want it to contain %q", err, c.want)
			}
		})
	}
	// The changes above worked on copies.
	if err := waitroom.VerifyDraw(good); err != nil {
		t.Fatalf("VerifyDraw of the original after the changes: %v", err)
	}
}

// upperGammaQ is the regularized upper incomplete gamma function Q(a, x),
// by its series for x < a+1 and its continued fraction otherwise
// (Numerical Recipes, 3rd ed., §6.2).
func upperGammaQ(a, x float64) float64 {
	if x <= 0 {
		return 1
	}
	lg, _ := math.Lgamma(a)
	prefix := math.Exp(-x + a*math.Log(x) - lg)
	if x < a+1 {
		sum, term := 1/a, 1/a
		for n := 1; n < 1000; n++ {
			term *= x / (a + float64(n))
			sum += term
			if term < sum*1e-16 {
				break
			}
		}
		return 1 - prefix*sum
	}
	// Modified Lentz's method.
	const tiny = 1e-300
	b := x + 1 - a
	c, d := 1/tiny, 1/b
	h := d
	for i := 1; i < 1000; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-16 {
			break
		}
	}
	return prefix * h
}

// chiSquareCritical returns the x with P(X > x) = p for a chi-square
// variable X with df degrees of freedom: the upper tail is Q(df/2, x/2),
// which falls as x grows, so bisection finds it.
func chiSquareCritical(df int, p float64) float64 {
	lo, hi := 0.0, 1000.0
	for range 200 {
		mid := (lo + hi) / 2
		if upperGammaQ(float64(df)/2, mid/2) > p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// chiSquare is Pearson's statistic for independence of a contingency
// table's rows and columns.
func chiSquare(table [][]int) float64 {
	rows := make([]float64, len(table))
	cols := make([]float64, len(table[0]))
	var n float64
	for i, row := range table {
		for j, c := range row {
			rows[i] += float64(c)
			cols[j] += float64(c)
			n += float64(c)
		}
	}
	var stat float64
	for i, row := range table {
		for j, c := range row {
			expected := rows[i] * cols[j] / n
			d := float64(c) - expected
			stat += d * d / expected
		}
	}
	return stat
}

func TestChiSquareCritical(t *testing.T) {
	// Published table values (NIST/SEMATECH e-Handbook, table 1.3.6.7.4,
	// upper-tail critical values of the chi-square distribution).
	for _, c := range []struct {
		df   int
		p    float64
		want float64
	}{
		{1, 0.05, 3.841}, {9, 0.05, 16.919}, {9, 0.001, 27.877}, {10, 0.001, 29.588}, {4, 0.01, 13.277},
	} {
		if got := chiSquareCritical(c.df, c.p); math.Abs(got-c.want) > 0.001 {
			t.Errorf("chiSquareCritical(%d, %g) = %.4f, want %.3f", c.df, c.p, got, c.want)
		}
	}
	// Tables stop at p = 0.001. For odd df the upper tail has a closed form
	// (Abramowitz & Stegun 26.4.4): for df 9, with r = sqrt(x),
	// Q = erfc(r/sqrt 2) + 2 phi(r) (r + r^3/3 + r^5/15 + r^7/105),
	// where phi is the standard normal density.
	q9 := func(x float64) float64 {
		r := math.Sqrt(x)
		phi := math.Exp(-x/2) / math.Sqrt(2*math.Pi)
		return math.Erfc(r/math.Sqrt2) + 2*phi*(r+math.Pow(r, 3)/3+math.Pow(r, 5)/15+math.Pow(r, 7)/105)
	}
	for _, x := range []float64{5, 16.919, 27.877, 44.811, 60} {
		if got, want := upperGammaQ(4.5, x/2), q9(x); math.Abs(got-want) > 1e-12+1e-9*want {
			t.Errorf("upper tail of chi-square(9) at %g = %g, closed form gives %g", x, got, want)
		}
	}
	if got := chiSquareCritical(9, 1e-6); math.Abs(q9(got)-1e-6) > 1e-12 {
		t.Errorf("chiSquareCritical(9, 1e-6) = %.4f, whose tail is %g by the closed form, want 1e-6", got, q9(got))
	}
}

// TestDrawPositionsIndependentOfArrival checks that the position a draw
// gives does not depend on when the entrant joined: over many draws with
// fresh seeds, a chi-square test of independence on arrival bucket ×
// position bucket. With real random seeds the test fails by chance with
// probability p = 1e-6.
func TestDrawPositionsIndependentOfArrival(t *testing.T) {
	const (
		draws    = 2000
		entrants = 20
		buckets  = 4
		p        = 1e-6
	)
	df := (buckets - 1) * (buckets - 1)
	// The 1-1e-6 quantile for df 9 is 44.811 (not the 46.4 sometimes
	// quoted, whose tail is 5.1e-7); TestChiSquareCritical checks the
	// routine against published tables and an independent closed form.
	critical := chiSquareCritical(df, p)
	if math.Abs(critical-44.811) > 0.001 {
		t.Fatalf("chi-square critical value for df %d at p %g = %.3f, want 44.811", df, p, critical)
	}

	newTable := func() [][]int {
		tb := make([][]int, buckets)
		for i := range tb {
			tb[i] = make([]int, buckets)
		}
		return tb
	}
	bucket := func(i int) int { return i * buckets / entrants }
	drawn, inArrival, reversed := newTable(), newTable(), newTable()
	for range draws {
		entries := randomEntries(t, entrants)
		arrival := make(map[string]int, entrants)
		for i, e := range entries {
			arrival[e] = i
		}
		order := waitroom.DrawOrder(waitroom.NewDrawSeed(), entries, 1)
		for pos, e := range order {
			a := arrival[e.Entry]
			drawn[bucket(a)][bucket(pos)]++
			// Orders a broken draw might give, to show the test can fail.
			inArrival[bucket(a)][bucket(a)]++
			reversed[bucket(a)][bucket(entrants-1-a)]++
		}
	}
	if stat := chiSquare(drawn); stat > critical {
		t.Errorf("chi-square of arrival × position = %.2f > %.2f (df %d, p %g): positions depend on arrival\n%v", stat, critical, df, p, drawn)
	}
	for name, tb := range map[string][][]int{"arrival order": inArrival, "reversed arrival order": reversed} {
		if stat := chiSquare(tb); stat <= critical {
			t.Errorf("chi-square of %s = %.2f <= %.2f: the test cannot tell a biased draw", name, stat, critical)
		}
	}
}
