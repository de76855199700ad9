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
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
)

// The end-to-end crash test: a real waitroom binary on the embedded SQLite
// store is killed with SIGKILL while joins and leaves are in flight, then
// restarted on the same data. Every join the server acknowledged must still
// be there, with its ticket, and with the status and position the room's
// rules give it; tickets issued after the restart must be above every
// earlier one.

const (
	crashCycles   = 3
	crashWorkers  = 8
	joinsPerCycle = 80 // acknowledged joins before the kill, per cycle
	crashCapacity = 5
	crashRoom     = waitroom.DefaultRoom
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

// leaveState is what the test knows about a leave of one session.
type leaveState int

const (
	noLeave       leaveState = iota
	leaveUnsure              // sent, but the answer was lost in the crash
	leaveAnswered            // the server answered: the session has left
)

// tracked is one acknowledged join.
type tracked struct {
	id       string
	ticket   int64
	joinedAs waitroom.Status
	leave    leaveState
	// status is the latest status the server reported for it.
	status waitroom.Status
}

// ledger records everything the server acknowledged, across cycles.
type ledger struct {
	mu       sync.Mutex
	sessions map[string]*tracked
	problems []string
	// acked counts acknowledged joins in the current cycle.
	acked atomic.Int64
}

func (l *ledger) problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.problems) < 20 {
		l.problems = append(l.problems, fmt.Sprintf(format, args...))
	}
}

func (l *ledger) joined(s waitroom.Session) *tracked {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.sessions {
		if o.ticket == s.Ticket {
			l.problems = append(l.problems, fmt.Sprintf("ticket %d issued twice (%s and %s)", s.Ticket, o.id, s.ID))
		}
	}
	tr := &tracked{id: s.ID, ticket: s.Ticket, joinedAs: s.Status, status: s.Status}
	l.sessions[s.ID] = tr
	l.acked.Add(1)
	return tr
}

func (l *ledger) setLeave(tr *tracked, st leaveState) {
	l.mu.Lock()
	tr.leave = st
	l.mu.Unlock()
}

func (l *ledger) all() []*tracked {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*tracked, 0, len(l.sessions))
	for _, tr := range l.sessions {
		out = append(out, tr)
	}
	slices.SortFunc(out, func(a, b *tracked) int { return int(a.ticket - b.ticket) })
	return out
}

func (l *ledger) maxTicket() int64 {
	var m int64
	for _, tr := range l.all() {
		m = max(m, tr.ticket)
	}
	return m
}

// isAPIError reports whether err is an answer from the server, as opposed
// to a transport failure (the process is gone).
func isAPIError(err error) bool {
	var we *waitroom.Error
	return errors.As(err, &we)
}

// worker joins, and now and then leaves one of its own sessions, until
// stop is closed or the server goes away. It reports problems to the
// ledger, never to t.
func worker(c *client.Client, l *ledger, seed uint64, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var mine []*tracked // live, no leave sent
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		if i%3 == 2 && len(mine) > 0 {
			k := rng.IntN(len(mine))
			tr := mine[k]
			mine = slices.Delete(mine, k, k+1)
			l.setLeave(tr, leaveUnsure)
			s, err := c.Leave(ctx, crashRoom, tr.id)
			cancel()
			switch {
			case err == nil:
				if s.Status != waitroom.StatusLeft || s.Ticket != tr.ticket {
					l.problem("leave of ticket %d answered status %s ticket %d, want left %d", tr.ticket, s.Status, s.Ticket, tr.ticket)
				}
				l.setLeave(tr, leaveAnswered)
			case isAPIError(err):
				l.problem("leave of ticket %d: %v", tr.ticket, err)
			default:
				return // the server is gone; the leave may or may not have landed
			}
			continue
		}
		s, err := c.Join(ctx, crashRoom, "")
		cancel()
		switch {
		case err == nil:
			if s.Status != waitroom.StatusActive && s.Status != waitroom.StatusWaiting {
				l.problem("join answered status %s, want active or waiting", s.Status)
			}
			mine = append(mine, l.joined(s))
		case isAPIError(err):
			l.problem("join: %v", err)
		default:
			return // the server is gone; the join may or may not have landed
		}
	}
}

func newCrashClient(url, token string) *client.Client {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: crashWorkers * 2}}
	return client.New(url, client.WithAdminToken(token), client.WithHTTPClient(hc))
}

func TestCrashKeepsEveryAcknowledgedJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real server; skipped with -short")
	}
	start := time.Now()
	bin := buildBinary(t)
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Millisecond))
	data := t.TempDir()

	p := startProcess(t, bin, data)
	raw, err := os.ReadFile(filepath.Join(data, "admin-token"))
	if err != nil {
		t.Fatalf("admin token file: %v", err)
	}
	token := strings.TrimSpace(string(raw))
	c := newCrashClient(p.url, token)

	// No timeouts: statuses change only by joins, leaves and the admissions
	// they cause, so the test can say exactly what each session must be.
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = crashCapacity
	cfg.ActiveTimeout, cfg.WaitingTimeout, cfg.MaxSession = 0, 0, 0
	if _, _, err := c.PutRoom(ctx(t), crashRoom, cfg); err != nil {
		t.Fatalf("configure room: %v", err)
	}

	l := &ledger{sessions: make(map[string]*tracked)}
	for cycle := 1; cycle <= crashCycles; cycle++ {
		l.acked.Store(0)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range crashWorkers {
			wg.Go(func() { worker(c, l, uint64(cycle*100+w), stop) })
		}
		deadline := time.Now().Add(30 * time.Second)
		for l.acked.Load() < joinsPerCycle && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // polling the load generator, not waiting for expiry
		}
		if n := l.acked.Load(); n < joinsPerCycle {
			close(stop)
			wg.Wait()
			t.Fatalf("cycle %d: only %d joins acknowledged in 30s, want %d; stderr:\n%s", cycle, n, joinsPerCycle, p.stderr.String())
		}
		p.kill(t) // with the workers still sending
		close(stop)
		wg.Wait()
		for _, pr := range l.problems {
			t.Errorf("cycle %d: %s", cycle, pr)
		}
		if t.Failed() {
			t.FailNow()
		}

		p = startProcess(t, bin, data)
		c = newCrashClient(p.url, token)
		verifyAfterCrash(t, c, l, cycle)
		if t.Failed() {
			t.Fatalf("cycle %d failed; server stderr:\n%s", cycle, p.stderr.String())
		}

		// New joins get tickets above every earlier one.
		before := l.maxTicket()
		rooms, err := c.Rooms(ctx(t))
		if err != nil {
			t.Fatalf("Rooms: %v", err)
		}
		var last int64
		for _, r := range rooms {
			if r.Name == crashRoom {
				last = r.LastTicket
			}
		}
		if last < before {
			t.Errorf("cycle %d: room's last ticket %d is below acknowledged ticket %d", cycle, last, before)
		}
		s, err := c.Join(ctx(t), crashRoom, "")
		if err != nil {
			t.Fatalf("join after restart: %v", err)
		}
		if s.Ticket <= last || s.Ticket <= before {
			t.Errorf("cycle %d: join after restart got ticket %d, want above %d (last issued) and %d (last acknowledged)", cycle, s.Ticket, last, before)
		}
		l.joined(s)
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
	t.Logf("%d acknowledged joins over %d kill/restart cycles in %v", len(l.all()), crashCycles, time.Since(start).Round(time.Millisecond))
}

// verifyAfterCrash checks the restarted server against the ledger.
func verifyAfterCrash(t *testing.T, c *client.Client, l *ledger, cycle int) {
	t.Helper()
	// Report the first few mismatches; after a real loss there are hundreds.
	reported := 0
	errorf := func(format string, args ...any) {
		t.Helper()
		reported++
		switch {
		case reported <= 10:
			t.Errorf(format, args...)
		case reported == 11:
			t.Errorf("cycle %d: more mismatches follow; only the first 10 are shown", cycle)
		default:
			t.Fail()
		}
	}
	// Everyone waiting, in order, as the server reports it: this includes
	// joins that landed without their answer reaching the test.
	var waiting []waitroom.Session
	for after := ""; ; {
		page, next, err := c.Waiting(ctx(t), crashRoom, waitroom.Page{After: after, Limit: 100})
		if err != nil {
			t.Fatalf("cycle %d: waiting list: %v", cycle, err)
		}
		waiting = append(waiting, page...)
		if next == "" {
			break
		}
		after = next
	}
	index := make(map[string]int, len(waiting))
	for i, s := range waiting {
		index[s.ID] = i
		if s.Position != int64(i+1) {
			errorf("cycle %d: waiting list entry %d (ticket %d) has position %d, want %d", cycle, i, s.Ticket, s.Position, i+1)
		}
		if i > 0 && s.Ticket <= waiting[i-1].Ticket {
			errorf("cycle %d: waiting list not in ticket order: %d after %d", cycle, s.Ticket, waiting[i-1].Ticket)
		}
	}
	room, err := c.Room(ctx(t), crashRoom)
	if err != nil {
		t.Fatalf("cycle %d: room: %v", cycle, err)
	}
	if room.Waiting != len(waiting) {
		errorf("cycle %d: room says %d waiting, the list has %d", cycle, room.Waiting, len(waiting))
	}
	if room.Active > crashCapacity || (len(waiting) > 0 && room.Active != crashCapacity) {
		errorf("cycle %d: %d active with %d waiting and capacity %d; want min(capacity, live)", cycle, room.Active, len(waiting), crashCapacity)
	}
	// FIFO: everyone older than the first waiting session has been admitted.
	firstWaiting := int64(1 << 62)
	if len(waiting) > 0 {
		firstWaiting = waiting[0].Ticket
	}

	knownLive, unsure := 0, 0
	for _, tr := range l.all() {
		if tr.leave == leaveUnsure {
			unsure++
		}
		s, err := c.Session(ctx(t), crashRoom, tr.id)
		if err != nil {
			errorf("cycle %d: acknowledged join ticket %d (%s) is lost: %v", cycle, tr.ticket, tr.id, err)
			continue
		}
		if s.Ticket != tr.ticket {
			errorf("cycle %d: session %s has ticket %d, want %d", cycle, tr.id, s.Ticket, tr.ticket)
		}
		switch {
		case tr.leave == leaveAnswered:
			if s.Status != waitroom.StatusLeft || s.EndReason != waitroom.ReasonLeft {
				errorf("cycle %d: ticket %d left (acknowledged) but is %s/%s", cycle, tr.ticket, s.Status, s.EndReason)
			}
			continue
		case tr.leave == leaveUnsure && s.Status == waitroom.StatusLeft:
			continue // the leave landed before the crash
		}
		knownLive++
		want := waitroom.StatusWaiting
		if tr.ticket < firstWaiting {
			want = waitroom.StatusActive
		}
		if s.Status != want {
			errorf("cycle %d: ticket %d is %s, want %s (first waiting ticket %d)", cycle, tr.ticket, s.Status, want, firstWaiting)
			continue
		}
		if (tr.joinedAs == waitroom.StatusActive || tr.status == waitroom.StatusActive) && s.Status != waitroom.StatusActive {
			errorf("cycle %d: ticket %d was active and is now %s", cycle, tr.ticket, s.Status)
		}
		if want == waitroom.StatusWaiting {
			i, ok := index[tr.id]
			switch {
			case !ok:
				errorf("cycle %d: waiting ticket %d is missing from the waiting list", cycle, tr.ticket)
			case s.Position != int64(i+1):
				errorf("cycle %d: ticket %d has position %d, want %d (its place in the waiting list)", cycle, tr.ticket, s.Position, i+1)
			}
		}
		l.mu.Lock()
		tr.status = s.Status
		l.mu.Unlock()
	}
	// Sessions the test never heard of can only be joins whose answer was
	// lost in a crash: at most one per worker per cycle.
	extra := room.Active + room.Waiting - knownLive
	if extra < 0 || extra > crashWorkers*cycle {
		errorf("cycle %d: server has %d live sessions, the test knows %d; want between 0 and %d more", cycle, room.Active+room.Waiting, knownLive, crashWorkers*cycle)
	}
	t.Logf("cycle %d: after restart %d active, %d waiting; so far %d acknowledged joins (%d live), %d leaves unanswered, %d unacknowledged joins landed",
		cycle, room.Active, room.Waiting, len(l.all()), knownLive, unsure, extra)
}
