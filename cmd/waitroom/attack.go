package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
	"github.com/waitroom/waitroom/internal/crowd"
)

// attackRoom is the room every attack run joins, on a server of its own.
const attackRoom = "attack"

// attackRunNames are the runs of the attack scenario, in order: no
// defence, the per-address join limit, and proof of work with the limit.
var attackRunNames = []string{"none", "limit", "pow"}

// scenarioArg finds --scenario in load's arguments before they are parsed,
// so a scenario can take flags of its own.
func scenarioArg(args []string) (string, bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "scenario" {
			continue
		}
		if hasValue {
			return value, true
		}
		if i+1 < len(args) {
			return args[i+1], true
		}
		return "", true
	}
	return "", false
}

// runScenario runs `waitroom load --scenario name`.
func runScenario(ctx context.Context, name string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if name == "attack" {
		return attackCommand(ctx, args, getenv, stdout, stderr)
	}
	fmt.Fprintf(stderr, "waitroom load: unknown --scenario %q (known: attack)\n", name)
	return &usageError{fmt.Sprintf("unknown scenario %q", name)}
}

// attackRow is one run's figures, as printed and as written with --json.
type attackRow struct {
	Run       string `json:"run"`
	Defence   string `json:"defence"`
	JoinLimit int    `json:"join_limit_per_minute"`
	PoW       bool   `json:"proof_of_work"`
	// First is how many admissions are measured; Admitted how many the
	// room made (fewer only when the run timed out).
	First    int `json:"first"`
	Admitted int `json:"admitted"`
	// Of the admissions: the bot's, the people's, and those whose join
	// answer never reached the client.
	BotAdmitted     int     `json:"bot_admitted"`
	PeopleAdmitted  int     `json:"people_admitted"`
	UnknownAdmitted int     `json:"unknown_admitted"`
	BotShare        float64 `json:"bot_share_of_admissions"`
	// BotComputeShare is the bot's share of the hashes tried; null when
	// nobody solved anything (no proof of work).
	BotComputeShare *float64 `json:"bot_share_of_compute"`
	Seconds         float64  `json:"seconds"`
	*crowd.AttackResult
}

// attackReport is the --json output.
type attackReport struct {
	People     int          `json:"people"`
	Window     string       `json:"window"`
	First      int          `json:"first"`
	BotAddrs   int          `json:"bot_addresses"`
	BotWorkers int          `json:"bot_workers"`
	Runs       []*attackRow `json:"runs"`
	Seconds    float64      `json:"wall_seconds"`
}

// attackCommand is `waitroom load --scenario attack`: people arrive at a
// room while a bot joins as fast as it can from many addresses, once with
// no defence, once with the per-address join limit and once with proof of
// work, each against a fresh server of its own on loopback; it reports the
// bot's share of the first admissions and, under proof of work, of the
// compute spent.
func attackCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("load --scenario attack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setHelp(fs, helpText{
		usage: "waitroom load --scenario attack [flags]",
		about: "People arrive at a room while a bot joins as fast as it can from many loopback addresses, " +
			"in up to three runs, each against a fresh `waitroom serve --store memory` of its own: with no " +
			"defence, with the per-address join limit, and with proof of work and the limit. It reports the " +
			"bot's share of the first admissions and, under proof of work, of the compute spent. It needs " +
			"the loopback addresses 127.0.0.0/8 (Linux has them all).",
		examples: []string{
			"waitroom load --scenario attack",
			"waitroom load --scenario attack --people 10000 --window 25s --first 1000 --json attack.json",
		},
	})
	fs.String("scenario", "attack", "the `scenario`: attack")
	people := fs.Int("people", 10_000, "how many `people` arrive, each joining once from its own loopback address")
	window := fs.Duration("window", 25*time.Second, "the people arrive evenly over this `duration`")
	first := fs.Int("first", 1000, "how many first `admissions` are measured; a run stops once the room has this many sessions")
	botAddrs := fs.Int("bot-addresses", 64, "loopback source `addresses` of the bot (127.0.1.1, …)")
	botWorkers := fs.Int("bot-workers", 64, "the bot's concurrent join `loops`; under proof of work each is one solver,\nas much compute as one person's browser: the bot's compute budget")
	joinLimit := fs.Int("join-limit", 120, "the servers' --join-limit in the limit and pow runs: `joins` a minute per address")
	runs := fs.String("runs", strings.Join(attackRunNames, ","), "comma-separated `runs`: none (no defence), limit (--join-limit), pow (proof of work and the limit)")
	chMin := fs.Int64("challenge-min", 0, "the room's challenge_min in the pow run (ALTCHA `maxnumber`); 0: the server's default")
	chMax := fs.Int64("challenge-max", 0, "the room's challenge_max in the pow run (ALTCHA `maxnumber`); 0: the server's default")
	timeout := fs.Duration("timeout", 2*time.Minute, "longest a run may take to reach --first sessions (`duration`)")
	jsonOut := fs.String("json", "", "write the results to this `file` as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *people < 0 || *people > crowd.MaxAttackPeople:
		return badUsage(fs, "--people must be between 0 and %d", crowd.MaxAttackPeople)
	case *first < 1 || *first > waitroom.MaxAdvance:
		return badUsage(fs, "--first must be between 1 and %d", waitroom.MaxAdvance)
	case *botAddrs < 1 || *botAddrs > 250:
		return badUsage(fs, "--bot-addresses must be between 1 and 250")
	case *botWorkers < 0:
		return badUsage(fs, "--bot-workers must not be negative")
	case *window < 0 || *timeout <= 0:
		return badUsage(fs, "--window must not be negative and --timeout must be positive")
	case *joinLimit < 1:
		return badUsage(fs, "--join-limit must be at least 1: the limit run is about it")
	}
	var names []string
	for r := range strings.SplitSeq(*runs, ",") {
		r = strings.TrimSpace(r)
		if !slices.Contains(attackRunNames, r) {
			return badUsage(fs, "--runs: unknown run %q (known: %s)", r, strings.Join(attackRunNames, ", "))
		}
		names = append(names, r)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to start servers: %w", err)
	}
	var sources []netip.Addr
	for i := range *botAddrs {
		sources = append(sources, netip.AddrFrom4([4]byte{127, 0, 1, byte(1 + i)}))
	}
	rep := &attackReport{People: *people, Window: window.String(), First: *first, BotAddrs: *botAddrs, BotWorkers: *botWorkers}
	began := time.Now()
	for _, name := range names {
		row := &attackRow{Run: name, First: *first}
		cfg := waitroom.DefaultConfig()
		// A manual room admits nobody until advanced: once the run has made
		// --first sessions, advancing that many admits them in join order,
		// and no session expires meanwhile.
		cfg.Mode, cfg.WaitingTimeout, cfg.ActiveTimeout = waitroom.ModeManual, 0, 0
		switch name {
		case "none":
			row.Defence = "no defence"
		case "limit":
			row.Defence, row.JoinLimit = fmt.Sprintf("join limit %d/min per address", *joinLimit), *joinLimit
		case "pow":
			row.Defence, row.JoinLimit, row.PoW = fmt.Sprintf("proof of work + join limit %d/min", *joinLimit), *joinLimit, true
			cfg.Challenge, cfg.ChallengeMin, cfg.ChallengeMax = waitroom.ChallengePoW, *chMin, *chMax
		}
		fmt.Fprintf(stderr, "attack run %s (%s): starting a server\n", name, row.Defence)
		err := attackRun(ctx, exe, row.JoinLimit, cfg, crowd.AttackConfig{
			Room: attackRoom, People: *people, Window: *window, Stop: *first,
			BotSources: sources, BotWorkers: *botWorkers, Timeout: *timeout,
		}, row)
		if err != nil {
			return fmt.Errorf("attack run %s: %w", name, err)
		}
		fmt.Fprintf(stderr, "attack run %s: %d of the first %d admissions went to the bot (%.1f s)\n", name, row.BotAdmitted, row.Admitted, row.Seconds)
		rep.Runs = append(rep.Runs, row)
	}
	rep.Seconds = time.Since(began).Seconds()
	printAttack(stdout, rep)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", *jsonOut, err)
		}
	}
	return nil
}

// attackRun starts a server with the join limit (0: none), configures the
// room, plays the run, admits the first sessions and fills row.
func attackRun(ctx context.Context, exe string, joinLimit int, room waitroom.RoomConfig, cfg crowd.AttackConfig, row *attackRow) error {
	srv, err := startAttackServer(ctx, exe, joinLimit)
	if err != nil {
		return err
	}
	defer srv.stop()
	admin := client.New(srv.url, client.WithAdminToken(srv.token))
	if _, _, err := admin.PutRoom(ctx, attackRoom, room); err != nil {
		return fmt.Errorf("configure room %s: %w", attackRoom, err)
	}
	cfg.Target = srv.url
	res, err := crowd.Attack(ctx, cfg)
	if err != nil {
		return err
	}
	row.AttackResult = res
	row.Seconds = res.Elapsed.Seconds()
	if s := res.BotComputeShare(); s >= 0 {
		row.BotComputeShare = &s
	}
	// The first admissions, in the server's order: the room's line is
	// ticket order, and Advance admits from its front.
	admitted, err := admin.Advance(ctx, attackRoom, cfg.Stop)
	if err != nil && waitroom.ErrorCode(err) != waitroom.CodeQueueEmpty {
		return fmt.Errorf("admit the first %d: %w", cfg.Stop, err)
	}
	row.Admitted = len(admitted)
	for _, s := range admitted {
		switch res.Owner[s.ID] {
		case crowd.PartyBot:
			row.BotAdmitted++
		case crowd.PartyPerson:
			row.PeopleAdmitted++
		default:
			row.UnknownAdmitted++
		}
	}
	if row.Admitted > 0 {
		row.BotShare = float64(row.BotAdmitted) / float64(row.Admitted)
	}
	if msg := srv.failure(); msg != "" {
		res.Errors = append(res.Errors, "server: "+msg)
	}
	return nil
}

// attackServer is a `waitroom serve` child process of the scenario.
type attackServer struct {
	cmd    *exec.Cmd
	url    string
	token  string
	data   string
	done   chan struct{}
	mu     sync.Mutex
	stderr strings.Builder
}

// startAttackServer starts `exe serve` on a free loopback port with an
// in-memory store and the given join limit, and waits until it listens.
func startAttackServer(ctx context.Context, exe string, joinLimit int) (*attackServer, error) {
	data, err := os.MkdirTemp("", "waitroom-attack-")
	if err != nil {
		return nil, err
	}
	var tok [16]byte
	rand.Read(tok[:])
	s := &attackServer{token: hex.EncodeToString(tok[:]), data: data, done: make(chan struct{})}
	s.cmd = exec.Command(exe, "serve", "--addr", "127.0.0.1:0", "--store", "memory", "--data", data,
		"--admin-token", s.token, "--join-limit", strconv.Itoa(joinLimit), "--log-format", "text")
	// The server must not pick up WAITROOM_* settings meant for another.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WAITROOM_") {
			s.cmd.Env = append(s.cmd.Env, kv)
		}
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(data)
		return nil, err
	}
	s.cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.stderr.Len() < 64<<10 {
			s.stderr.Write(p)
		}
		return len(p), nil
	})
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(data)
		return nil, fmt.Errorf("start %s serve: %w", exe, err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "waitroom listening on "); ok {
				select {
				case addr <- strings.TrimSpace(a):
				default:
				}
			}
		}
		io.Copy(io.Discard, out)
	}()
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	select {
	case a := <-addr:
		s.url = "http://" + a
		return s, nil
	case <-s.done:
		err = fmt.Errorf("waitroom serve exited before listening: %s", s.failure())
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("waitroom serve did not listen within 30s: %s", s.failure())
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.stop()
	return nil, err
}

// failure is the server's error output so far: its warnings and errors.
func (s *attackServer) failure() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var bad []string
	for l := range strings.Lines(s.stderr.String()) {
		if strings.Contains(l, "using the in-memory store") { // asked for: every run starts afresh
			continue
		}
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") || !strings.Contains(l, "level=") {
			bad = append(bad, strings.TrimSpace(l))
		}
	}
	if len(bad) > 5 {
		bad = append(bad[:5], fmt.Sprintf("(and %d more lines)", len(bad)-5))
	}
	return strings.Join(bad, "; ")
}

// stop ends the server (SIGINT, then SIGKILL after 15 s) and removes its
// data folder.
func (s *attackServer) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	os.RemoveAll(s.data)
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// printAttack writes the runs as a table, then what each run noticed.
func printAttack(w io.Writer, r *attackReport) {
	fmt.Fprintf(w, "attack: %d people arriving over %s, one address each; a bot with %d join loops on %d addresses; first %d admissions\n\n",
		r.People, r.Window, r.BotWorkers, r.BotAddrs, r.First)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "run\tdefence\tbot joins tried\tbot sessions\tbot share of first %d\tbot share of compute\tpeople admitted\tpeople arrived\ttime\t\n", r.First)
	for _, row := range r.Runs {
		compute := "-"
		if row.BotComputeShare != nil {
			compute = fmt.Sprintf("%.1f%%", 100**row.BotComputeShare)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f%% (%d/%d)\t%s\t%d\t%d\t%.2fs\t\n", row.Run, row.Defence, row.BotAttempts, row.BotSessions,
			100*row.BotShare, row.BotAdmitted, row.Admitted, compute, row.PeopleAdmitted, row.PeopleArrived, row.Seconds)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, row := range r.Runs {
		var notes []string
		switch {
		case row.BotRefused > 0:
			notes = append(notes, fmt.Sprintf("%d bot joins refused 429", row.BotRefused))
		case row.JoinLimit > 0:
			notes = append(notes, fmt.Sprintf("the join limit refused none of the bot's joins: %d addresses × a burst of %d allow %d joins at once",
				r.BotAddrs, row.JoinLimit, r.BotAddrs*row.JoinLimit))
		}
		if row.PoW {
			per := func(h, n int64) string {
				if n == 0 {
					return "-"
				}
				return strconv.FormatInt(h/n, 10)
			}
			notes = append(notes, fmt.Sprintf("challenges: maxnumber %d to %d, mean bot %d, people %d; solved: bot %d, people %d",
				row.MinMaxNumber, row.MaxMaxNumber, row.BotMeanMaxNumber, row.PeopleMeanMaxNumber, row.BotSolved, row.PeopleSolved))
			notes = append(notes, fmt.Sprintf("hashes: bot %d, people %d; per admission among the first %d: bot %s, people %s",
				row.BotHashes, row.PeopleHashes, row.First, per(row.BotHashes, int64(row.BotAdmitted)), per(row.PeopleHashes, int64(row.PeopleAdmitted))))
			if c := row.BotComputeShare; c != nil && *c > 0 {
				verdict := "met"
				if row.BotShare > *c {
					verdict = "NOT met"
				}
				// The admissions are a sample: one standard error of a share
				// of Admitted says how far chance alone moves it.
				se := math.Sqrt(*c * (1 - *c) / float64(max(1, row.Admitted)))
				notes = append(notes, fmt.Sprintf("goal (bot's share of admissions no larger than its share of compute): %s, %.1f%% of admissions for %.1f%% of hashes (×%.2f; chance alone moves a share of %d by ±%.1f points); the bot's share of challenges solved: %.1f%%",
					verdict, 100*row.BotShare, 100**c, row.BotShare / *c, row.Admitted, 100*se, 100*float64(row.BotSolved)/float64(max(1, row.BotSolved+row.PeopleSolved))))
			}
		}
		if row.UnknownAdmitted > 0 {
			notes = append(notes, fmt.Sprintf("%d admissions whose join answer never arrived", row.UnknownAdmitted))
		}
		if row.PeopleFailed > 0 {
			notes = append(notes, fmt.Sprintf("%d people gave up on an error", row.PeopleFailed))
		}
		if row.TimedOut {
			notes = append(notes, fmt.Sprintf("TIMED OUT before %d sessions", row.First))
		}
		notes = append(notes, row.Errors...)
		for _, n := range notes {
			fmt.Fprintf(w, "%s: %s\n", row.Run, n)
		}
	}
	fmt.Fprintln(w, "(bot joins tried counts every join request, those answered 428 with a challenge too; time is until the room had its first sessions)")
	fmt.Fprintf(w, "wall time %.1fs\n", r.Seconds)
}
