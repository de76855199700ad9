package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The baseline for issue 14's fan-out goals: a minimal net/http SSE server
// that sends the same bytes to the same number of streams at the same rate,
// with no store and no logic. `waitroom sse-baseline` (hidden: a measuring
// tool, not a feature) runs that server in a child process, holds the
// streams from one or more client processes, and measures the server's CPU
// per delivered message and its memory per open stream, the same way
// scripts/fanout-bench.sh measures the real server.
//
// The processes talk over their standard input and output, one line each:
//
//	server → parent  "listening on ADDR"
//	parent → server  "go" (start sending), "stop" (send what is still due, then stop)
//	server → parent  "stopped SENT"
//	client → parent  "open OPENED FAILED" once every stream is open or has failed
//	parent → client  "report"
//	client → parent  "delivered N"
//
// A child exits when its standard input closes, and by itself once its
// deadline passes, so nothing outlives a run.

// baselineTick is how often the baseline server hands out messages: the
// cadence of the real hub.
const baselineTick = 250 * time.Millisecond

// baselineStreamsPerWorker keeps each client process well under the
// 20,000 open files one process may hold.
const baselineStreamsPerWorker = 15000

// baselineMaxStreams is the most streams the server process can hold under
// that limit, with room for its own files.
const baselineMaxStreams = 19500

// baselineClockTicks is Linux's USER_HZ, the unit of utime and stime in
// /proc/PID/stat: 100 on every architecture Go supports on Linux (sysconf
// is not reachable without cgo).
const baselineClockTicks = 100

// baselineResult is what a baseline run measured.
type baselineResult struct {
	Streams         int     `json:"streams"`
	Failed          int     `json:"failed_to_open"`
	Sent            int64   `json:"sent"`
	Delivered       int64   `json:"delivered"`
	Seconds         float64 `json:"seconds"`
	RateAsked       float64 `json:"rate_asked"`
	Bytes           int     `json:"bytes"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	CPUMicrosPerMsg float64 `json:"cpu_us_per_update"`
	IdleKiB         int64   `json:"rss_idle_kib"`
	PeakKiB         int64   `json:"rss_peak_kib"`
	KiBPerStream    float64 `json:"kib_per_stream"`
}

// sseBaselineCommand is `waitroom sse-baseline`: the baseline server and
// its clients, in separate processes, and the measurement of the server.
func sseBaselineCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sse-baseline", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setHelp(fs, helpText{
		usage: "waitroom sse-baseline [flags]",
		about: "A measuring tool, not listed in waitroom's help: a minimal net/http server-sent-events " +
			"server and its clients, in processes of their own, the baseline of scripts/fanout-bench.sh.",
		examples: []string{"waitroom sse-baseline --streams 15000 --rate 20000 --duration 20s"},
		hidden:   []string{"serve", "client", "target", "first"},
	})
	streams := fs.Int("streams", 15000, "how many `streams` to hold open")
	rate := fs.Float64("rate", 20000, "messages per `second` across all streams")
	size := fs.Int("bytes", 330, "size of each message's data payload in `bytes`")
	duration := fs.Duration("duration", 20*time.Second, "how long the server sends, once every stream is open")
	sources := fs.Int("sources", 0, "loopback source `addresses` to connect from (127.0.0.2, …); 0: one per 10,000 streams, none when that is one")
	workers := fs.Int("workers", 0, "client `processes`; 0: one per 15,000 streams")
	jsonOut := fs.String("json", "", "also write the result to this `file` as JSON")
	asServer := fs.Bool("serve", false, "run as the server process (internal)")
	asClient := fs.Bool("client", false, "run as a client process (internal)")
	target := fs.String("target", "", "server `address` (internal, with --client)")
	first := fs.Int("first", 0, "index of this client's first stream (internal, with --client)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// A child's own bound: the longest a parent could still want it.
	deadline := *duration + 5*time.Minute
	switch {
	case *asServer:
		return baselineServe(ctx, *rate, *size, deadline, os.Stdin, stdout)
	case *asClient:
		return baselineClient(ctx, *target, *first, *streams, *sources, deadline, os.Stdin, stdout)
	}
	switch {
	case *streams < 1 || *streams > baselineMaxStreams:
		return badUsage(fs, "--streams must be from 1 to %d: the server process holds them all, and a process may hold at most 20,000 open files", baselineMaxStreams)
	case *rate <= 0:
		return badUsage(fs, "--rate must be positive")
	case *size < 1 || *size > 1<<20:
		return badUsage(fs, "--bytes must be from 1 to 1 MiB")
	case *duration <= 0:
		return badUsage(fs, "--duration must be positive")
	case *sources < 0 || *sources > 250:
		return badUsage(fs, "--sources must be from 0 to 250")
	case *workers < 0:
		return badUsage(fs, "--workers must not be negative")
	}
	nSources := *sources
	if nSources == 0 && *streams > usersPerSource {
		nSources = (*streams + usersPerSource - 1) / usersPerSource
	}
	n := *workers
	if n == 0 {
		n = (*streams + baselineStreamsPerWorker - 1) / baselineStreamsPerWorker
	}
	n = min(n, *streams)
	if per := (*streams + n - 1) / n; per > baselineMaxStreams {
		return badUsage(fs, "%d streams over %d client processes is %d a process, more than %d: use more --workers", *streams, n, per, baselineMaxStreams)
	}
	res, err := runBaseline(ctx, baselineRun{
		streams: *streams, rate: *rate, size: *size, duration: *duration, sources: nSources, workers: n,
	}, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sse baseline: %d streams open, %d messages of %d bytes delivered in %.1fs (%.0f/s, %.0f/s asked); server CPU %.2fs: %.1f µs per delivered message; server memory %.1f MiB idle, %.1f MiB peak: %.1f KiB per stream\n",
		res.Streams, res.Delivered, res.Bytes, res.Seconds, float64(res.Delivered)/res.Seconds, res.RateAsked,
		res.CPUSeconds, res.CPUMicrosPerMsg, float64(res.IdleKiB)/1024, float64(res.PeakKiB)/1024, res.KiBPerStream)
	if res.Failed > 0 {
		fmt.Fprintf(stdout, "sse baseline: %d streams failed to open\n", res.Failed)
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", *jsonOut, err)
		}
	}
	return nil
}

// baselineRun is the shape of one baseline run.
type baselineRun struct {
	streams  int
	rate     float64
	size     int
	duration time.Duration
	sources  int
	workers  int
}

// baselineChild is a running child process and its line protocol.
type baselineChild struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines *bufio.Scanner
}

// startBaselineChild starts this program with args, its standard error
// going to stderr.
func startBaselineChild(ctx context.Context, exe string, args []string, stderr io.Writer) (*baselineChild, error) {
	cmd := exec.CommandContext(ctx, exe, append([]string{"sse-baseline"}, args...)...)
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	return &baselineChild{cmd: cmd, in: in, lines: bufio.NewScanner(out)}, nil
}

// say writes one line to the child.
func (c *baselineChild) say(line string) error {
	_, err := io.WriteString(c.in, line+"\n")
	return err
}

// expect reads the child's next line and parses it as prefix followed by
// len(nums) whole numbers (a prefix "listening on" is followed by text,
// returned as rest). It gives up when ctx ends.
func (c *baselineChild) expect(ctx context.Context, prefix string, nums ...*int64) (rest string, err error) {
	type line struct {
		s  string
		ok bool
	}
	got := make(chan line, 1)
	go func() {
		ok := c.lines.Scan()
		got <- line{c.lines.Text(), ok}
	}()
	var l line
	select {
	case l = <-got:
	case <-ctx.Done():
		c.cmd.Process.Kill()
		<-got
		return "", fmt.Errorf("waiting for %q: %w", prefix, ctx.Err())
	}
	if !l.ok {
		return "", fmt.Errorf("waiting for %q: the process ended", prefix)
	}
	rest, ok := strings.CutPrefix(l.s, prefix)
	if !ok {
		return "", fmt.Errorf("want %q, got %q", prefix, l.s)
	}
	f := strings.Fields(rest)
	if len(nums) == 0 {
		return strings.TrimSpace(rest), nil
	}
	if len(f) != len(nums) {
		return "", fmt.Errorf("want %q and %d numbers, got %q", prefix, len(nums), l.s)
	}
	for i, p := range nums {
		if *p, err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return "", fmt.Errorf("want %q and %d numbers, got %q", prefix, len(nums), l.s)
		}
	}
	return "", nil
}

// finish closes the child's input (it exits) and waits for it.
func (c *baselineChild) finish() error {
	c.in.Close()
	return c.cmd.Wait()
}

// runBaseline starts the server and the clients, lets the server send for
// the duration once every stream is open, and measures it.
func runBaseline(ctx context.Context, r baselineRun, progress io.Writer) (*baselineResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program to start the baseline server: %w", err)
	}
	// Opening 20,000 streams takes seconds; the bound only stops a run that hangs.
	ctx, cancel := context.WithTimeout(ctx, r.duration+3*time.Minute)
	defer cancel()
	durArg := r.duration.String()
	srv, err := startBaselineChild(ctx, exe, []string{"--serve", "--rate", strconv.FormatFloat(r.rate, 'g', -1, 64),
		"--bytes", strconv.Itoa(r.size), "--duration", durArg}, progress)
	if err != nil {
		return nil, err
	}
	defer srv.finish()
	addr, err := srv.expect(ctx, "listening on ")
	if err != nil {
		return nil, fmt.Errorf("baseline server: %w", err)
	}
	pid := srv.cmd.Process.Pid
	// Let the idle server settle before its idle figure is read.
	time.Sleep(200 * time.Millisecond)
	idle, err := procRSS(pid)
	if err != nil {
		return nil, err
	}
	var peak atomic.Int64
	peak.Store(idle)
	sample := func() {
		if v, err := procRSS(pid); err == nil && v > peak.Load() {
			peak.Store(v)
		}
	}
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	defer func() {
		select {
		case <-stopSampling:
		default:
			close(stopSampling)
		}
		<-sampled
	}()

	clients := make([]*baselineChild, 0, r.workers)
	defer func() {
		for _, c := range clients {
			c.finish()
		}
	}()
	for i := range r.workers {
		first, last := i*r.streams/r.workers, (i+1)*r.streams/r.workers
		c, err := startBaselineChild(ctx, exe, []string{"--client", "--target", addr, "--first", strconv.Itoa(first),
			"--streams", strconv.Itoa(last - first), "--sources", strconv.Itoa(r.sources), "--duration", durArg}, progress)
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
	}
	res := &baselineResult{RateAsked: r.rate, Bytes: r.size, IdleKiB: idle}
	for i, c := range clients {
		var opened, failed int64
		if _, err := c.expect(ctx, "open ", &opened, &failed); err != nil {
			return nil, fmt.Errorf("baseline client %d: %w", i, err)
		}
		res.Streams += int(opened)
		res.Failed += int(failed)
	}
	if res.Streams == 0 {
		return nil, fmt.Errorf("no stream opened (%d failed)", res.Failed)
	}
	fmt.Fprintf(progress, "sse-baseline: %d streams open, sending for %s\n", res.Streams, r.duration)

	cpu0, err := procCPUTicks(pid)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := srv.say("go"); err != nil {
		return nil, fmt.Errorf("baseline server: %w", err)
	}
	select {
	case <-time.After(r.duration):
	case <-ctx.Done():
		return nil, fmt.Errorf("sse-baseline interrupted: %w", ctx.Err())
	}
	if err := srv.say("stop"); err != nil {
		return nil, fmt.Errorf("baseline server: %w", err)
	}
	if _, err := srv.expect(ctx, "stopped ", &res.Sent); err != nil {
		return nil, fmt.Errorf("baseline server: %w", err)
	}
	res.Seconds = time.Since(start).Seconds()
	// Messages still on their way are part of the work measured: wait until
	// the clients have them all, or a few seconds.
	drain := time.Now().Add(5 * time.Second)
	for {
		res.Delivered = 0
		for i, c := range clients {
			if err := c.say("report"); err != nil {
				return nil, fmt.Errorf("baseline client %d: %w", i, err)
			}
			var n int64
			if _, err := c.expect(ctx, "delivered ", &n); err != nil {
				return nil, fmt.Errorf("baseline client %d: %w", i, err)
			}
			res.Delivered += n
		}
		if res.Delivered >= res.Sent || time.Now().After(drain) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cpu1, err := procCPUTicks(pid)
	if err != nil {
		return nil, err
	}
	sample()
	close(stopSampling)
	<-sampled
	res.PeakKiB = peak.Load()
	res.CPUSeconds = float64(cpu1-cpu0) / baselineClockTicks
	if res.Delivered > 0 {
		res.CPUMicrosPerMsg = res.CPUSeconds / float64(res.Delivered) * 1e6
	}
	res.KiBPerStream = float64(res.PeakKiB-res.IdleKiB) / float64(res.Streams)
	return res, nil
}

// procCPUTicks reads the user and system CPU time of process pid from
// /proc, in clock ticks.
func procCPUTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read the server's CPU time (needs Linux /proc): %w", err)
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// after it. utime and stime are fields 14 and 15 of the line, so 12 and
	// 13 counting from the state (field 3) as 1.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("read the server's CPU time: unexpected /proc/%d/stat %q", pid, b)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("read the server's CPU time from /proc/%d/stat: %w", pid, err)
	}
	return u + s, nil
}

// procRSS reads the resident memory of process pid from /proc, in KiB.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read the server's memory (needs Linux /proc): %w", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read the server's memory: bad VmRSS line %q", line)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("read the server's memory: no VmRSS in /proc/%d/status", pid)
}

// readLines sends each line read from in, and closes when in ends.
func readLines(in io.Reader) <-chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}
