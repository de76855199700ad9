package bench

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestNumber(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{0, "0"}, {1.2345, "1.23"}, {12.345, "12.3"}, {123.45, "123"}, {41234, "41,200"},
		{46_000, "46,000"}, {2_587_000, "2,590,000"}, {0.5, "0.500"},
	} {
		if got := Number(c.in); got != c.want {
			t.Errorf("Number(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRatioText(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{{0, "–"}, {0.891, "0.89×"}, {1, "1.00×"}, {14.25, "14.2×"}, {123_456, "123,000×"}} {
		if got := Ratio(c.in); got != c.want {
			t.Errorf("Ratio(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestGroup(t *testing.T) {
	for _, c := range []struct {
		in   int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {-1234567, "-1,234,567"}} {
		if got := Group(c.in); got != c.want {
			t.Errorf("Group(%d) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRatioAndGoal(t *testing.T) {
	if got := ratio(41_000, 46_000); got < 0.891 || got > 0.892 {
		t.Errorf("ratio(41000, 46000) = %v, want 0.891…", got)
	}
	if got := ratio(5, 0); got != 0 {
		t.Errorf("ratio with no baseline = %v, want 0", got)
	}
	if got := ratio(0, 5); got != 0 {
		t.Errorf("ratio with no value = %v, want 0", got)
	}
	for _, c := range []struct {
		r    Row
		want bool
	}{
		{Row{Ratio: 0.9, Goal: 0.85}, true},
		{Row{Ratio: 0.85, Goal: 0.85}, true},
		{Row{Ratio: 0.84, Goal: 0.85}, false},
		{Row{Ratio: 3}, true},
		{Row{Ratio: 0, Goal: 2, Skipped: "no server"}, false},
	} {
		if got := c.r.Met(); got != c.want {
			t.Errorf("%+v.Met() = %v, want %v", c.r, got, c.want)
		}
	}
}

// TestRender checks the table: a header, one line per row with its value,
// baseline and ratio, the goal's verdict, and skipped rows with a reason.
func TestRender(t *testing.T) {
	tab := &Table{Time: "1s", Machine: Machine{OS: "linux", Arch: "amd64", CPUs: 2, GoVersion: "go1.26"}, Rows: []Row{
		{Name: "HTTP position", Value: 41_000, Unit: "req/s", Baseline: "hello-world", BaselineValue: 46_000, Ratio: 41_000.0 / 46_000, Goal: 0.85},
		{Name: "HTTP durable join", Value: 10_000, Unit: "req/s", Baseline: "hello-world", BaselineValue: 46_000, Ratio: 10_000.0 / 46_000, Goal: 0.5},
		{Name: "redisstore join, 64 callers", Unit: "ops/s", Baseline: "seed", Skipped: RedisMissing, Goal: 2},
	}}
	var b bytes.Buffer
	if err := Render(&b, tab); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 6 { // title, blank, header, three rows
		t.Fatalf("got %d lines, want 6:\n%s", len(lines), out)
	}
	for i, want := range [][]string{
		{"HTTP position", "41,000 req/s", "hello-world", "46,000 req/s", "0.89×", "≥ 0.85× met"},
		{"HTTP durable join", "10,000 req/s", "0.22×", "≥ 0.50× NOT met"},
		{"redisstore join, 64 callers", "skipped", "skipped: redis-server not found (Debian package redis-server)"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[3+i], w) {
				t.Errorf("row %d = %q, want it to contain %q", i, lines[3+i], w)
			}
		}
	}
	if got := FormatRow(tab.Rows[0]); !strings.Contains(got, "41,000 req/s  hello-world 46,000 req/s  0.89×") {
		t.Errorf("FormatRow = %q", got)
	}
}

// TestTimedAndCompare checks the measuring loops count every operation and
// only the timed part of a batch.
func TestTimedAndCompare(t *testing.T) {
	ctx := context.Background()
	calls := 0
	tl, err := timed(ctx, 30*time.Millisecond, func(context.Context) (int, time.Duration, error) {
		calls++
		return 10, 10 * time.Millisecond, nil // as if 10 ops took 10ms, whatever the clock says
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 3 || tl.ops != 30 || tl.took != 30*time.Millisecond || tl.rate() != 1000 {
		t.Errorf("timed: %d batches, %d ops in %v (%v/s); want 3, 30 in 30ms (1000/s)", calls, tl.ops, tl.took, tl.rate())
	}
	var order []string
	s, b, err := compare(ctx, 3*time.Millisecond, 3,
		func(context.Context) (int, time.Duration, error) {
			order = append(order, "s")
			return 2, time.Millisecond, nil
		},
		func(context.Context) (int, time.Duration, error) {
			order = append(order, "b")
			return 1, time.Millisecond, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ""); got != "sbsbsbsb" {
		t.Errorf("compare ran %q, want a warm-up of each, then subject and baseline alternating: sbsbsbsb", got)
	}
	if r := ratio(s.rate(), b.rate()); r != 2 {
		t.Errorf("ratio %v, want 2", r)
	}
	n, _, err := concurrent(4, 20*time.Millisecond, func(context.Context, int) error { return nil })(ctx)
	if err != nil || n == 0 {
		t.Errorf("concurrent: %d ops, err %v; want many, nil", n, err)
	}
}

func TestReadResponse(t *testing.T) {
	in := "HTTP/1.1 201 Created\r\nContent-Length: 5\r\n\r\nhello" +
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" +
		"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"
	r := bufio.NewReader(strings.NewReader(in))
	for _, want := range []int{201, 200, 404} {
		got, err := readResponse(r)
		if err != nil || got != want {
			t.Fatalf("readResponse = %d, %v; want %d", got, err, want)
		}
	}
	if _, err := readResponse(bufio.NewReader(strings.NewReader("garbage\r\n"))); err == nil {
		t.Error("readResponse accepted a bad status line")
	}
}

// TestRunSmall runs the whole suite with tiny sizes and times: every row
// is present and measured (Redis rows when redis-server is on PATH; under
// CI=true it must be).
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs servers")
	}
	redisServer, _ := exec.LookPath("redis-server")
	if redisServer == "" && os.Getenv("CI") == "true" {
		t.Fatal("redis-server not found on PATH (Debian package redis-server); CI must have it")
	}
	tab, err := Run(context.Background(), Options{
		Sizes: []int{200, 1000}, Time: 30 * time.Millisecond, Rounds: 2, Callers: []int{4}, RedisServer: redisServer, Dir: t.TempDir(),
		DrawEntrants: 500,
	})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	Render(&b, tab)
	t.Logf("\n%s", b.String())
	// engine, durable, HTTP, redis, acknowledgement (3), draw, webhooks.
	wantRows := 3*2 + 1 + 4 + 2 + 3 + 2 + 4
	if len(tab.Rows) != wantRows {
		t.Fatalf("%d rows, want %d", len(tab.Rows), wantRows)
	}
	for _, r := range tab.Rows {
		if strings.HasPrefix(r.Name, "redisstore") && redisServer == "" {
			if r.Skipped != RedisMissing {
				t.Errorf("%s: skipped %q, want %q", r.Name, r.Skipped, RedisMissing)
			}
			continue
		}
		if r.Skipped != "" || r.Value <= 0 || r.BaselineValue <= 0 || r.Ratio <= 0 {
			t.Errorf("%s: value %v, baseline %v, ratio %v, skipped %q; want all measured", r.Name, r.Value, r.BaselineValue, r.Ratio, r.Skipped)
		}
	}
}
