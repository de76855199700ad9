package crowd

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// Options control a run beyond the crowd itself.
type Options struct {
	// Workers is how many worker processes share the users; 0 or 1 runs
	// them in this process.
	Workers int
	// Spawn starts a worker with cfg, its share of the crowd (its share
	// of the rate), playing users first to first+count-1, and returns its
	// stdin and stdout; required when Workers > 1.
	Spawn func(ctx context.Context, cfg Config, first, count int) (stdin io.WriteCloser, stdout io.ReadCloser, wait func() error, err error)
	// AdminToken lets the run read the true line and pause the room for
	// position checks.
	AdminToken string
	// Duration is how long the crowd plays before the run stops.
	Duration time.Duration
	// Overtime lets the run go on past Duration, by up to this long, while
	// fewer than all its users have joined: on a slow machine the
	// arrivals, paused by each position check, can take longer than
	// planned, and a run that must see everyone join says so here rather
	// than with a longer Duration for every run. 0: the run stops at
	// Duration.
	Overtime time.Duration
	// CheckEvery freezes the crowd, pauses the room and compares every
	// user's latest position with the server's, this often (0: only at the
	// end). Needs AdminToken.
	CheckEvery time.Duration
	// Settle is how long a check waits, once the crowd and the room are
	// frozen, before it compares: the servers' longest gap between two
	// updates of a page (serve's --push-refresh) and some. Default 7s.
	Settle time.Duration
	// Sample is how often the room's public status is read (default 100ms).
	Sample time.Duration
	// Progress, when set, gets one line a second.
	Progress io.Writer
	// OnProgress, when set, is called once a second with the run's
	// progress (for progress bars); it must return quickly.
	OnProgress func(Progress)
	// Client is used for the coordinator's own requests.
	Client *http.Client
	// OpensIn, when set, makes the run a drop: the room's opens_at is set
	// to this long after arrivals begin (keeping the rest of its
	// configuration; needs AdminToken and a room that has not yet held a
	// draw), and a Rate of 0 spreads the arrivals evenly over that time.
	// A room already scheduled to open after the run starts is measured
	// as a drop without it.
	OpensIn time.Duration
	// Create, when set, is the configuration of the room to create (with
	// AdminToken) when it does not exist yet. Without it, a room that does
	// not exist fails the run, with a *NoRoomError, before the crowd
	// starts.
	Create *waitroom.RoomConfig
}

// NoRoomError is the error of a run against a room that does not exist
// (and that Options.Create does not make).
type NoRoomError struct{ Room, Target string }

func (e *NoRoomError) Error() string {
	return fmt.Sprintf("room %q does not exist on %s", e.Room, e.Target)
}

// A run stops early, with Report.StoppedEarly, when more than half of its
// joins failed once at least minFailSample of them have, or when no server
// could be reached for unreachableAfter.
const (
	minFailSample    = 20
	unreachableAfter = 5 * time.Second
	// probeTimeout bounds the first look at each server, before the crowd
	// starts.
	probeTimeout = 4 * time.Second
)

// Progress is how far a run has got: what the workers reported (joined,
// admitted) and the room's latest sampled status (waiting, active).
type Progress struct {
	Elapsed  time.Duration
	Users    int // how many people arrive in all
	Joined   int
	Admitted int // people who have seen their own admission
	Waiting  int
	Active   int
	Capacity int
	Entrants int // in the pre-queue of a scheduled room before its draw
}

// worker is the coordinator's end of one worker.
type worker struct {
	stdin    io.WriteCloser
	lines    chan line
	wait     func() error
	mu       sync.Mutex
	count    int    // users joined so far
	admitted int    // users admitted so far
	updates  int64  // stream updates received so far
	failed   int    // users whose join failed for good so far
	cause    string // what the latest of those met
}

// progress records a worker's progress line.
func (w *worker) progress(l line) {
	w.mu.Lock()
	w.count, w.admitted, w.updates, w.failed = l.Count, l.Admit, l.Upd, l.Fail
	if l.Cause != "" {
		w.cause = l.Cause
	}
	w.mu.Unlock()
}

func (w *worker) send(cmd string) error {
	_, err := io.WriteString(w.stdin, cmd+"\n")
	return err
}

// expect reads lines until one of kind, keeping progress up to date.
func (w *worker) expect(ctx context.Context, kind string) (line, error) {
	for {
		select {
		case <-ctx.Done():
			return line{}, ctx.Err()
		case l, ok := <-w.lines:
			if !ok {
				return line{}, fmt.Errorf("worker ended before %q", kind)
			}
			if l.Kind == "progress" {
				w.progress(l)
				continue
			}
			if l.Kind == kind {
				return l, nil
			}
		}
	}
}

// Play runs the crowd and returns what it measured.
func Play(ctx context.Context, cfg Config, opt Options) (*Report, error) {
	if len(cfg.Targets) == 0 || cfg.Room == "" || cfg.Users < 1 {
		return nil, fmt.Errorf("crowd: a run needs targets, a room and users")
	}
	if opt.Sample <= 0 {
		opt.Sample = 100 * time.Millisecond
	}
	if opt.Client == nil {
		opt.Client = &http.Client{Timeout: 30 * time.Second}
	}
	created, err := preflight(ctx, cfg, opt)
	if err != nil {
		return nil, err // it names the server: one line says it all
	}
	started := time.Now()
	var opensAt time.Time
	switch {
	case opt.OpensIn > 0:
		if opt.AdminToken == "" {
			return nil, fmt.Errorf("crowd: scheduling the opening needs the admin token")
		}
		cfg.Start = started.Add(startLead)
		// The server keeps opens_at in milliseconds.
		opensAt = time.UnixMilli(cfg.Start.Add(opt.OpensIn).UnixMilli())
		if cfg.Rate == 0 {
			cfg.Rate = float64(cfg.Users) / opt.OpensIn.Seconds()
		}
		if err := scheduleDrop(ctx, opt, cfg.Targets[0], cfg.Room, opensAt); err != nil {
			return nil, fmt.Errorf("crowd: %w", err)
		}
	default:
		if st, err := roomStatus(ctx, opt.Client, cfg.Targets[0], cfg.Room); err == nil && st.OpensAt.After(started) {
			opensAt = st.OpensAt
		}
	}
	rep := &Report{Config: cfg, Started: started, Users: cfg.Users, CreatedRoom: created}
	if !opensAt.IsZero() {
		rep.Drop = &DropReport{OpensAt: opensAt}
	}
	// Positions can be checked only once the draw gave them: no freeze
	// before the opening (it would also hold back arrivals), and none in
	// the second after it, while the draw reaches every stream.
	checkable := func() bool { return opensAt.IsZero() || time.Now().After(opensAt.Add(time.Second)) }
	n := max(1, opt.Workers)
	workers := make([]*worker, 0, n)
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	for i := 0; i < n; i++ {
		first, count := cfg.Users*i/n, cfg.Users*(i+1)/n-cfg.Users*i/n
		w := &worker{lines: make(chan line, 1024)}
		var stdout io.ReadCloser
		share := cfg
		share.Rate = cfg.Rate / float64(n)
		if n == 1 || opt.Spawn == nil {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() {
				err := Worker(runCtx, share, first, count, inR, outW)
				outW.Close()
				done <- err
			}()
			w.stdin, stdout, w.wait = inW, outR, func() error { return <-done }
		} else {
			var err error
			w.stdin, stdout, w.wait, err = opt.Spawn(runCtx, share, first, count)
			if err != nil {
				return nil, fmt.Errorf("crowd: start worker %d: %w", i, err)
			}
		}
		go func() {
			defer close(w.lines)
			r := bufio.NewReaderSize(stdout, 1<<20)
			for {
				b, err := r.ReadBytes('\n')
				if len(b) > 0 {
					var l line
					if json.Unmarshal(b, &l) == nil {
						w.lines <- l
					}
				}
				if err != nil {
					return
				}
			}
		}()
		workers = append(workers, w)
	}
	joined := func() int {
		t := 0
		for _, w := range workers {
			w.mu.Lock()
			t += w.count
			w.mu.Unlock()
		}
		return t
	}
	updates := func() int64 {
		var t int64
		for _, w := range workers {
			w.mu.Lock()
			t += w.updates
			w.mu.Unlock()
		}
		return t
	}
	failed := func() (n int, cause string) {
		for _, w := range workers {
			w.mu.Lock()
			n += w.failed
			cause = cmp.Or(w.cause, cause)
			w.mu.Unlock()
		}
		return n, cause
	}
	admitted := func() int {
		t := 0
		for _, w := range workers {
			w.mu.Lock()
			t += w.admitted
			w.mu.Unlock()
		}
		return t
	}
	// Progress lines arrive on each worker's channel between commands:
	// drain them in the background while nothing else reads.
	var readers sync.Mutex
	drain := func() {
		readers.Lock()
		defer readers.Unlock()
		for _, w := range workers {
			for {
				select {
				case l, ok := <-w.lines:
					if ok && l.Kind == "progress" {
						w.progress(l)
						continue
					}
				default:
				}
				break
			}
		}
	}

	// Sample the room while the crowd plays; the samples also tell whether
	// any server can still be reached.
	var seriesMu sync.Mutex
	lastReached, lastUnreachable := time.Now(), time.Time{}
	var unreachable error
	sampleDone := make(chan struct{})
	go func() {
		defer close(sampleDone)
		t := time.NewTicker(opt.Sample)
		defer t.Stop()
		i := 0
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
			}
			st, err := roomStatus(runCtx, opt.Client, cfg.Targets[i%len(cfg.Targets)], cfg.Room)
			i++
			if err != nil {
				if transport(err) && runCtx.Err() == nil {
					seriesMu.Lock()
					lastUnreachable, unreachable = time.Now(), err
					seriesMu.Unlock()
				}
				continue
			}
			seriesMu.Lock()
			lastReached = time.Now()
			rep.Capacity = st.Capacity
			rep.MaxActive = max(rep.MaxActive, st.Active)
			rep.Series = append(rep.Series, Sample{T: time.Since(rep.Started).Seconds(), Waiting: st.Waiting, Active: st.Active, Joined: joined(), Entrants: st.Entrants, Updates: updates()})
			seriesMu.Unlock()
		}
	}()

	end := time.After(opt.Duration)
	var checkC <-chan time.Time
	if opt.CheckEvery > 0 && opt.AdminToken != "" {
		t := time.NewTicker(opt.CheckEvery)
		defer t.Stop()
		checkC = t.C
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	report := func() {
		drain()
		seriesMu.Lock()
		var last Sample
		if len(rep.Series) > 0 {
			last = rep.Series[len(rep.Series)-1]
		}
		capacity := rep.Capacity
		seriesMu.Unlock()
		p := Progress{
			Elapsed: time.Since(rep.Started), Users: cfg.Users, Joined: joined(), Admitted: admitted(),
			Waiting: last.Waiting, Active: last.Active, Capacity: capacity, Entrants: last.Entrants,
		}
		if opt.Progress != nil {
			pre := ""
			if p.Entrants > 0 {
				pre = fmt.Sprintf(" entrants %d", p.Entrants)
			}
			fmt.Fprintf(opt.Progress, "%5.0fs joined %d/%d%s waiting %d active %d admitted %d\n", p.Elapsed.Seconds(), p.Joined, cfg.Users, pre, p.Waiting, p.Active, p.Admitted)
		}
		if opt.OnProgress != nil {
			opt.OnProgress(p)
		}
	}
	// stopReason says why the run cannot go on, or "".
	stopReason := func() string {
		j := joined()
		if f, cause := failed(); f >= minFailSample && f > j {
			return fmt.Sprintf("%d of the first %d joins failed (the latest: %s)", f, f+j, cause)
		}
		seriesMu.Lock()
		defer seriesMu.Unlock()
		if lastUnreachable.After(lastReached) && time.Since(lastReached) >= unreachableAfter {
			return fmt.Sprintf("no server could be reached for %s (the latest: %s)", unreachableAfter, causeOf(unreachable))
		}
		return ""
	}
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-end:
			if opt.Overtime > 0 && time.Since(rep.Started) < opt.Duration+opt.Overtime {
				drain()
				if joined() < cfg.Users {
					end = time.After(250 * time.Millisecond) // overtime: look again soon
					continue
				}
			}
			// A last report, so the final progress is the run's end even
			// when a slow position check held the ticks up.
			report()
			break loop
		case <-tick.C:
			report()
			if why := stopReason(); why != "" {
				rep.StoppedEarly = why
				break loop
			}
		case <-checkC:
			if !checkable() {
				continue
			}
			readers.Lock()
			c, err := check(ctx, opt, cfg, workers)
			readers.Unlock()
			if err != nil {
				rep.Errors = append(rep.Errors, "position check: "+err.Error())
				continue
			}
			rep.Checks = append(rep.Checks, c)
		}
	}
	if rep.StoppedEarly != "" {
		// No final check: the servers are gone, or the crowd never was.
	} else if opt.AdminToken != "" && ctx.Err() == nil && !checkable() {
		rep.Errors = append(rep.Errors, "no final position check: the run ended before the room opened and its draw reached the crowd")
	} else if opt.AdminToken != "" && ctx.Err() == nil {
		readers.Lock()
		c, err := check(ctx, opt, cfg, workers)
		readers.Unlock()
		if err != nil {
			rep.Errors = append(rep.Errors, "final position check: "+err.Error())
		} else {
			rep.Checks = append(rep.Checks, c)
		}
	}
	// The published draw, read before the crowd stops.
	var draw waitroom.DrawRecord
	drawErr := errBeforeOpening
	if rep.Drop != nil && time.Now().After(opensAt) && rep.StoppedEarly == "" {
		draw, drawErr = fetchDraw(ctx, opt.Client, cfg.Targets[0], cfg.Room)
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	for _, w := range workers {
		_ = w.send(cmdStop)
	}
	for _, w := range workers {
	results:
		for {
			select {
			case <-stopCtx.Done():
				rep.Errors = append(rep.Errors, "a worker did not report its users within a minute")
				break results
			case l, ok := <-w.lines:
				switch {
				case !ok || l.Kind == "done":
					break results
				case l.Kind == "user" && l.User != nil:
					rep.UsersDetail = append(rep.UsersDetail, *l.User)
				}
			}
		}
		w.stdin.Close()
		if err := w.wait(); err != nil {
			rep.Errors = append(rep.Errors, "worker: "+err.Error())
		}
	}
	stopRun()
	<-sampleDone
	rep.Seconds = time.Since(rep.Started).Seconds()
	summarise(rep)
	var opens int64
	if rep.Drop != nil {
		summariseDrop(rep, draw, drawErr)
		opens = unixMs(rep.Drop.OpensAt)
	}
	summariseETAs(rep, opens, time.Now().UnixMilli())
	return rep, nil
}

// preflight looks at the room on every server before the crowd starts, so
// that a server that cannot be reached, or a room that does not exist, is
// one error at once rather than every person's failed join. It creates
// the room with opt.Create when that is set, and says whether it did.
func preflight(ctx context.Context, cfg Config, opt Options) (created bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	for _, base := range cfg.Targets {
		_, err := roomStatus(ctx, opt.Client, base, cfg.Room)
		var answer *statusError
		switch {
		case err == nil:
			continue
		case errors.As(err, &answer) && answer.code == string(waitroom.CodeRoomNotFound) && opt.Create != nil:
			if err := createRoom(ctx, opt, base, cfg.Room, *opt.Create); err != nil {
				return false, err
			}
			created = true
		case errors.As(err, &answer) && answer.code == string(waitroom.CodeRoomNotFound):
			return false, &NoRoomError{Room: cfg.Room, Target: base}
		case errors.As(err, &answer) && answer.code == "":
			return false, fmt.Errorf("%s answered GET /v1/rooms/%s with %s, not a waitroom answer: is it a waitroom server?", base, cfg.Room, answer)
		case errors.As(err, &answer):
			return false, fmt.Errorf("%s answered GET /v1/rooms/%s with %s", base, cfg.Room, answer)
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return false, fmt.Errorf("cannot reach %s: no answer within %s", base, probeTimeout)
		default:
			return false, fmt.Errorf("cannot reach %s: %s", base, causeOf(err))
		}
	}
	return created, nil
}

// createRoom creates room on base with cfg, with the admin token.
func createRoom(ctx context.Context, opt Options, base, room string, cfg waitroom.RoomConfig) error {
	if opt.AdminToken == "" {
		return fmt.Errorf("%w, and creating it needs the admin token", &NoRoomError{Room: room, Target: base})
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("create room %q: %w", room, err)
	}
	if err := doJSON(ctx, opt.Client, "PUT", base+"/v1/rooms/"+room, opt.AdminToken, b, nil); err != nil {
		return fmt.Errorf("create room %q on %s: %w", room, base, err)
	}
	return nil
}
