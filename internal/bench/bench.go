// Package bench is the suite behind `waitroom bench`: it measures waitroom
// next to what a user would otherwise pick, in one run on one machine, and
// prints one table where every row has its baseline and the ratio.
//
// The rows:
//
//   - the engine (memstore) join, position and leave with 10k, 100k and 1M
//     people waiting, against the SQL design of the seed (a table of
//     waiting rows; position by SELECT COUNT(*)) on SQLite at the same sizes;
//   - durable joins on the embedded store (sqlitestore, synchronous=FULL)
//     from concurrent callers, against the seed's one INSERT per join on the
//     same SQLite settings;
//   - HTTP join and HTTP position through the real API handler over
//     loopback TCP, against a hello-world handler on the same kind of
//     server: the ceiling of this machine's HTTP stack;
//   - redisstore against the seed's Redis command sequence at 64 and 256
//     concurrent callers, on a redis-server the suite starts itself;
//   - redisstore joins and position reads on a primary whose every write
//     waits for its one replica, against the same on a Redis without
//     replicas, at 64 callers (what acknowledged-means-replicated costs);
//   - the draw of a scheduled room with 100,000 entrants, on the embedded
//     store and on Redis, against writing as many rows or members bare;
//   - HTTP durable joins into a room with a webhook whose endpoint is slow,
//     failing or healthy, against joins into a room without webhooks on
//     the same server (delivery must not slow admission).
//
// Subject and baseline are measured in the same run, interleaved in rounds,
// so a machine that slows down mid-run slows both.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Options choose what a run measures and for how long.
type Options struct {
	// Quick makes a short run (under two minutes on two cores).
	Quick bool
	// Sizes are the line lengths of the engine rows; default 10k, 100k, 1M.
	Sizes []int
	// Time is how long each side of a row is measured, split over Rounds;
	// default 3s, or 600ms when Quick.
	Time time.Duration
	// Rounds is how many times subject and baseline alternate; default 3.
	Rounds int
	// Callers are the concurrent callers of the Redis rows; the first is
	// also used by the durable-join and HTTP rows, and the largest by a
	// second HTTP durable-join row. Default 64, 256.
	Callers []int
	// RedisURL is a Redis to measure on (host:port or redis://…). When
	// empty, the suite starts RedisServer on a free loopback port.
	RedisURL string
	// RedisServer is the redis-server program; when it and RedisURL are
	// empty the Redis rows are skipped.
	RedisServer string
	// Dir holds the run's databases; default a new temporary folder,
	// removed afterwards.
	Dir string
	// Only, when set, limits the run to these groups of rows: "engine",
	// "durable", "http", "redis", "draw".
	Only []string
	// DrawEntrants is how many entrants the draw rows draw; default
	// DrawEntrants, a quarter of that when Quick.
	DrawEntrants int
	// Progress, when set, gets a line as each row is measured.
	Progress io.Writer
}

// Groups are the groups of rows, in the order a run measures them.
var Groups = []string{"engine", "durable", "http", "redis", "draw", "webhooks"}

func (o *Options) wants(group string) bool {
	return len(o.Only) == 0 || slices.Contains(o.Only, group)
}

// RedisMissing is the reason Redis rows give when no redis-server is found.
const RedisMissing = "redis-server not found (Debian package redis-server)"

// Row is one line of the table: a subject measured against its baseline.
type Row struct {
	// Name says what was measured.
	Name string `json:"name"`
	// Value is the subject's throughput in Unit.
	Value float64 `json:"value"`
	// Unit is "ops/s" or "req/s".
	Unit string `json:"unit"`
	// Baseline names what the subject is compared with.
	Baseline string `json:"baseline"`
	// BaselineValue is the baseline's throughput in Unit.
	BaselineValue float64 `json:"baseline_value"`
	// Ratio is Value / BaselineValue (0 when either is missing).
	Ratio float64 `json:"ratio"`
	// Goal, when set, is the ratio this row should reach.
	Goal float64 `json:"goal,omitempty"`
	// CPURatio, for rows whose subject and baseline run wholly in this
	// process (the HTTP rows: client and server), is the ratio of
	// operations per CPU-second: what the ratio would be on a machine
	// doing nothing else.
	CPURatio float64 `json:"cpu_ratio,omitempty"`
	// Skipped, when set, says why the row was not measured.
	Skipped string `json:"skipped,omitempty"`
	// Note adds what else the row showed (duplicates, sizes).
	Note string `json:"note,omitempty"`
}

// Met reports whether the row reached its goal (true without a goal).
func (r Row) Met() bool { return r.Goal == 0 || (r.Skipped == "" && r.Ratio >= r.Goal) }

// Machine describes where a run happened.
type Machine struct {
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPUModel   string `json:"cpu_model"`
	GoVersion  string `json:"go_version"`
}

// Table is a run's result.
type Table struct {
	Quick   bool      `json:"quick"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// Time is how long each side of each row was measured.
	Time    string  `json:"time_per_side"`
	Machine Machine `json:"machine"`
	// Load is the 1-minute load average at the start and at the end: above
	// the number of CPUs, other programs shared the machine with the run.
	Load [2]float64 `json:"load_average"`
	Rows []Row      `json:"rows"`
}

// DefaultSizes are the engine rows' line lengths.
var DefaultSizes = []int{10_000, 100_000, 1_000_000}

// DefaultCallers are the Redis rows' concurrent callers.
var DefaultCallers = []int{64, 256}

func (o *Options) defaults() {
	if len(o.Sizes) == 0 {
		o.Sizes = DefaultSizes
	}
	if o.Time <= 0 {
		o.Time = 3 * time.Second
		if o.Quick {
			o.Time = 600 * time.Millisecond
		}
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if len(o.Callers) == 0 {
		o.Callers = DefaultCallers
	}
	if o.DrawEntrants <= 0 {
		o.DrawEntrants = DrawEntrants
		if o.Quick {
			o.DrawEntrants /= 4
		}
	}
}

// Run measures every row and returns the table. A row whose setup fails
// reports the failure in its Skipped field, so one broken baseline does not
// hide the rest; Run fails only when ctx ends or no folder can be made.
func Run(ctx context.Context, opt Options) (*Table, error) {
	opt.defaults()
	t := &Table{Quick: opt.Quick, Started: time.Now(), Time: opt.Time.String(), Machine: ThisMachine()}
	t.Load[0] = loadAverage()
	if opt.Dir == "" {
		dir, err := os.MkdirTemp("", "waitroom-bench-")
		if err != nil {
			return nil, fmt.Errorf("bench: make a folder for the databases: %w", err)
		}
		defer os.RemoveAll(dir)
		opt.Dir = dir
	}
	add := func(rows ...Row) {
		for _, r := range rows {
			r.Ratio = ratio(r.Value, r.BaselineValue)
			t.Rows = append(t.Rows, r)
			if opt.Progress != nil {
				fmt.Fprintf(opt.Progress, "bench: %s\n", FormatRow(r))
			}
		}
	}
	for _, g := range opt.Only {
		if !slices.Contains(Groups, g) {
			return nil, fmt.Errorf("bench: no group of rows %q (there are %s)", g, strings.Join(Groups, ", "))
		}
	}
	groups := map[string]func() []Row{
		"engine": func() []Row {
			for i, n := range opt.Sizes {
				add(engineRows(ctx, opt, n, filepath.Join(opt.Dir, "seed-sql-"+strconv.Itoa(i)+".db"))...)
				if ctx.Err() != nil {
					break
				}
			}
			return nil // added size by size, so progress shows each
		},
		"durable": func() []Row { return durableRows(ctx, opt, opt.Dir) },
		"http":    func() []Row { return httpRows(ctx, opt, opt.Dir) },
		"redis": func() []Row {
			return append(redisRows(ctx, opt, opt.Dir), ackRows(ctx, opt, opt.Dir, opt.Callers[0])...)
		},
		"draw":     func() []Row { return drawRows(ctx, opt, opt.Dir) },
		"webhooks": func() []Row { return webhookRows(ctx, opt, opt.Dir) },
	}
	for _, g := range Groups {
		if !opt.wants(g) {
			continue
		}
		add(groups[g]()...)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	t.Seconds = time.Since(t.Started).Seconds()
	t.Load[1] = loadAverage()
	return t, nil
}

// ThisMachine describes the machine the process runs on.
func ThisMachine() Machine {
	return Machine{
		OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		CPUModel: cpuModel(), GoVersion: runtime.Version(),
	}
}

// cpuModel reads the processor's name on Linux ("" elsewhere).
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// loadAverage is the 1-minute load average on Linux (0 elsewhere).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(string(b), " ")
	v, _ := strconv.ParseFloat(f, 64)
	return v
}

// ratio is a/b, or 0 when either side is missing.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}

// skipped returns rows that were not measured, all for one reason.
func skipped(reason string, rows ...Row) []Row {
	for i := range rows {
		rows[i].Skipped = reason
	}
	return rows
}
