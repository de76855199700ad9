package crowd

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// perSecond counts the times (Unix milliseconds) in each second after
// started, over a run of seconds: element i counts [i s, i+1 s). Times
// before the start count in the first second and those after the end in
// the last, so no admission is left out of the chart.
func perSecond(started time.Time, seconds float64, at []int64) []int {
	n := max(1, int(math.Ceil(seconds)))
	out := make([]int, n)
	t0 := started.UnixMilli()
	for _, t := range at {
		i := int((t - t0) / 1000)
		if t < t0 {
			i = 0
		}
		out[min(max(i, 0), n-1)]++
	}
	return out
}

// Chart geometry, in SVG user units.
const (
	chartW      = 960
	chartH      = 480
	chartLeft   = 80
	chartRight  = 80
	chartTop    = 76
	chartBottom = 64
	chartTicks  = 5 // on the y axes, which share their grid lines
)

// Series colours: colour-blind safe (Okabe–Ito).
const (
	colourWaiting  = "#0072B2"
	colourActive   = "#009E73"
	colourAdmitted = "#E69F00"
	colourCapacity = "#999999"
)

// WriteChart draws the run as an SVG image: people waiting and active over
// time (left axis, with the room's capacity dashed) and admissions per
// second (right axis). It needs no outside program or font: the picture is
// plain SVG 1.1 that browsers and image viewers render.
func WriteChart(w io.Writer, rep *Report) error {
	bw := bufio.NewWriter(w)
	c := chart{w: bw}
	c.draw(rep)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("crowd: write chart: %w", err)
	}
	return nil
}

type chart struct {
	w          *bufio.Writer
	maxT       float64
	maxPeople  float64
	maxAdmit   float64
	plotW      float64
	plotH      float64
	plotBottom float64
}

func (c *chart) printf(format string, args ...any) { fmt.Fprintf(c.w, format, args...) }

func (c *chart) x(t float64) float64 { return chartLeft + t/c.maxT*c.plotW }

func (c *chart) yPeople(v float64) float64 { return c.plotBottom - v/c.maxPeople*c.plotH }

func (c *chart) yAdmit(v float64) float64 { return c.plotBottom - v/c.maxAdmit*c.plotH }

func (c *chart) draw(rep *Report) {
	c.plotW = chartW - chartLeft - chartRight
	c.plotH = chartH - chartTop - chartBottom
	c.plotBottom = chartH - chartBottom
	c.maxT = max(rep.Seconds, float64(len(rep.Admissions)), 1)
	people := float64(rep.Capacity)
	for _, s := range rep.Series {
		c.maxT = max(c.maxT, s.T)
		people = max(people, float64(s.Waiting), float64(s.Active))
	}
	admit := 0.0
	for _, n := range rep.Admissions {
		admit = max(admit, float64(n))
	}
	var xTicks int
	c.maxT, xTicks = axis(c.maxT, 6, xSteps)
	c.maxPeople, _ = axis(max(people, 1), chartTicks, ySteps)
	c.maxAdmit, _ = axis(max(admit, 1), chartTicks, ySteps)

	c.printf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartW, chartH, chartW, chartH)
	c.printf(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartW, chartH)
	title := fmt.Sprintf("waitroom load: %d people, room %q, capacity %d", rep.Users, rep.Config.Room, rep.Capacity)
	c.text(chartW/2, 24, "middle", 15, "#000000", title)
	c.text(chartW/2, 42, "middle", 12, "#444444", fmt.Sprintf("%d admitted, Kendall tau %.4g, join p50 %.1f ms, admission delivery p50 %.0f ms",
		rep.Admitted, rep.KendallTau, rep.JoinMillis.P50, rep.AdmitDelayMillis.P50))

	// Grid and axes.
	for i := 0; i <= chartTicks; i++ {
		f := float64(i) / chartTicks
		y := c.plotBottom - f*c.plotH
		c.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e0e0e0"/>`+"\n", num(chartLeft), num(y), num(chartLeft+c.plotW), num(y))
		c.text(chartLeft-8, y+4, "end", 12, colourWaiting, group(f*c.maxPeople))
		c.text(chartLeft+c.plotW+8, y+4, "start", 12, colourAdmitted, group(f*c.maxAdmit))
	}
	for i := 0; i <= xTicks; i++ {
		f := float64(i) / float64(xTicks)
		x := chartLeft + f*c.plotW
		c.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e0e0e0"/>`+"\n", num(x), num(c.plotBottom), num(x), num(chartTop))
		c.text(x, c.plotBottom+18, "middle", 12, "#000000", group(f*c.maxT))
	}
	c.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#000000"/>`+"\n", num(chartLeft), num(chartTop), num(c.plotW), num(c.plotH))
	c.text(chartLeft+c.plotW/2, chartH-22, "middle", 12, "#000000", "seconds since the start")
	c.printf(`<text transform="translate(20 %s) rotate(-90)" text-anchor="middle" fill="%s">people waiting / active</text>`+"\n", num(chartTop+c.plotH/2), colourWaiting)
	c.printf(`<text transform="translate(%s %s) rotate(90)" text-anchor="middle" fill="%s">admissions per second</text>`+"\n", num(chartW-20), num(chartTop+c.plotH/2), colourAdmitted)

	// Admissions per second as bars, under the lines.
	barW := c.x(1) - c.x(0)
	for i, n := range rep.Admissions {
		if n == 0 {
			continue
		}
		y := c.yAdmit(float64(n))
		c.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.45"/>`+"\n",
			num(c.x(float64(i))), num(y), num(max(barW-0.5, 0.5)), num(c.plotBottom-y), colourAdmitted)
	}
	if rep.Capacity > 0 {
		y := c.yPeople(float64(rep.Capacity))
		c.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-dasharray="6 4"/>`+"\n", num(chartLeft), num(y), num(chartLeft+c.plotW), num(y), colourCapacity)
	}
	c.line(rep.Series, func(s Sample) float64 { return float64(s.Waiting) }, colourWaiting)
	c.line(rep.Series, func(s Sample) float64 { return float64(s.Active) }, colourActive)

	// Legend, in a row above the plot where it hides no data.
	lx, ly := float64(chartLeft), chartTop-12.0
	for _, e := range []struct{ colour, name string }{
		{colourWaiting, "waiting"}, {colourActive, "active"}, {colourAdmitted, "admissions per second"}, {colourCapacity, "capacity"},
	} {
		c.printf(`<rect x="%s" y="%s" width="14" height="4" fill="%s"/>`+"\n", num(lx), num(ly-6), e.colour)
		c.text(lx+20, ly, "start", 12, "#000000", e.name)
		lx += 40 + 7*float64(len(e.name))
	}
	c.printf("</svg>\n")
}

// line draws one series of samples as a polyline on the people axis.
func (c *chart) line(series []Sample, v func(Sample) float64, colour string) {
	if len(series) == 0 {
		return
	}
	var b strings.Builder
	for i, s := range series {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(num(c.x(s.T)))
		b.WriteByte(',')
		b.WriteString(num(c.yPeople(v(s))))
	}
	c.printf(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round"/>`+"\n", b.String(), colour)
}

// text writes escaped text at (x, y).
func (c *chart) text(x, y float64, anchor string, size int, colour, s string) {
	c.printf(`<text x="%s" y="%s" text-anchor="%s" font-size="%d" fill="%s">`, num(x), num(y), anchor, size, colour)
	_ = xml.EscapeText(c.w, []byte(s))
	c.printf("</text>\n")
}

// num formats a coordinate with one decimal, which is finer than a pixel.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// group formats an axis label: whole numbers with thousands separators,
// fractions with up to two decimals.
func group(v float64) string {
	if v != math.Trunc(v) {
		return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
	}
	s := strconv.FormatInt(int64(v), 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Axis steps, times a power of ten: the x axis keeps to steps a reader
// counts in; the y axes, which must have exactly chartTicks steps, get a
// finer choice so their top is not far above the data.
var (
	xSteps = []float64{1, 2, 2.5, 5, 10}
	ySteps = []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10}
)

// axis picks a round step so that about ticks steps cover v, from steps
// (times a power of ten), and returns the axis's top and its step count.
// With ticks equal to chartTicks the step count is exactly chartTicks.
func axis(v float64, ticks int, steps []float64) (top float64, n int) {
	if v <= 0 {
		v = 1
	}
	raw := v / float64(ticks)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * p
	for _, m := range steps {
		if m*p >= raw*(1-1e-9) {
			step = m * p
			break
		}
	}
	n = int(math.Ceil(v/step - 1e-9))
	if ticks == chartTicks {
		n = chartTicks
	}
	return step * float64(max(n, 1)), max(n, 1)
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, so axis ticks at
// fifths of it are round numbers.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
