package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"

	"github.com/waitroom/waitroom/internal/bench"
)

// benchCommand is `waitroom bench`: it measures waitroom next to what one
// would pick instead, in one run, and prints one table.
func benchCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setHelp(fs, benchHelp)
	quick := fs.Bool("quick", false, "a short run: about a minute on two cores (62 s measured; the full table takes about 3 minutes)")
	redisURL := fs.String("redis", "", "measure on this Redis (`URL` redis://… or host:port); default: start redis-server from PATH on a free port")
	jsonOut := fs.String("json", "", "also write the table to this `file` as JSON")
	sizes := fs.String("sizes", "", "comma-separated line `lengths` for the engine rows (default 10000,100000,1000000)")
	perSide := fs.Duration("time", 0, "how long each side of a row is measured (default 3s, 600ms with --quick)")
	rounds := fs.Int("rounds", 3, "how many `times` subject and baseline alternate in a row")
	only := fs.String("only", "", "comma-separated `groups` of rows to run: engine, durable, http, redis, draw, webhooks (default all)")
	callers := fs.String("callers", "", "comma-separated concurrent `callers` for the Redis rows; the first also for the durable and HTTP rows, the largest for a second HTTP durable-join row (default 64,256)")
	drawEntrants := fs.Int("draw-entrants", 0, "how many `entrants` the draw rows draw (default 100000, 25000 with --quick)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this `file` (for go tool pprof)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	opt := bench.Options{Quick: *quick, RedisURL: *redisURL, Time: *perSide, Rounds: *rounds, DrawEntrants: *drawEntrants, Progress: stderr}
	var err error
	if opt.Sizes, err = intList(*sizes); err != nil {
		return badUsage(fs, "--sizes: %v", err)
	}
	if opt.Callers, err = intList(*callers); err != nil {
		return badUsage(fs, "--callers: %v", err)
	}
	for _, g := range strings.Split(*only, ",") {
		if g = strings.TrimSpace(g); g == "" {
			continue
		}
		if !slices.Contains(bench.Groups, g) {
			return badUsage(fs, "--only: no group of rows %q (there are %s)", g, strings.Join(bench.Groups, ", "))
		}
		opt.Only = append(opt.Only, g)
	}
	if *rounds < 1 {
		return badUsage(fs, "--rounds must be at least 1")
	}
	if opt.RedisURL == "" {
		opt.RedisServer = lookPath("redis-server", getenv("PATH"))
	}
	t, err := bench.Run(ctx, opt)
	if err != nil {
		return err
	}
	if err := bench.Render(stdout, t); err != nil {
		return err
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(t, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", *jsonOut, err)
		}
	}
	return nil
}

// benchHelp is bench's -h.
var benchHelp = helpText{
	usage: "waitroom bench [flags]",
	about: "Measures waitroom next to what one would pick instead and prints one table, every row beside " +
		"its baseline measured in the same run: the engine's join, position and leave against the seed " +
		"design's SQL; durable and HTTP joins against a hello-world handler; redisstore against plain " +
		"Redis commands; the draw of a scheduled room; and joins into a room with webhooks. The Redis " +
		"rows use --redis, or a redis-server from PATH started on a free port (without either they say " +
		"skipped). Progress goes to stderr, the table to stdout.",
	examples: []string{
		"waitroom bench --quick",
		"waitroom bench --only engine,http --json bench.json",
	},
}

// intList parses "1,2,3" (empty: nil); every number must be positive.
func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(strings.ReplaceAll(f, "_", ""))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive whole number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// lookPath finds an executable named name in the folders of path (a PATH
// value), or returns "". It reads the PATH it is given rather than the
// process's, so a test can hide a program.
func lookPath(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}
