package bench

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Render writes the table as aligned text: one row per line with its value,
// its baseline, the ratio and, where there is one, the goal.
func Render(w io.Writer, t *Table) error {
	fmt.Fprintf(w, "waitroom bench%s: %s/%s, %d CPUs (%s), %s, %s per side, %.0fs in all, load average %.1f then %.1f\n\n",
		map[bool]string{true: " --quick"}[t.Quick], t.Machine.OS, t.Machine.Arch, t.Machine.CPUs, t.Machine.CPUModel,
		t.Machine.GoVersion, t.Time, t.Seconds, t.Load[0], t.Load[1])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "benchmark\tvalue\tbaseline\tbaseline value\tratio\tgoal\tnotes")
	for _, r := range t.Rows {
		fmt.Fprintln(tw, strings.Join(cells(r), "\t"))
	}
	return tw.Flush()
}

// FormatRow is one row on one line, for progress output.
func FormatRow(r Row) string {
	c := cells(r)
	out := c[0] + "  " + c[1] + "  " + c[2] + " " + c[3] + "  " + c[4]
	if c[5] != "" {
		out += "  goal " + c[5]
	}
	if c[6] != "" {
		out += "  (" + c[6] + ")"
	}
	return out
}

// cells are a row's columns: name, value, baseline, baseline value, ratio,
// goal, notes.
func cells(r Row) []string {
	if r.Skipped != "" {
		return []string{r.Name, "skipped", r.Baseline, "", "", goalText(r), "skipped: " + r.Skipped}
	}
	return []string{r.Name, Rate(r.Value, r.Unit), r.Baseline, Rate(r.BaselineValue, r.Unit), Ratio(r.Ratio), goalText(r), r.Note}
}

func goalText(r Row) string {
	if r.Goal == 0 {
		return ""
	}
	g := "≥ " + Ratio(r.Goal)
	switch {
	case r.Skipped != "":
		return g
	case r.Met():
		return g + " met"
	}
	return g + " NOT met"
}

// Rate formats a throughput: three significant figures, thousands
// grouped ("41,000 req/s", "12.3 ops/s").
func Rate(v float64, unit string) string {
	if v <= 0 {
		return "–"
	}
	return Number(v) + " " + unit
}

// Number rounds v to three significant figures and groups thousands.
func Number(v float64) string {
	if v == 0 {
		return "0"
	}
	digits := int(math.Floor(math.Log10(math.Abs(v)))) + 1
	if digits >= 3 {
		p := math.Pow(10, float64(digits-3))
		return Group(int64(math.Round(v/p) * p))
	}
	return strconv.FormatFloat(v, 'f', 3-digits, 64)
}

// Ratio formats a ratio with a multiplication sign: two decimals below 10,
// one below 100, then whole and grouped ("0.89×", "14.2×", "120,000×").
func Ratio(v float64) string {
	switch {
	case v <= 0:
		return "–"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64) + "×"
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64) + "×"
	}
	return Number(v) + "×"
}

// Group writes n with commas between groups of three digits.
func Group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
