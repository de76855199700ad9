package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/cwriter"
	"github.com/vbauerster/mpb/v8/decor"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/crowd"
)

// usersPerWorker keeps each worker process well under the open-file limit
// (one connection per user, plus the process's own).
const usersPerWorker = 4000

// usersPerSource keeps each source address well under its ephemeral ports.
const usersPerSource = 10000

// loadCommand is `waitroom load`: it plays a crowd against running servers
// and reports what the crowd saw.
func loadCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if name, ok := scenarioArg(args); ok {
		return runScenario(ctx, name, args, getenv, stdout, stderr) // its own flags: see attack.go
	}
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setHelp(fs, loadHelp)
	fs.String("scenario", "", "play a scripted `scenario` with flags of its own instead: attack (people and a join bot against\nno defence, the join limit and proof of work, on servers it starts; see --scenario attack -h)")
	targets := fs.String("target", "http://127.0.0.1:8080", "comma-separated base `URLs` of the servers; users are spread over them")
	room := fs.String("room", "default", "`room` to join")
	create := fs.Bool("create", false, "create the room when it does not exist (with the admin token; capacity --capacity, the rest the server's defaults); a room that exists is left as it is")
	capacity := fs.Int("capacity", 50, "how many `people` a room that --create makes admits at once")
	users := fs.Int("users", 1000, "how many `people` arrive")
	rate := fs.Float64("rate", 0, "`arrivals` per second; 0: everyone at once, or with --opens-in spread evenly over the time before the opening")
	hold := fs.Duration("hold", 10*time.Second, "how long an admitted person stays (each draws from hold/2 to 3·hold/2)")
	abandon := fs.Float64("abandon", 0, "`chance` an admitted person closes the page without leaving")
	quit := fs.Float64("quit", 0, "`chance` per second a waiting person gives up and leaves")
	poll := fs.Duration("poll", 0, "poll the session this often instead of holding an event stream")
	duration := fs.Duration("duration", time.Minute, "how long the crowd plays; with --opens-in, default 30s past the opening")
	opensIn := fs.Duration("opens-in", 0, "play a drop: set the room's opens_at to this long after arrivals begin (keeping the rest of its configuration; needs the admin token and a room that has not held a draw yet, so use a new room per run), let the crowd arrive in its pre-queue, and report the time from the opening until each entrant's stream shows a position, the entrants lost, and the published draw checked as verify-draw does and against every entrant's ticket. Without it, a room already scheduled to open is measured the same way")
	workers := fs.Int("workers", 0, "worker `processes`; 0: one per 4,000 users")
	sources := fs.Int("sources", 0, "loopback source `addresses` to connect from (127.0.0.2, …); 0: one per 10,000 users, none when that is one")
	settle := fs.Duration("check-settle", 7*time.Second, "how long a check waits with the crowd and the room frozen before it compares: at least the servers' --push-refresh plus a second or two")
	check := fs.Duration("check-every", 0, "freeze the crowd and check every person's latest position this often (needs the admin token); a final check always runs when the token is given")
	token := fs.String("admin-token", "", "admin `token` for --create, --opens-in and position checks; default: the environment variable WAITROOM_ADMIN_TOKEN")
	jsonOut := fs.String("json", "", "write the full result to this `file` as JSON")
	chartOut := fs.String("chart", "", "write an SVG chart of waiting, active and admissions per second to this `file`; default: the --json file with .svg for .json, none without --json; \"none\" for no chart")
	seed := fs.Uint64("seed", 1, "random `seed`")
	asWorker := fs.Bool("worker", false, "run as a worker process (internal)")
	first := fs.Int("first", 0, "first user of this worker (internal)")
	count := fs.Int("count", 0, "number of users of this worker (internal)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *asWorker {
		var cfg crowd.Config
		if err := json.Unmarshal([]byte(getenv("WAITROOM_LOAD_CONFIG")), &cfg); err != nil {
			return fmt.Errorf("worker: bad WAITROOM_LOAD_CONFIG: %w", err)
		}
		return crowd.Worker(ctx, cfg, *first, *count, os.Stdin, stdout)
	}
	if *token == "" {
		// Read here, not as the flag's default: -h would print it.
		*token = getenv("WAITROOM_ADMIN_TOKEN")
	}
	if *users < 1 {
		return badUsage(fs, "--users must be at least 1")
	}
	if *opensIn < 0 {
		return badUsage(fs, "--opens-in must not be negative")
	}
	var createCfg *waitroom.RoomConfig
	if *create {
		if *token == "" {
			return badUsage(fs, "--create needs the admin token: --admin-token or WAITROOM_ADMIN_TOKEN")
		}
		rc := waitroom.DefaultConfig()
		rc.Capacity = *capacity
		if err := rc.Validate(); err != nil {
			return badUsage(fs, "--capacity: %s", waitroom.ErrorMessage(err))
		}
		createCfg = &rc
	}
	if *opensIn > 0 {
		if *token == "" {
			return badUsage(fs, "--opens-in sets the room's opening: it needs --admin-token (or WAITROOM_ADMIN_TOKEN)")
		}
		durationSet := false
		fs.Visit(func(f *flag.Flag) { durationSet = durationSet || f.Name == "duration" })
		switch {
		case !durationSet:
			*duration = *opensIn + 30*time.Second
		case *duration <= *opensIn+time.Second:
			return badUsage(fs, "--duration (%s) must run past the opening (--opens-in %s) by more than a second, or nothing of the draw is seen", *duration, *opensIn)
		}
	}
	cfg := crowd.Config{
		Room: *room, Users: *users, Rate: *rate, Hold: *hold, Abandon: *abandon, Quit: *quit,
		Poll: *poll, Seed: *seed,
	}
	for _, t := range strings.Split(*targets, ",") {
		if t = strings.TrimRight(strings.TrimSpace(t), "/"); t != "" {
			cfg.Targets = append(cfg.Targets, t)
		}
	}
	nSources := *sources
	if nSources == 0 && *users > usersPerSource {
		nSources = (*users + usersPerSource - 1) / usersPerSource
	}
	for i := range nSources {
		cfg.Sources = append(cfg.Sources, netip.AddrFrom4([4]byte{127, 0, 0, byte(2 + i)}))
	}
	n := *workers
	if n == 0 {
		n = (*users + usersPerWorker - 1) / usersPerWorker
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to start workers: %w", err)
	}
	opt := crowd.Options{
		Workers: n, AdminToken: *token, Duration: *duration, CheckEvery: *check, Settle: *settle, Progress: stderr, OpensIn: *opensIn,
		Create: createCfg,
		Spawn: func(ctx context.Context, share crowd.Config, first, count int) (io.WriteCloser, io.ReadCloser, func() error, error) {
			b, _ := json.Marshal(share)
			cmd := exec.CommandContext(ctx, exe, "load", "--worker", "--first", strconv.Itoa(first), "--count", strconv.Itoa(count))
			cmd.Env = append(os.Environ(), "WAITROOM_LOAD_CONFIG="+string(b))
			cmd.Stderr = stderr
			in, err := cmd.StdinPipe()
			if err != nil {
				return nil, nil, nil, err
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				return nil, nil, nil, err
			}
			if err := cmd.Start(); err != nil {
				return nil, nil, nil, err
			}
			return in, out, cmd.Wait, nil
		},
	}
	chart := chartPath(*chartOut, *jsonOut)
	var bars *loadBars
	if isTerminal(stderr, getenv) {
		// Bars redraw in place; the per-second lines would scroll them away.
		bars = newLoadBars(ctx, stderr, *users)
		opt.Progress, opt.OnProgress = nil, bars.update
	}
	rep, err := crowd.Play(ctx, cfg, opt)
	if bars != nil {
		bars.finish()
	}
	var noRoom *crowd.NoRoomError
	switch {
	case errors.As(err, &noRoom) && !*create:
		return fmt.Errorf("%w: add --create (with the admin token) to create it, or name another --room", err)
	case err != nil:
		return err
	}
	printReport(stdout, rep)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", *jsonOut, err)
		}
	}
	if chart != "" {
		if err := writeChart(chart, rep); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "chart written to %s\n", chart)
	}
	if rep.StoppedEarly != "" {
		hint := ""
		if rep.JoinFailures["429 "+string(waitroom.CodeRateLimited)] > 0 {
			hint = "; the servers limit joins per address: start them with --join-limit 0 (and, for a crowd from one address, --max-connections-per-address 0 --max-streams-per-address 0)"
		}
		return fmt.Errorf("load stopped early: %s%s", rep.StoppedEarly, hint)
	}
	return nil
}

// loadHelp is load's -h.
var loadHelp = helpText{
	usage: "waitroom load [flags]",
	about: "Plays a crowd against running servers and reports what it saw: people arrive (--rate), join " +
		"--room, wait with an event stream (or --poll), stay admitted for about --hold and leave, and " +
		"the report gives join latency, how soon each admission reached its person, FIFO fairness, ETA " +
		"error, capacity held and, with the admin token, exact positions at every freeze. The room must " +
		"exist, or be made with --create. Failures are counted by cause in the report; the run stops " +
		"early and exits 1 when no server can be reached or most joins fail. Servers limit joins per " +
		"address (serve --join-limit, 120 a minute) and cap one address's connections and streams: start the " +
		"server under test with --join-limit 0 --max-connections-per-address 0 --max-streams-per-address 0.",
	examples: []string{
		`waitroom load --room load --create --admin-token "$TOKEN" --users 2000 --rate 500 --hold 2s --duration 20s`,
		`waitroom load --target http://10.0.0.5:8080,http://10.0.0.6:8080 --room drop --users 19900 --opens-in 60s --admin-token "$TOKEN"`,
		"waitroom load --scenario attack -h",
	},
	hidden: []string{"worker", "first", "count"},
}

// chartPath is where the chart goes: the --chart flag, or next to the JSON
// result (its name with .svg for .json), or nowhere.
func chartPath(flagValue, jsonOut string) string {
	switch {
	case flagValue == "none":
		return ""
	case flagValue != "":
		return flagValue
	case jsonOut == "":
		return ""
	}
	return strings.TrimSuffix(jsonOut, filepath.Ext(jsonOut)) + ".svg"
}

// writeChart writes the run's SVG chart to path.
func writeChart(path string, rep *crowd.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write chart: %w", err)
	}
	if err := crowd.WriteChart(f, rep); err != nil {
		f.Close()
		return fmt.Errorf("write chart %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write chart %s: %w", path, err)
	}
	return nil
}

// isTerminal reports whether w is a terminal that can redraw progress bars:
// a terminal with a width (a pseudo-terminal nobody sized has none, and
// bars would draw nothing), and TERM is not "dumb".
func isTerminal(w io.Writer, getenv func(string) string) bool {
	if _, ok := w.(*os.File); !ok || getenv("TERM") == "dumb" {
		return false
	}
	cw := cwriter.New(w)
	if !cw.IsTerminal() {
		return false
	}
	width, _, err := cw.GetTermSize()
	return err == nil && width > 0
}

// loadBars shows a run's progress as four bars: people joined, waiting and
// admitted (out of all the people), and active (out of the capacity).
type loadBars struct {
	p                                 *mpb.Progress
	joined, waiting, active, admitted *mpb.Bar
}

func newLoadBars(ctx context.Context, w io.Writer, users int) *loadBars {
	p := mpb.NewWithContext(ctx, mpb.WithOutput(w), mpb.WithWidth(48), mpb.WithRefreshRate(250*time.Millisecond))
	bar := func(name string, total int) *mpb.Bar {
		// Made with total 0, a bar never completes by itself: waiting and
		// active go down as well as up, and active sits at the capacity.
		// Its total can then be set, and changed when the capacity is known.
		b := p.New(0, mpb.BarStyle(),
			mpb.PrependDecorators(decor.Name(name, decor.WC{W: 10, C: decor.DindentRight}), decor.CountersNoUnit("%d / %d", decor.WC{W: 16})),
			mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO)))
		b.SetTotal(int64(total), false)
		return b
	}
	return &loadBars{
		p:        p,
		joined:   bar("joined", users),
		waiting:  bar("waiting", users),
		active:   bar("active", 1),
		admitted: bar("admitted", users),
	}
}

// update moves the bars to the run's latest progress.
func (b *loadBars) update(pr crowd.Progress) {
	if pr.Capacity > 0 {
		b.active.SetTotal(int64(pr.Capacity), false)
	}
	b.joined.SetCurrent(int64(pr.Joined))
	b.waiting.SetCurrent(int64(pr.Waiting))
	b.active.SetCurrent(int64(pr.Active))
	b.admitted.SetCurrent(int64(pr.Admitted))
}

// finish stops the bars where they are and waits for the last redraw.
func (b *loadBars) finish() {
	for _, bar := range []*mpb.Bar{b.joined, b.waiting, b.active, b.admitted} {
		bar.Abort(false)
	}
	b.p.Wait()
}

// printReport writes the run's figures as a table.
func printReport(w io.Writer, r *crowd.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(name string, v crowd.Percentiles, unit string) {
		fmt.Fprintf(tw, "%s\tp50 %.1f%s\tp90 %.1f%s\tp99 %.1f%s\tmax %.1f%s\t(n %d)\n", name, v.P50, unit, v.P90, unit, v.P99, unit, v.Max, unit, v.N)
	}
	if r.CreatedRoom {
		fmt.Fprintf(tw, "room\t%q, created for this run with capacity %d\n", r.Config.Room, r.Capacity)
	}
	fmt.Fprintf(tw, "users\t%d joined, %d failed to join, %d admitted, %d left, %d abandoned, %d lost\n", r.Joined, r.JoinErrors, r.Admitted, r.Left, r.Abandoned, r.Lost)
	p("join latency", r.JoinMillis, "ms")
	p("admission to person", r.AdmitDelayMillis, "ms")
	p("slot freed to next told", r.SlotMillis, "ms")
	fmt.Fprintf(tw, "fairness\t%d inversions, Kendall tau distance %.6f (0 is exact FIFO)\n", r.Inversions, r.KendallTau)
	p("ETA error", r.ETAErrorSeconds, "s")
	e := r.ETA
	p("first ETA error", e.First.RelError, "%")
	p("all ETAs error", e.All.RelError, "%")
	fmt.Fprintf(tw, "ETA range\tholds the wait for %.1f%% of first ETAs, %.1f%% of all %d shown; %d ETAs that grew past their range (%d people)\n",
		100*e.First.Covered, 100*e.All.Covered, e.Shown, e.GrewPastRange, e.GrewPeople)
	p("ETA not known yet", e.UnknownMillis, "ms")
	fmt.Fprintf(tw, "ETA not admitted\t%d with the first ETA's range passed, %d pending; %d never shown an ETA\n", e.Overdue, e.Pending, e.Never)
	fmt.Fprintf(tw, "capacity\tmax active sampled %d of capacity %d\n", r.MaxActive, r.Capacity)
	fmt.Fprintf(tw, "integrity\t%d duplicate tickets, %d positions that went up, %d reconnects\n", r.DuplicateTickets, r.PositionUps, r.Reconnects)
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "position check\t%d of %d people wrong, %d waiting\t%s\n", c.Wrong, c.Compared, c.Waiting, c.FirstDiff)
	}
	if d := r.Drop; d != nil {
		fmt.Fprintf(tw, "drop\topened %s, %d entrants, %d late arrivals, %d left before a position, %d lost\n",
			d.OpensAt.UTC().Format(waitroom.TimeFormat), d.Entrants, d.Late, d.LeftEarly, d.Lost)
		p("opening to position seen", d.PositionMillis, "ms")
		switch {
		case d.Verified:
			diff := ""
			if d.FirstDiff != "" {
				diff = " (" + d.FirstDiff + ")"
			}
			// One cell: a long cell before a tab would widen the column.
			fmt.Fprintf(tw, "draw\tverified (as verify-draw): %d entries from ticket %d, drawn %d ms after opens_at; %d of %d entrants listed with the ticket they reached, %d missing, %d with another ticket, %d listed after leaving, %d other entries%s\n",
				d.DrawEntries, d.FirstTicket, d.DrawnAfterMillis, d.Listed, d.Entrants, d.Missing, d.WrongTicket, d.ListedGone, d.Others, diff)
		default:
			fmt.Fprintf(tw, "draw\tNOT VERIFIED: %s\n", d.DrawError)
		}
	}
	counts := func(name string, m map[string]int) {
		if len(m) == 0 {
			return
		}
		keys := slices.Collect(maps.Keys(m))
		slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%d × %s", m[k], k))
		}
		// One cell: a long cell before a tab would widen the column.
		fmt.Fprintf(tw, "%s\t%s\n", name, strings.Join(parts, ", "))
	}
	counts("join failures", r.JoinFailures)
	counts("request errors", r.RequestErrors)
	for _, e := range r.Errors {
		fmt.Fprintf(tw, "error\t%s\n", e)
	}
	if r.StoppedEarly != "" {
		fmt.Fprintf(tw, "stopped early\t%s\n", r.StoppedEarly)
	}
	tw.Flush()
}
