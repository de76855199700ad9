package crowd

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
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
}

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

// Report is what a run measured.
type Report struct {
	Config           Config      `json:"config"`
	Started          time.Time   `json:"started"`
	Seconds          float64     `json:"seconds"`
	Users            int         `json:"users"`
	Joined           int         `json:"joined"`
	JoinErrors       int         `json:"join_errors"`
	Admitted         int         `json:"admitted"`
	Left             int         `json:"left"`
	Abandoned        int         `json:"abandoned"`
	Lost             int         `json:"lost"`
	Reconnects       int         `json:"reconnects"`
	Updates          int         `json:"updates_received"`
	DuplicateTickets int         `json:"duplicate_tickets"`
	PositionUps      int         `json:"position_increases"`
	JoinMillis       Percentiles `json:"join_ms"`
	AdmitDelayMillis Percentiles `json:"admission_delivery_ms"`
	// SlotMillis is, for each admission from the line that a seen end of
	// an admitted session made room for, the time from that slot freeing
	// (the server's ended_at) to the admitted person seeing it; SlotServer
	// is the server's part of it (admitted_at - ended_at).
	SlotMillis       Percentiles `json:"slot_to_admission_seen_ms"`
	SlotServerMillis Percentiles `json:"slot_to_admission_ms"`
	Inversions       int64       `json:"fifo_inversions"`
	KendallTau       float64     `json:"kendall_tau_distance"`
	ETAErrorSeconds  Percentiles `json:"eta_abs_error_s"`
	ETASamples       int         `json:"eta_samples"`
	Capacity         int         `json:"capacity"`
	MaxActive        int         `json:"max_active"`
	Checks           []Check     `json:"position_checks"`
	Series           []Sample    `json:"series"`
	// Admissions counts admissions (the server's admitted_at) in each
	// second of the run: element i is second i after Started.
	Admissions []int    `json:"admissions_per_second"`
	Errors     []string `json:"errors,omitempty"`
	// Drop is set for a run against a scheduled room's opening.
	Drop        *DropReport  `json:"drop,omitempty"`
	UsersDetail []UserResult `json:"people"`
}

// Check is one freeze-and-compare of every user's latest position.
type Check struct {
	At        time.Time `json:"at"`
	Compared  int       `json:"compared"`
	Wrong     int       `json:"wrong"`
	Waiting   int       `json:"waiting"`
	FirstDiff string    `json:"first_diff,omitempty"`
}

// Sample is the room's status at one moment.
type Sample struct {
	T        float64 `json:"t"`
	Waiting  int     `json:"waiting"`
	Active   int     `json:"active"`
	Joined   int     `json:"joined"`
	Entrants int     `json:"entrants,omitempty"`
	// Updates is how many stream updates the crowd had received by then
	// (as its workers last reported, once a second).
	Updates int64 `json:"updates,omitempty"`
}

// Percentiles summarise a distribution.
type Percentiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func percentiles(v []float64) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	slices.Sort(v)
	at := func(q float64) float64 { return v[min(len(v)-1, int(q*float64(len(v))))] }
	return Percentiles{N: len(v), P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: v[len(v)-1]}
}

// worker is the coordinator's end of one worker.
type worker struct {
	stdin    io.WriteCloser
	lines    chan line
	wait     func() error
	mu       sync.Mutex
	count    int   // users joined so far
	admitted int   // users admitted so far
	updates  int64 // stream updates received so far
}

// progress records a worker's progress line.
func (w *worker) progress(l line) {
	w.mu.Lock()
	w.count, w.admitted, w.updates = l.Count, l.Admit, l.Upd
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
	rep := &Report{Config: cfg, Started: started, Users: cfg.Users}
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

	// Sample the room while the crowd plays.
	var seriesMu sync.Mutex
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
				continue
			}
			seriesMu.Lock()
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
	if opt.AdminToken != "" && ctx.Err() == nil && !checkable() {
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
	if rep.Drop != nil && time.Now().After(opensAt) {
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
	if rep.Drop != nil {
		summariseDrop(rep, draw, drawErr)
	}
	return rep, nil
}

// roomState is the public room status.
type roomState struct {
	Capacity int       `json:"capacity"`
	Active   int       `json:"active"`
	Waiting  int       `json:"waiting"`
	Paused   bool      `json:"paused"`
	OpensAt  time.Time `json:"opens_at"`
	Entrants int       `json:"entrants"`
}

func roomStatus(ctx context.Context, c *http.Client, base, room string) (roomState, error) {
	var st roomState
	err := getJSON(ctx, c, base+"/v1/rooms/"+room, "", &st)
	return st, err
}

func getJSON(ctx context.Context, c *http.Client, url, token string, v any) error {
	return doJSON(ctx, c, "GET", url, token, nil, v)
}

func doJSON(ctx context.Context, c *http.Client, method, url, token string, body []byte, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, bytes.TrimSpace(b))
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(b, v)
}

// check freezes the crowd and the room, waits opt.Settle for updates to
// arrive, and compares every user's latest view with the server's line.
func check(ctx context.Context, opt Options, cfg Config, workers []*worker) (Check, error) {
	base := cfg.Targets[0]
	for _, w := range workers {
		if err := w.send(cmdFreeze); err != nil {
			return Check{}, err
		}
		if _, err := w.expect(ctx, "ack"); err != nil {
			return Check{}, err
		}
	}
	defer func() {
		for _, w := range workers {
			if w.send(cmdThaw) == nil {
				_, _ = w.expect(ctx, "ack")
			}
		}
	}()
	room, err := fullRoom(ctx, opt, base, cfg.Room)
	if err != nil {
		return Check{}, err
	}
	// Users' own requests in flight finish within the freeze's first
	// moments; pausing stops admissions, so the line holds still.
	paused := room.RoomConfig
	paused.Paused = true
	put := func(c waitroom.RoomConfig) error {
		b, _ := json.Marshal(c)
		return doJSON(ctx, opt.Client, "PUT", base+"/v1/rooms/"+cfg.Room, opt.AdminToken, b, nil)
	}
	if !room.Paused {
		if err := put(paused); err != nil {
			return Check{}, err
		}
		defer put(room.RoomConfig)
	}
	time.Sleep(200 * time.Millisecond) // in-flight user requests land
	truth, err := readLine(ctx, opt, base, cfg.Room)
	if err != nil {
		return Check{}, err
	}
	settle := opt.Settle
	if settle <= 0 {
		settle = 7 * time.Second
	}
	time.Sleep(settle) // the delivery window
	// The line must not have moved while we waited.
	again, err := readLine(ctx, opt, base, cfg.Room)
	if err != nil {
		return Check{}, err
	}
	if !sameLine(truth, again) {
		return Check{}, fmt.Errorf("the line moved while frozen (%d then %d waiting)", len(truth), len(again))
	}
	c := Check{At: time.Now(), Waiting: len(truth)}
	for _, w := range workers {
		if err := w.send(cmdSnap); err != nil {
			return Check{}, err
		}
		l, err := w.expect(ctx, "snap")
		if err != nil {
			return Check{}, err
		}
		for _, s := range l.Snap {
			ticket, pos, st := s[0], s[1], s[2]
			want, waiting := truth[ticket]
			c.Compared++
			// Checks run only after any draw reached the crowd: an entrant
			// still without a ticket (st == snapEntrant) is wrong.
			ok := (st == snapWaiting && waiting && pos == want) || (st != snapWaiting && st != snapEntrant && !waiting)
			if !ok {
				c.Wrong++
				if c.FirstDiff == "" && st == snapEntrant {
					c.FirstDiff = "a user still sees the pre-queue (no ticket) after the draw"
				} else if c.FirstDiff == "" {
					c.FirstDiff = fmt.Sprintf("ticket %d: user sees status code %d position %d, server has waiting=%v position %d", ticket, st, pos, waiting, want)
				}
			}
		}
	}
	return c, nil
}

func sameLine(a, b map[int64]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// readLine reads the whole waiting line: ticket → position.
func readLine(ctx context.Context, opt Options, base, room string) (map[int64]int64, error) {
	out := map[int64]int64{}
	after := ""
	for {
		var page struct {
			Sessions []waitroom.Session `json:"sessions"`
			Next     string             `json:"next"`
		}
		url := base + "/v1/rooms/" + room + "/waiting?limit=1000"
		if after != "" {
			url += "&after=" + after
		}
		if err := getJSON(ctx, opt.Client, url, opt.AdminToken, &page); err != nil {
			return nil, err
		}
		for _, s := range page.Sessions {
			out[s.Ticket] = s.Position
		}
		if page.Next == "" {
			return out, nil
		}
		after = page.Next
	}
}

// lineAdmission is the admission of someone who waited in line (times in
// unix milliseconds; Seen by the person's clock, the rest by the server's).
type lineAdmission struct{ Ticket, Joined, Admitted, Seen int64 }

// slotDelays pairs freed slots with the admissions from the line that
// filled them: slots fill in the order they free, so the admissions, in
// the order they happened, take the earliest slot freed no later than
// themselves. A slot that freed before the person joined went to someone
// who walked straight in, and is passed over; an admission with no slot
// freed before it came from a slot the crowd never saw end (an abandoned
// session timing out, a capacity raise) and is left out. It returns, per
// pair, the time until the person saw the admission and the server's part
// of it, in milliseconds.
func slotDelays(frees []int64, adms []lineAdmission) (seen, server []float64) {
	frees = slices.Clone(frees)
	slices.Sort(frees)
	adms = slices.Clone(adms)
	slices.SortFunc(adms, func(a, b lineAdmission) int {
		if a.Admitted != b.Admitted {
			return cmp.Compare(a.Admitted, b.Admitted)
		}
		return cmp.Compare(a.Ticket, b.Ticket)
	})
	i := 0
	for _, a := range adms {
		for i < len(frees) && frees[i] < a.Joined {
			i++
		}
		if i == len(frees) || frees[i] > a.Admitted {
			continue
		}
		seen = append(seen, float64(max(0, a.Seen-frees[i])))
		server = append(server, float64(a.Admitted-frees[i]))
		i++
	}
	return seen, server
}

// summarise fills the report's totals from the users' results.
func summarise(rep *Report) {
	var joins, delays, etaErr []float64
	tickets := map[int64]int{}
	type adm struct{ ticket, at int64 }
	var admitted []adm
	var frees []int64
	var fromLine []lineAdmission
	for _, u := range rep.UsersDetail {
		if u.FreedAt != 0 {
			frees = append(frees, u.FreedAt)
		}
		if u.AdmittedAt > u.JoinedAt && u.JoinedAt != 0 && u.AdmitSeenAt != 0 {
			fromLine = append(fromLine, lineAdmission{Ticket: u.Ticket, Joined: u.JoinedAt, Admitted: u.AdmittedAt, Seen: u.AdmitSeenAt})
		}
		// An entrant of a pre-queue joined without a ticket; it has one
		// once the draw reached it.
		if u.JoinError != "" || u.JoinedAt == 0 {
			rep.JoinErrors++
			if u.JoinError != "" && len(rep.Errors) < 20 {
				rep.Errors = append(rep.Errors, "join: "+u.JoinError)
			}
			continue
		}
		rep.Joined++
		if u.Ticket != 0 {
			tickets[u.Ticket]++
		}
		joins = append(joins, float64(u.JoinMicros)/1000)
		if u.AdmittedAt != 0 {
			rep.Admitted++
			admitted = append(admitted, adm{u.Ticket, u.AdmittedAt})
			if u.AdmitSeenAt != 0 {
				delays = append(delays, float64(max(0, u.AdmitSeenAt-u.AdmittedAt)))
			}
			if u.FirstETAAt != 0 {
				predicted := u.FirstETAAt + u.FirstETA*1000
				d := float64(u.AdmittedAt-predicted) / 1000
				etaErr = append(etaErr, max(d, -d))
			}
		}
		// A leave's answer can be cut off when the person's own stream
		// reports the end first (that ends the person's requests); the
		// status the stream saw still says the person left.
		if u.Left || (u.Final == string(waitroom.StatusLeft) && !u.Abandoned) {
			rep.Left++
		}
		if u.Abandoned {
			rep.Abandoned++
		}
		if u.Lost {
			rep.Lost++
		}
		rep.Reconnects += u.Reconnects
		rep.Updates += u.Updates
		rep.PositionUps += u.PosUps
	}
	for _, n := range tickets {
		if n > 1 {
			rep.DuplicateTickets += n - 1
		}
	}
	rep.JoinMillis = percentiles(joins)
	rep.AdmitDelayMillis = percentiles(delays)
	seen, server := slotDelays(frees, fromLine)
	rep.SlotMillis, rep.SlotServerMillis = percentiles(seen), percentiles(server)
	rep.ETAErrorSeconds = percentiles(etaErr)
	rep.ETASamples = len(etaErr)
	// Fairness: order admissions by time (ties by ticket, so equal times
	// never count) and count pairs whose tickets are out of order.
	slices.SortFunc(admitted, func(a, b adm) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return int(a.ticket - b.ticket)
	})
	seq := make([]int64, len(admitted))
	for i, a := range admitted {
		seq[i] = a.ticket
	}
	rep.Inversions = inversions(seq)
	at := make([]int64, len(admitted))
	for i, a := range admitted {
		at[i] = a.at
	}
	rep.Admissions = perSecond(rep.Started, rep.Seconds, at)
	if n := int64(len(seq)); n > 1 {
		rep.KendallTau = float64(rep.Inversions) / float64(n*(n-1)/2)
	}
}

// inversions counts pairs i < j with v[i] > v[j], in O(n log n).
func inversions(v []int64) int64 {
	if len(v) < 2 {
		return 0
	}
	mid := len(v) / 2
	left, right := slices.Clone(v[:mid]), slices.Clone(v[mid:])
	n := inversions(left) + inversions(right)
	i, j, k := 0, 0, 0
	for i < len(left) && j < len(right) {
		if left[i] <= right[j] {
			v[k] = left[i]
			i++
		} else {
			v[k] = right[j]
			j++
			n += int64(len(left) - i)
		}
		k++
	}
	for ; i < len(left); i++ {
		v[k] = left[i]
		k++
	}
	for ; j < len(right); j++ {
		v[k] = right[j]
		k++
	}
	return n
}
