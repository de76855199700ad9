package crowd

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

func TestPerSecond(t *testing.T) {
	t0 := time.UnixMilli(10_000)
	got := perSecond(t0, 3.2, []int64{9_000, 10_000, 10_999, 11_000, 13_500, 99_000})
	want := []int{3, 1, 0, 2}
	if len(got) != len(want) {
		t.Fatalf("perSecond = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("perSecond = %v, want %v", got, want)
		}
	}
}

func TestNiceCeil(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{{0, 1}, {0.3, 0.5}, {1, 1}, {1.1, 2}, {3, 5}, {7, 10}, {15000, 20000}, {999, 1000}} {
		if got := niceCeil(c.in); got != c.want {
			t.Errorf("niceCeil(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestGroup(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {15000, "15,000"}, {1234567, "1,234,567"}, {0.4, "0.4"}, {0.6000000001, "0.6"}} {
		if got := group(c.in); got != c.want {
			t.Errorf("group(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestWriteChart checks the chart is well-formed XML with an svg root, one
// line per series, a bar per busy second, and escaped text.
func TestWriteChart(t *testing.T) {
	rep := &Report{
		Config: Config{Room: `a<b&"c"`}, Users: 100, Capacity: 10, Seconds: 4.5, Admitted: 7,
		Series:     []Sample{{T: 0.1, Waiting: 90, Active: 10}, {T: 1.1, Waiting: 50, Active: 10}, {T: 4.4, Waiting: 0, Active: 3}},
		Admissions: []int{0, 4, 2, 0, 1},
	}
	var buf bytes.Buffer
	if err := WriteChart(&buf, rep); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, buf.Bytes(), 2, 3)
	if !strings.Contains(buf.String(), "a&lt;b&amp;") {
		t.Errorf("room name not escaped in chart:\n%s", buf.String())
	}
	// An empty run still draws a valid picture.
	buf.Reset()
	if err := WriteChart(&buf, &Report{}); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, buf.Bytes(), 0, 0)
}

// checkSVG parses b as XML and counts polylines and filled bars.
func checkSVG(t *testing.T, b []byte, wantLines, wantBars int) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	root, lines, bars := "", 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v\n%s", err, b)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			switch se.Name.Local {
			case "polyline":
				lines++
			case "rect":
				for _, a := range se.Attr {
					if a.Name.Local == "fill-opacity" {
						bars++
					}
				}
			}
		}
	}
	if root != "svg" || lines != wantLines || bars != wantBars {
		t.Errorf("chart: root %q, %d lines, %d bars; want svg, %d, %d", root, lines, bars, wantLines, wantBars)
	}
}

func TestAxis(t *testing.T) {
	for _, c := range []struct {
		v, ticks  float64
		steps     []float64
		top       float64
		wantTicks int
	}{
		{62, 6, xSteps, 80, 4},
		{4.5, 6, xSteps, 5, 5},
		{12300, chartTicks, ySteps, 12500, chartTicks},
		{780, chartTicks, ySteps, 1000, chartTicks},
		{1, chartTicks, ySteps, 1, chartTicks},
	} {
		top, n := axis(c.v, int(c.ticks), c.steps)
		if math.Abs(top-c.top) > 1e-9 || n != c.wantTicks {
			t.Errorf("axis(%v, %v) = %v, %d; want %v, %d", c.v, c.ticks, top, n, c.top, c.wantTicks)
		}
	}
}
