package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
	"github.com/waitroom/waitroom/internal/openapi/openapitest"
)

// The end-to-end crash harness: a real waitroom binary on the embedded
// SQLite store runs a sustained mixed load (joins with keys, leaves,
// heartbeats, an operator advancing a manual room and revoking sessions)
// and is killed with SIGKILL at a random moment, then restarted on the same
// data, over and over. After each restart every answer the load client
// received must still be true: an acknowledged join exists with its ticket,
// an acknowledged leave, revoke or advance left the session in the final
// status the answer gave, a session once reported active never waits again.
// Requests whose answer never came (killed mid-request) may have happened
// or not, but only whole. Tickets only increase and the invariants of SPEC
// hold. WAITROOM_CRASH_CYCLES sets the number of kill/restart cycles (20 by
// default; scripts/crash-long.sh runs 100+).

const (
	crashAutoRoom = waitroom.DefaultRoom // auto, capacity crashCapacity
	crashDeskRoom = "desk"               // manual: the operator advances it
	crashCapacity = 5
	crashWorkers  = 8
	// crashSharedKeys is how many keys the desk's joins share, so keyed
	// joins collide and the one-live-session-per-key rule is exercised.
	crashSharedKeys    = 12
	defaultCrashCycles = 20
	// crashMinOps is how many answers each cycle must see before its kill,
	// so every kill lands on a server under load.
	crashMinOps = 40
)

// goTool finds the go command. Outside CI a missing toolchain skips the
// test; under CI=true it fails it.
func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("the go command is not on PATH; the end-to-end test builds the binary with it")
	}
	t.Skip("the go command is not on PATH; install Go to run the end-to-end test")
	return ""
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildDir  string
)

// buildBinary builds cmd/waitroom once per test process.
func buildBinary(t *testing.T) string {
	t.Helper()
	goCmd := goTool(t)
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "waitroom-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		buildDir = dir
		bin := filepath.Join(dir, "waitroom")
		// A plain build: the end-to-end tests run several servers and a
		// crowd at once, and a race-enabled binary is several times slower,
		// which turns timing margins into flakes on a loaded CI machine.
		// The race detector covers the same code in the package tests.
		args := []string{"build", "-o", bin}
		cmd := exec.Command(goCmd, append(args, ".")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		builtBin = bin
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// process is a running waitroom binary.
type process struct {
	cmd            *exec.Cmd
	url            string
	stdout, stderr *syncBuffer
	exited         chan struct{}
	waitErr        error
}

// startProcess starts `waitroom serve` on data (with any extra flags) and
// waits for its address.
func startProcess(t *testing.T, bin, data string, extra ...string) *process {
	t.Helper()
	p := &process{stdout: new(syncBuffer), stderr: new(syncBuffer), exited: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, extra...)...)
	// The server must not pick up WAITROOM_* settings of the machine.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WAITROOM_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	deadline := time.After(30 * time.Second)
	for {
		if m := listeningRE.FindStringSubmatch(p.stdout.String()); m != nil {
			p.url = "http://" + m[1]
			watch(t, p.url, extra)
			return p
		}
		select {
		case <-p.exited:
			t.Fatalf("waitroom exited (%v) before listening; stderr:\n%s", p.waitErr, p.stderr.String())
		case <-deadline:
			t.Fatalf("waitroom did not print its address within 30s; stderr:\n%s", p.stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *process) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL: %v", err)
	}
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("waitroom still running 10s after SIGKILL")
	}
}

// isAPIError reports whether err is an answer from the server, as opposed
// to a transport failure (the process is gone).
func isAPIError(err error) bool {
	var we *waitroom.Error
	return errors.As(err, &we)
}

// startCrashServer starts `waitroom serve` on data with flags, letting it
// make its own admin token, and returns the process and the token.
func startCrashServer(t *testing.T, bin, data string, flags []string) (*process, string) {
	t.Helper()
	p := startProcess(t, bin, data, flags...)
	raw, err := os.ReadFile(filepath.Join(data, "admin-token"))
	if err != nil {
		t.Fatalf("admin token file: %v", err)
	}
	return p, strings.TrimSpace(string(raw))
}

func newCrashClient(url, token string) *client.Client {
	hc := &http.Client{Transport: openapitest.Transport(&http.Transport{MaxIdleConnsPerHost: crashWorkers * 2})}
	return client.New(url, client.WithAdminToken(token), client.WithHTTPClient(hc))
}

var (
	limitFlagsOnce sync.Once
	limitFlags     []string
)

// noJoinLimitFlags returns the serve flags that turn off the per-address
// join limit and caps, when the binary has them: the load tests send
// hundreds of joins a second from one address, which is what that limit is
// there to refuse. The flag is found in `serve --help` (a flag whose name mentions
// "join" and "limit", "rate" or "minute"), so these tests need no change
// when it is renamed. Keyed joins (with the admin token) are never
// limited; keyless ones from one address are.
func noJoinLimitFlags(bin string) []string {
	limitFlagsOnce.Do(func() {
		out, _ := exec.Command(bin, "serve", "--help").CombinedOutput()
		for _, m := range helpFlagRE.FindAllStringSubmatch(string(out), -1) {
			name := m[1]
			if strings.Contains(name, "join") && (strings.Contains(name, "limit") || strings.Contains(name, "rate") || strings.Contains(name, "minute")) {
				limitFlags = append(limitFlags, "--"+name+"=0")
			}
			// The per-address caps on streams and connections too: the
			// whole crowd comes from a few loopback addresses.
			if strings.HasSuffix(name, "-per-address") {
				limitFlags = append(limitFlags, "--"+name+"=0")
			}
		}
	})
	return limitFlags
}

var helpFlagRE = regexp.MustCompile(`(?m)^\s+--([a-z0-9-]+)`)

// crashCycles reads WAITROOM_CRASH_CYCLES.
func crashCycles(t *testing.T) int {
	t.Helper()
	v := os.Getenv("WAITROOM_CRASH_CYCLES")
	if v == "" {
		return defaultCrashCycles
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("WAITROOM_CRASH_CYCLES=%q: want a positive whole number", v)
	}
	return n
}

// crashOp names a kind of operation the load sends.
type crashOp int

const (
	opJoin        crashOp = iota // a new session (201)
	opJoinRefused                // already_joined: the key holds a live session
	opLeave
	opHeartbeat
	opAdvance
	opRevoke
	numCrashOps
)

var crashOpNames = [numCrashOps]string{"join", "join-refused", "leave", "heartbeat", "advance", "revoke"}

// crashEntry is what the answers said about one session.
type crashEntry struct {
	room, id, key string
	ticket        int64
	// joinAcked: the join's own answer arrived. Sessions whose join answer
	// was lost are tracked too, once an answer or a listing shows them.
	joinAcked bool
	// final and reason: the final status an answer reported.
	final  waitroom.Status
	reason waitroom.Reason
	// sawActive: an answer reported it active, so it may never wait again.
	sawActive bool
	// leaveUnsure, revokeUnsure: such a request was sent and its answer
	// never came, so the session may have left, or not.
	leaveUnsure, revokeUnsure bool
}

// crashLedger records every answer the load received, across cycles, and
// what went wrong. The workers report to it, never to t.
type crashLedger struct {
	mu      sync.Mutex
	byID    map[string]*crashEntry
	ids     []string
	tickets map[string]map[int64]string // room → ticket → session id
	// maxTicket is the highest ticket any answer showed, per room.
	maxTicket map[string]int64
	// unsureKeys holds the keys of joins whose answer never came, per room.
	unsureKeys map[string]map[string]bool
	// unsureAdvance sums n over advances whose answer never came, per room.
	unsureAdvance map[string]int
	// unexplainedServed counts sessions found served that no advance
	// answer listed; at most unsureAdvance of them may exist.
	unexplainedServed map[string]int

	acked, unsure [numCrashOps]int64
	served        int64 // sessions the acknowledged advances served
	landed        int   // joins whose answer never came but which happened
	cycleOps      atomic.Int64

	lost, violations int
	notes            []string
}

func newCrashLedger() *crashLedger {
	return &crashLedger{
		byID:              make(map[string]*crashEntry),
		tickets:           make(map[string]map[int64]string),
		maxTicket:         make(map[string]int64),
		unsureKeys:        make(map[string]map[string]bool),
		unsureAdvance:     make(map[string]int),
		unexplainedServed: make(map[string]int),
	}
}

// failLocked records a lost acknowledged operation (lost) or another
// violation. The caller holds l.mu.
func (l *crashLedger) failLocked(lost bool, format string, args ...any) {
	if lost {
		l.lost++
	} else {
		l.violations++
	}
	if len(l.notes) < 20 {
		kind := "violation"
		if lost {
			kind = "lost"
		}
		l.notes = append(l.notes, kind+": "+fmt.Sprintf(format, args...))
	}
}

func (l *crashLedger) fail(lost bool, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failLocked(lost, format, args...)
}

// observeLocked records what one answer said about a session.
func (l *crashLedger) observeLocked(s waitroom.Session) *crashEntry {
	e := l.byID[s.ID]
	if e == nil {
		if s.ID == "" || s.Ticket <= 0 {
			l.failLocked(false, "an answer carried a session without id or ticket: %+v", s)
		}
		if l.tickets[s.Room] == nil {
			l.tickets[s.Room] = make(map[int64]string)
		}
		if other, dup := l.tickets[s.Room][s.Ticket]; dup {
			l.failLocked(false, "room %s issued ticket %d twice (%s and %s)", s.Room, s.Ticket, other, s.ID)
		}
		e = &crashEntry{room: s.Room, id: s.ID, ticket: s.Ticket, key: s.Key}
		l.byID[s.ID] = e
		l.ids = append(l.ids, s.ID)
		l.tickets[s.Room][s.Ticket] = s.ID
		l.maxTicket[s.Room] = max(l.maxTicket[s.Room], s.Ticket)
	} else if e.ticket != s.Ticket || e.room != s.Room {
		l.failLocked(false, "session %s was ticket %d of %s, now answered as ticket %d of %s", s.ID, e.ticket, e.room, s.Ticket, s.Room)
	}
	switch {
	case s.Status.Final():
		if e.final != "" && (e.final != s.Status || e.reason != s.EndReason) {
			l.failLocked(false, "ticket %d of %s ended as %s/%s, then was answered as %s/%s", e.ticket, e.room, e.final, e.reason, s.Status, s.EndReason)
		}
		e.final, e.reason = s.Status, s.EndReason
	case s.Status == waitroom.StatusActive:
		e.sawActive = true
	}
	// Room totals in an answer: the auto room is never advanced, so its
	// active count never exceeds its capacity.
	if s.Room == crashAutoRoom && s.Active > s.Capacity {
		l.failLocked(false, "an answer shows %d active in room %s of capacity %d", s.Active, s.Room, s.Capacity)
	}
	return e
}

func (l *crashLedger) answered(op crashOp) {
	l.acked[op]++
	l.cycleOps.Add(1)
}

// crashLoad is one cycle's load against one server.
type crashLoad struct {
	l     *crashLedger
	c     *client.Client
	cycle int
	stop  <-chan struct{}
}

// join sends a keyed join. created says the answer was a new session (as
// opposed to already_joined); ok is false when the answer never came (the
// server is gone).
func (cl *crashLoad) join(room, key string) (e *crashEntry, created, ok bool) {
	l := cl.l
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cl.c.Join(ctx, room, key)
	l.mu.Lock()
	defer l.mu.Unlock()
	var we *waitroom.Error
	switch {
	case err == nil:
		l.answered(opJoin)
		e = l.observeLocked(s)
		e.joinAcked = true
		if s.Room != room || s.Key != key {
			l.failLocked(false, "join of %s with key %q answered room %s key %q", room, key, s.Room, s.Key)
		}
		if s.Status != waitroom.StatusWaiting && (room == crashDeskRoom || s.Status != waitroom.StatusActive) {
			l.failLocked(false, "join of %s answered status %s", room, s.Status)
		}
		return e, true, true
	case waitroom.ErrorCode(err) == waitroom.CodeAlreadyJoined && errors.As(err, &we):
		l.answered(opJoinRefused)
		if we.Session == nil {
			l.failLocked(false, "already_joined for key %q without the live session", key)
			return nil, false, true
		}
		e = l.observeLocked(*we.Session)
		if !we.Session.Status.Live() || we.Session.Key != key {
			l.failLocked(false, "already_joined for key %q carried a %s session with key %q", key, we.Session.Status, we.Session.Key)
		}
		return e, false, true
	case isAPIError(err):
		l.failLocked(false, "join of %s: %v", room, err)
		return nil, false, true
	}
	l.unsure[opJoin]++
	if l.unsureKeys[room] == nil {
		l.unsureKeys[room] = make(map[string]bool)
	}
	l.unsureKeys[room][key] = true
	return nil, false, false
}

// end sends a leave (or, with revoke, an operator's revoke) of e.
func (cl *crashLoad) end(e *crashEntry, revoke bool) bool {
	l := cl.l
	op := opLeave
	l.mu.Lock()
	if revoke {
		op = opRevoke
		e.revokeUnsure = true
	} else {
		e.leaveUnsure = true
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var s waitroom.Session
	var err error
	if revoke {
		s, err = cl.c.Revoke(ctx, e.room, e.id)
	} else {
		s, err = cl.c.Leave(ctx, e.room, e.id)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.answered(op)
		l.observeLocked(s)
		if !s.Status.Final() {
			l.failLocked(false, "%s of ticket %d answered status %s", crashOpNames[op], e.ticket, s.Status)
		}
		return true
	case isAPIError(err):
		l.failLocked(false, "%s of ticket %d: %v", crashOpNames[op], e.ticket, err)
		return true
	}
	l.unsure[op]++
	return false
}

func (cl *crashLoad) heartbeat(e *crashEntry) bool {
	l := cl.l
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cl.c.Heartbeat(ctx, e.room, e.id)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.answered(opHeartbeat)
		l.observeLocked(s)
		return true
	case isAPIError(err):
		l.failLocked(false, "heartbeat of ticket %d: %v", e.ticket, err)
		return true
	}
	l.unsure[opHeartbeat]++
	return false
}

func (cl *crashLoad) advance(n int) bool {
	l := cl.l
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ss, err := cl.c.Advance(ctx, crashDeskRoom, n)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.answered(opAdvance)
		l.served += int64(len(ss))
		if len(ss) == 0 || len(ss) > n {
			l.failLocked(false, "advance of %d answered %d sessions", n, len(ss))
		}
		for i, s := range ss {
			l.observeLocked(s)
			if s.Status != waitroom.StatusServed || s.Room != crashDeskRoom {
				l.failLocked(false, "advance answered ticket %d of %s as %s, want served", s.Ticket, s.Room, s.Status)
			}
			if i > 0 && s.Ticket <= ss[i-1].Ticket {
				l.failLocked(false, "advance served ticket %d after %d, want ticket order", s.Ticket, ss[i-1].Ticket)
			}
		}
		return true
	case waitroom.ErrorCode(err) == waitroom.CodeQueueEmpty:
		l.answered(opAdvance)
		return true
	case isAPIError(err):
		l.failLocked(false, "advance: %v", err)
		return true
	}
	l.unsure[opAdvance]++
	l.unsureAdvance[crashDeskRoom] += n
	return false
}

func (cl *crashLoad) stopped() bool {
	select {
	case <-cl.stop:
		return true
	default:
		return false
	}
}

// worker plays one visitor program: keyed joins to both rooms, heartbeats
// and leaves of its own sessions, until stop or until the server is gone.
func (cl *crashLoad) worker(w int, rng *rand.Rand) {
	var mine []*crashEntry // joined by this worker, no leave sent
	for n := 0; !cl.stopped(); n++ {
		r := rng.IntN(100)
		if len(mine) == 0 {
			r %= 50
		}
		ok := true
		switch {
		case r < 30:
			var e *crashEntry
			var created bool
			e, created, ok = cl.join(crashAutoRoom, fmt.Sprintf("a%d-%d-%d", cl.cycle, w, n))
			if created {
				mine = append(mine, e)
			}
		case r < 50:
			key := fmt.Sprintf("d%d-%d-%d", cl.cycle, w, n)
			if rng.IntN(2) == 0 {
				key = fmt.Sprintf("k%d", rng.IntN(crashSharedKeys))
			}
			var e *crashEntry
			var created bool
			e, created, ok = cl.join(crashDeskRoom, key)
			if created {
				mine = append(mine, e)
			}
		case r < 72:
			ok = cl.heartbeat(mine[rng.IntN(len(mine))])
		default:
			k := rng.IntN(len(mine))
			e := mine[k]
			mine = slices.Delete(mine, k, k+1)
			ok = cl.end(e, false)
		}
		if !ok {
			return
		}
	}
}

// operator advances the desk and revokes sessions at random.
func (cl *crashLoad) operator(rng *rand.Rand) {
	for !cl.stopped() {
		var ok bool
		if rng.IntN(100) < 65 {
			ok = cl.advance(1 + rng.IntN(3))
		} else {
			cl.l.mu.Lock()
			var e *crashEntry
			for range 8 {
				if len(cl.l.ids) == 0 {
					break
				}
				if c := cl.l.byID[cl.l.ids[rng.IntN(len(cl.l.ids))]]; c.final == "" {
					e = c
					break
				}
			}
			cl.l.mu.Unlock()
			if e == nil {
				continue
			}
			ok = cl.end(e, true)
		}
		if !ok {
			return
		}
	}
}

func TestCrashMixedLoadKeepsEveryAcknowledgedOperation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real server many times; skipped with -short")
	}
	cycles := crashCycles(t)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("WAITROOM_CRASH_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("WAITROOM_CRASH_SEED=%q: %v", v, err)
		}
		seed = s
	}
	t.Logf("seed %d (WAITROOM_CRASH_SEED=%d repeats the kill moments and the load's choices)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	start := time.Now()
	bin := buildBinary(t)
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Millisecond))
	data := t.TempDir()
	flags := noJoinLimitFlags(bin)
	p, token := startCrashServer(t, bin, data, flags)
	c := newCrashClient(p.url, token)

	// No timeouts: statuses change only through the load's own requests
	// and the admissions they cause, so the test can say exactly what each
	// session must be after a restart.
	auto := waitroom.DefaultConfig()
	auto.Capacity = crashCapacity
	auto.ActiveTimeout, auto.WaitingTimeout, auto.MaxSession = 0, 0, 0
	if _, _, err := c.PutRoom(ctx(t), crashAutoRoom, auto); err != nil {
		t.Fatalf("configure room %s: %v", crashAutoRoom, err)
	}
	desk := auto
	desk.Mode = waitroom.ModeManual
	if _, _, err := c.PutRoom(ctx(t), crashDeskRoom, desk); err != nil {
		t.Fatalf("configure room %s: %v", crashDeskRoom, err)
	}

	l := newCrashLedger()
	var restarts []time.Duration
	var loadTime time.Duration
	for cycle := 1; cycle <= cycles; cycle++ {
		stop := make(chan struct{})
		cl := &crashLoad{l: l, c: c, cycle: cycle, stop: stop}
		l.cycleOps.Store(0)
		var wg sync.WaitGroup
		for w := range crashWorkers {
			wrng := rand.New(rand.NewPCG(seed, uint64(cycle*100+w)))
			wg.Go(func() { cl.worker(w, wrng) })
		}
		orng := rand.New(rand.NewPCG(seed, uint64(cycle*100+99)))
		wg.Go(func() { cl.operator(orng) })

		// The kill comes at a random moment 150–800 ms into the load, and
		// never before the load is well under way.
		loadStart := time.Now()
		time.Sleep(time.Duration(150+rng.IntN(650)) * time.Millisecond)
		for deadline := time.Now().Add(30 * time.Second); l.cycleOps.Load() < crashMinOps && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond) // polling the load, not waiting for expiry
		}
		if n := l.cycleOps.Load(); n < crashMinOps {
			close(stop)
			wg.Wait()
			t.Fatalf("cycle %d: only %d answers in 30s, want %d; stderr:\n%s", cycle, n, crashMinOps, p.stderr.String())
		}
		p.kill(t) // with the load still sending
		loadTime += time.Since(loadStart)
		close(stop)
		wg.Wait()

		restart := time.Now()
		p = startProcess(t, bin, data, flags...)
		c = newCrashClient(p.url, token)
		waitReady(t, c, 30*time.Second)
		restarts = append(restarts, time.Since(restart))

		verifyCrash(t, c, l, cycle)
		l.mu.Lock()
		bad := l.lost + l.violations
		notes := slices.Clone(l.notes)
		l.mu.Unlock()
		if bad > 0 {
			for _, n := range notes {
				t.Errorf("%s", n)
			}
			t.Fatalf("cycle %d: %d lost, %d violations so far (first %d shown); server stderr:\n%s", cycle, l.lost, l.violations, len(notes), p.stderr.String())
		}
	}

	// SIGTERM shuts the last server down cleanly.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-p.exited:
		if p.waitErr != nil {
			t.Errorf("after SIGTERM waitroom exited with %v, want status 0; stderr:\n%s", p.waitErr, p.stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Errorf("waitroom still running 15s after SIGTERM")
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	var acked, unsure []string
	for op := range numCrashOps {
		acked = append(acked, fmt.Sprintf("%s %d", crashOpNames[op], l.acked[op]))
		unsure = append(unsure, fmt.Sprintf("%s %d", crashOpNames[op], l.unsure[op]))
	}
	slices.Sort(restarts)
	t.Logf("crash summary: %d SIGKILL cycles, %d sessions tracked; acknowledged: %s (advances served %d sessions); "+
		"unanswered (killed mid-request): %s, of which %d joins had landed; lost %d; violations %d; "+
		"restart to ready p50 %v max %v; load %v; total %v",
		cycles, len(l.byID), strings.Join(acked, ", "), l.served, strings.Join(unsure, ", "), l.landed,
		l.lost, l.violations, restarts[len(restarts)/2].Round(time.Millisecond), restarts[len(restarts)-1].Round(time.Millisecond),
		loadTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// waitReady polls /readyz until it answers 200.
func waitReady(t *testing.T, c *client.Client, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ready(rctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready within %v: %v", within, err)
		}
		time.Sleep(5 * time.Millisecond) // polling readiness
	}
}

// listAll reads every page of a listing.
func listAll(t *testing.T, list func(waitroom.Page) ([]waitroom.Session, string, error)) []waitroom.Session {
	t.Helper()
	var all []waitroom.Session
	for after := ""; ; {
		page, next, err := list(waitroom.Page{After: after, Limit: waitroom.MaxPageLimit})
		if err != nil {
			t.Fatalf("listing: %v", err)
		}
		all = append(all, page...)
		if next == "" {
			return all
		}
		after = next
	}
}

// verifyCrash checks the restarted server against everything the load was
// told, and the invariants, and records the outcome in l.
func verifyCrash(t *testing.T, c *client.Client, l *crashLedger, cycle int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()

	// Tickets survive: each room's last ticket is at least every ticket
	// an answer showed.
	rooms, err := c.Rooms(ctx(t))
	if err != nil {
		t.Fatalf("cycle %d: rooms: %v", cycle, err)
	}
	lastTicket := map[string]int64{}
	for _, r := range rooms {
		lastTicket[r.Name] = r.LastTicket
	}
	for _, room := range []string{crashAutoRoom, crashDeskRoom} {
		if lastTicket[room] < l.maxTicket[room] {
			l.failLocked(true, "cycle %d: room %s's last ticket is %d after the restart, below ticket %d an answer showed", cycle, room, lastTicket[room], l.maxTicket[room])
		}
	}

	// Joins whose answer was lost in the auto room: join again with the
	// same key. already_joined means the lost join happened (and now we
	// know its session); a new session means it did not. Either way the
	// auto room then has no session the test does not know.
	cl := &crashLoad{l: l, c: c, cycle: cycle}
	l.mu.Unlock()
	for key := range l.unsureKeys[crashAutoRoom] {
		e, created, ok := cl.join(crashAutoRoom, key)
		if !ok {
			l.mu.Lock()
			t.Fatalf("cycle %d: join after the restart got no answer", cycle)
		}
		if e != nil && !created {
			l.mu.Lock()
			l.landed++
			l.mu.Unlock()
		}
	}
	// Tickets only increase: a join in each room after the restart gets a
	// ticket above every earlier one.
	for _, room := range []string{crashAutoRoom, crashDeskRoom} {
		e, created, ok := cl.join(room, fmt.Sprintf("probe-%d-%s", cycle, room))
		l.mu.Lock()
		switch {
		case !ok:
			t.Fatalf("cycle %d: probe join in %s got no answer", cycle, room)
		case !created:
			l.failLocked(true, "cycle %d: a join in %s after the restart was refused (the room is gone?)", cycle, room)
			return
		case e.ticket <= lastTicket[room]:
			l.failLocked(false, "cycle %d: join after the restart got ticket %d in %s, want above %d (the last ticket issued before the kill)", cycle, e.ticket, room, lastTicket[room])
		}
		l.mu.Unlock()
	}
	l.mu.Lock()
	delete(l.unsureKeys, crashAutoRoom)

	state := make(map[string]waitroom.Session)
	liveKeys := make(map[string]string) // room/key → id
	for _, room := range []string{crashAutoRoom, crashDeskRoom} {
		waiting := listAll(t, func(p waitroom.Page) ([]waitroom.Session, string, error) { return c.Waiting(ctx(t), room, p) })
		history := listAll(t, func(p waitroom.Page) ([]waitroom.Session, string, error) { return c.History(ctx(t), room, "", p) })
		rs, err := c.Room(ctx(t), room)
		if err != nil {
			t.Fatalf("cycle %d: room %s: %v", cycle, room, err)
		}
		minWaiting := int64(1 << 62)
		for i, s := range waiting {
			if i == 0 {
				minWaiting = s.Ticket
			}
			if s.Status != waitroom.StatusWaiting || s.Position != int64(i+1) {
				l.failLocked(false, "cycle %d: %s waiting list entry %d (ticket %d) is %s at position %d, want waiting at %d", cycle, room, i, s.Ticket, s.Status, s.Position, i+1)
			}
			if i > 0 && s.Ticket <= waiting[i-1].Ticket {
				l.failLocked(false, "cycle %d: %s waiting list not in ticket order: %d after %d", cycle, room, s.Ticket, waiting[i-1].Ticket)
			}
		}
		if rs.Waiting != len(waiting) {
			l.failLocked(false, "cycle %d: room %s counts %d waiting, its list has %d", cycle, room, rs.Waiting, len(waiting))
		}
		for _, s := range slices.Concat(waiting, history) {
			if o, dup := state[s.ID]; dup {
				l.failLocked(false, "cycle %d: ticket %d of %s is listed twice, as %s and %s", cycle, s.Ticket, room, o.Status, s.Status)
			}
			if s.Room != room {
				l.failLocked(false, "cycle %d: %s's lists hold ticket %d of room %s", cycle, room, s.Ticket, s.Room)
			}
			state[s.ID] = s
		}
		for _, s := range history {
			if !s.Status.Final() {
				l.failLocked(false, "cycle %d: %s's history holds ticket %d with status %s", cycle, room, s.Ticket, s.Status)
			}
		}
		// Sessions no answer showed: only joins whose answer was lost.
		for _, s := range slices.Concat(waiting, history) {
			if l.byID[s.ID] != nil {
				continue
			}
			if !l.unsureKeys[room][s.Key] {
				l.failLocked(false, "cycle %d: ticket %d of %s (key %q) exists, but no join with that key lost its answer", cycle, s.Ticket, room, s.Key)
			}
			l.landed++
			l.observeLocked(s)
		}

		active := 0
		for _, id := range l.ids {
			e := l.byID[id]
			if e.room != room {
				continue
			}
			s, ok := state[id]
			if !ok {
				// Active sessions are in neither list; read them.
				s, err = c.Session(ctx(t), room, id)
				switch {
				case err != nil && e.joinAcked:
					l.failLocked(true, "cycle %d: acknowledged join of ticket %d in %s is gone: %v", cycle, e.ticket, room, err)
					continue
				case err != nil:
					l.failLocked(false, "cycle %d: ticket %d in %s, seen before, is gone: %v", cycle, e.ticket, room, err)
					continue
				case s.Status != waitroom.StatusActive:
					l.failLocked(false, "cycle %d: ticket %d in %s is %s but not in the %s list", cycle, e.ticket, room, s.Status, map[bool]string{true: "waiting", false: "history"}[s.Status == waitroom.StatusWaiting])
				}
				state[id] = s
			}
			if s.Ticket != e.ticket {
				l.failLocked(true, "cycle %d: session %s has ticket %d, want %d", cycle, id, s.Ticket, e.ticket)
			}
			if s.Key != e.key {
				l.failLocked(false, "cycle %d: ticket %d in %s has key %q, want %q", cycle, e.ticket, room, s.Key, e.key)
			}
			if s.Status.Live() && s.Key != "" {
				if other, dup := liveKeys[room+"/"+s.Key]; dup {
					l.failLocked(false, "cycle %d: key %q has two live sessions in %s (%s and %s)", cycle, s.Key, room, other, id)
				}
				liveKeys[room+"/"+s.Key] = id
			}
			// FIFO: nobody was admitted or served past a waiting session.
			if (s.Status == waitroom.StatusServed || !s.AdmittedAt.IsZero()) && s.Ticket > minWaiting {
				l.failLocked(false, "cycle %d: ticket %d in %s was admitted (%s) while ticket %d waits", cycle, s.Ticket, room, s.Status, minWaiting)
			}
			switch {
			case e.final != "":
				if s.Status != e.final || s.EndReason != e.reason {
					l.failLocked(true, "cycle %d: ticket %d in %s was answered %s/%s, is now %s/%s", cycle, e.ticket, room, e.final, e.reason, s.Status, s.EndReason)
				}
				continue
			case s.Status.Final():
				// Ended without an answer saying so: only a request whose
				// answer was lost can explain it.
				explained := false
				switch {
				case s.Status == waitroom.StatusLeft && s.EndReason == waitroom.ReasonLeft:
					explained = e.leaveUnsure
				case s.Status == waitroom.StatusLeft && s.EndReason == waitroom.ReasonRevoked:
					explained = e.revokeUnsure
				case s.Status == waitroom.StatusServed:
					l.unexplainedServed[room]++
					explained = l.unexplainedServed[room] <= l.unsureAdvance[room]
				}
				if !explained {
					l.failLocked(false, "cycle %d: ticket %d in %s is %s/%s, which no answer or lost request explains", cycle, e.ticket, room, s.Status, s.EndReason)
				}
				e.final, e.reason = s.Status, s.EndReason // from now on it must stay so
				continue
			}
			if e.sawActive && s.Status != waitroom.StatusActive {
				l.failLocked(true, "cycle %d: ticket %d in %s was answered active and is now %s", cycle, e.ticket, room, s.Status)
			}
			want := waitroom.StatusWaiting
			if room == crashAutoRoom && e.ticket < minWaiting {
				want = waitroom.StatusActive
			}
			if s.Status != want {
				l.failLocked(false, "cycle %d: ticket %d in %s is %s, want %s (first waiting ticket %d)", cycle, e.ticket, room, s.Status, want, minWaiting)
			}
			if s.Status == waitroom.StatusActive {
				e.sawActive = true
				active++
			}
		}
		if room == crashAutoRoom {
			// Every session of the auto room is known now, so the counts
			// must match exactly, and automatic admission fills exactly
			// min(capacity, live) slots.
			if rs.Active != active {
				l.failLocked(false, "cycle %d: room %s counts %d active, the test knows %d", cycle, room, rs.Active, active)
			}
			if rs.Active > crashCapacity || (rs.Waiting > 0 && rs.Active != crashCapacity) {
				l.failLocked(false, "cycle %d: room %s has %d active with %d waiting and capacity %d, want min(capacity, live)", cycle, room, rs.Active, rs.Waiting, crashCapacity)
			}
		} else if rs.Active != 0 {
			l.failLocked(false, "cycle %d: manual room %s counts %d active, want 0", cycle, room, rs.Active)
		}
		if cycle == 1 || cycle%10 == 0 {
			t.Logf("cycle %d: %s has %d active, %d waiting, %d ended", cycle, room, rs.Active, len(waiting), len(history))
		}
	}
}
