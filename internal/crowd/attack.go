package crowd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/challenge"
)

// MaxAttackPeople is the most people an attack run places on their own
// loopback addresses (127.1.0.1 onwards, 250 to a /24).
const MaxAttackPeople = 250 * 256

// attackRequestTimeout bounds every request of an attack run, so a run
// ends even against a server that stopped answering.
const attackRequestTimeout = 30 * time.Second

// AttackConfig is one attack run: People arrive evenly over Window, each
// joining once from its own loopback address and solving a challenge when
// the room asks one, while a bot joins as fast as it can from BotSources.
// The run stops once Stop sessions exist: the first Stop admissions of a
// FIFO room are then decided.
type AttackConfig struct {
	// Target is the server's base URL, Room the room joined.
	Target, Room string
	People       int
	Window       time.Duration
	// Stop is how many sessions end the run.
	Stop int
	// BotSources are the bot's source addresses; its BotWorkers loops
	// send each join from the next address round robin, so every address
	// carries an equal share whatever the number of loops. Under proof of
	// work each loop is one solver, as much compute as one person's
	// browser: BotWorkers is the bot's compute budget.
	BotSources []netip.Addr
	BotWorkers int
	// Timeout ends the run when Stop sessions have not been made by then.
	Timeout time.Duration
}

// Party is who made a session in an attack run.
type Party uint8

// The parties of an attack run.
const (
	PartyUnknown Party = iota // a session whose join answer never arrived
	PartyPerson
	PartyBot
)

// AttackResult is what an attack run saw from the client side. Hashes are
// counted as they are tried, including those of solves cut short when the
// run stopped: both are compute spent in the window.
type AttackResult struct {
	// Elapsed is the time from the start to the Stop-th session seen.
	Elapsed  time.Duration `json:"-"`
	TimedOut bool          `json:"timed_out"`
	// BotAttempts counts the bot's join requests (with or without a
	// solution); BotRefused those answered 429 rate_limited.
	BotAttempts   int64 `json:"bot_join_attempts"`
	BotRefused    int64 `json:"bot_rate_limited"`
	BotSessions   int64 `json:"bot_sessions"`
	BotSolved     int64 `json:"bot_challenges_solved"`
	BotHashes     int64 `json:"bot_hashes"`
	PeopleArrived int64 `json:"people_arrived"`
	// PeopleSessions counts people who got a session; PeopleFailed those
	// who gave up on an error the run did not cause by stopping.
	PeopleSessions int64 `json:"people_sessions"`
	PeopleFailed   int64 `json:"people_failed"`
	PeopleSolved   int64 `json:"people_challenges_solved"`
	PeopleHashes   int64 `json:"people_hashes"`
	// MinMaxNumber and MaxMaxNumber are the easiest and hardest challenge
	// (ALTCHA maxnumber) handed out in the run; 0 without proof of work.
	MinMaxNumber int64 `json:"min_maxnumber,omitempty"`
	MaxMaxNumber int64 `json:"max_maxnumber,omitempty"`
	// BotMeanMaxNumber and PeopleMeanMaxNumber are the mean difficulty of
	// the challenges each party was handed: a party that solves while
	// challenges are cheap gets more admissions per hash.
	BotMeanMaxNumber    int64 `json:"bot_mean_maxnumber,omitempty"`
	PeopleMeanMaxNumber int64 `json:"people_mean_maxnumber,omitempty"`
	// Errors holds the first few unexpected answers, for the report.
	Errors []string `json:"errors,omitempty"`
	// Owner is who made each session the run saw, by session ID.
	Owner map[string]Party `json:"-"`
}

// BotComputeShare is the bot's share of the hashes tried in the run, or
// -1 when nobody solved anything.
func (r *AttackResult) BotComputeShare() float64 {
	all := r.BotHashes + r.PeopleHashes
	if all == 0 {
		return -1
	}
	return float64(r.BotHashes) / float64(all)
}

// PersonAddr is the loopback address of person i (0-based) of an attack
// run: 127.1.0.1 to 127.1.0.250, then 127.1.1.1 and so on. Loopback
// answers on all of 127.0.0.0/8, so each person joins from its own
// address, as people do, and a per-address limit never counts two of them
// together.
func PersonAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, 1, byte(i / 250), byte(1 + i%250)})
}

// attackRun is the state of one Attack call.
type attackRun struct {
	cfg    AttackConfig
	ctx    context.Context // requests: cancelled only by the caller
	stop   context.Context // new work: cancelled when the run has its sessions
	halt   context.CancelFunc
	start  time.Time
	people *http.Client

	botNext                                                           atomic.Int64
	total, botAttempts, botRefused, botSessions, botSolved, botHashes atomic.Int64
	arrived, peopleSessions, peopleFailed, peopleSolved, peopleHashes atomic.Int64

	mu       sync.Mutex
	owner    map[string]Party
	elapsed  time.Duration
	minN     int64
	maxN     int64
	sumN     [3]int64 // by Party
	nN       [3]int64
	errs     []string
	timedOut bool
}

// localAddrKey carries a person's source address to the dialer.
type localAddrKey struct{}

// Attack plays one attack run against cfg.Target and returns what it saw.
// It returns once every request it started has been answered, or ctx ends.
func Attack(ctx context.Context, cfg AttackConfig) (*AttackResult, error) {
	switch {
	case cfg.People < 0 || cfg.People > MaxAttackPeople:
		return nil, fmt.Errorf("attack: people must be between 0 and %d, not %d", MaxAttackPeople, cfg.People)
	case cfg.Stop < 1:
		return nil, errors.New("attack: stop must be at least 1")
	case cfg.BotWorkers > 0 && len(cfg.BotSources) == 0:
		return nil, errors.New("attack: a bot needs at least one source address")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop, halt := context.WithCancel(ctx)
	defer halt()
	a := &attackRun{cfg: cfg, ctx: ctx, stop: stop, halt: halt, owner: make(map[string]Party)}
	a.people = &http.Client{Timeout: attackRequestTimeout, Transport: &http.Transport{
		// One join (two with a challenge) per person, each on a connection
		// of its own: thousands of people solving at once hold no sockets.
		DisableKeepAlives:  true,
		DisableCompression: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			d := &net.Dialer{Timeout: 10 * time.Second}
			if la, ok := ctx.Value(localAddrKey{}).(netip.Addr); ok {
				d.LocalAddr = &net.TCPAddr{IP: la.AsSlice()}
			}
			return d.DialContext(ctx, network, addr)
		},
	}}
	defer a.people.CloseIdleConnections()
	bots := make([]*http.Client, len(cfg.BotSources))
	for i, src := range cfg.BotSources {
		d := &net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: src.AsSlice()}}
		bots[i] = &http.Client{Timeout: attackRequestTimeout, Transport: &http.Transport{
			DialContext:         d.DialContext,
			MaxIdleConnsPerHost: 4 + cfg.BotWorkers/len(cfg.BotSources),
			DisableCompression:  true,
		}}
		defer bots[i].CloseIdleConnections()
	}

	a.start = time.Now()
	timeout := time.AfterFunc(cfg.Timeout, func() {
		a.mu.Lock()
		a.timedOut = a.stop.Err() == nil
		a.mu.Unlock()
		halt()
	})
	defer timeout.Stop()

	var wg sync.WaitGroup
	for w := range cfg.BotWorkers {
		wg.Go(func() { a.bot(bots, w) })
	}
	// Arrivals: person i at i·Window/People, until the run stops.
	for i := range cfg.People {
		at := a.start.Add(time.Duration(int64(cfg.Window) * int64(i) / int64(cfg.People)))
		if d := time.Until(at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-stop.Done():
				t.Stop()
			}
		}
		if stop.Err() != nil {
			break
		}
		a.arrived.Add(1)
		wg.Go(func() { a.person(i) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	r := &AttackResult{
		Elapsed: a.elapsed, TimedOut: a.timedOut,
		BotAttempts: a.botAttempts.Load(), BotRefused: a.botRefused.Load(), BotSessions: a.botSessions.Load(),
		BotSolved: a.botSolved.Load(), BotHashes: a.botHashes.Load(),
		PeopleArrived: a.arrived.Load(), PeopleSessions: a.peopleSessions.Load(), PeopleFailed: a.peopleFailed.Load(),
		PeopleSolved: a.peopleSolved.Load(), PeopleHashes: a.peopleHashes.Load(),
		MinMaxNumber: a.minN, MaxMaxNumber: a.maxN, Errors: a.errs, Owner: a.owner,
	}
	if a.nN[PartyBot] > 0 {
		r.BotMeanMaxNumber = a.sumN[PartyBot] / a.nN[PartyBot]
	}
	if a.nN[PartyPerson] > 0 {
		r.PeopleMeanMaxNumber = a.sumN[PartyPerson] / a.nN[PartyPerson]
	}
	if r.TimedOut {
		r.Elapsed = time.Since(a.start)
	}
	return r, nil
}

// made records a new session of p and stops the run at the Stop-th.
func (a *attackRun) made(id string, p Party) {
	a.mu.Lock()
	a.owner[id] = p
	a.mu.Unlock()
	if a.total.Add(1) == int64(a.cfg.Stop) {
		a.mu.Lock()
		a.elapsed = time.Since(a.start)
		a.mu.Unlock()
		a.halt()
	}
}

// problem keeps the first few unexpected answers.
func (a *attackRun) problem(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.errs) < 5 {
		a.errs = append(a.errs, fmt.Sprintf(format, args...))
	}
}

// issued notes the difficulty of a challenge handed to p.
func (a *attackRun) issued(c *challenge.Challenge, p Party) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sumN[p] += c.MaxNumber
	a.nN[p]++
	if a.minN == 0 || c.MaxNumber < a.minN {
		a.minN = c.MaxNumber
	}
	a.maxN = max(a.maxN, c.MaxNumber)
}

// bot is loop w of the bot: it joins as fast as it can until the run
// stops, each join from the next of the bot's addresses, straight away
// where the room lets it, solving the challenge where the room asks one,
// and again at once where it is refused.
func (a *attackRun) bot(addrs []*http.Client, w int) {
	solution := ""
	for a.stop.Err() == nil {
		hc := addrs[(a.botNext.Add(1)+int64(w))%int64(len(addrs))]
		ans, err := a.join(a.ctx, hc, solution)
		a.botAttempts.Add(1)
		solution = ""
		switch {
		case err != nil:
			if a.stop.Err() == nil {
				a.problem("bot: %v", err)
				time.Sleep(10 * time.Millisecond) // a broken connection: do not spin
			}
		case ans.status == http.StatusCreated:
			a.botSessions.Add(1)
			a.made(ans.id, PartyBot)
		case ans.challenge != nil:
			a.issued(ans.challenge, PartyBot)
			p, err := SolveCounting(a.stop, *ans.challenge, &a.botHashes)
			if err != nil {
				if a.stop.Err() == nil {
					a.problem("bot: %v", err)
				}
				return
			}
			a.botSolved.Add(1)
			solution = p
		case ans.status == http.StatusTooManyRequests:
			a.botRefused.Add(1)
		}
	}
}

// person i arrives, joins once from its own address and, when the room
// asks, solves the challenge once and joins with it. Refused for a while
// (429, 503), it waits as long as it is told; any other refusal ends its
// visit.
func (a *attackRun) person(i int) {
	ctx := context.WithValue(a.ctx, localAddrKey{}, PersonAddr(i))
	solution := ""
	for attempt := 0; attempt < 8 && a.stop.Err() == nil; attempt++ {
		ans, err := a.join(ctx, a.people, solution)
		solution = ""
		switch {
		case err != nil:
			if a.stop.Err() == nil {
				a.peopleFailed.Add(1)
				a.problem("person %d: %v", i, err)
			}
			return
		case ans.status == http.StatusCreated:
			a.peopleSessions.Add(1)
			a.made(ans.id, PartyPerson)
			return
		case ans.challenge != nil:
			a.issued(ans.challenge, PartyPerson)
			p, err := SolveCounting(a.stop, *ans.challenge, &a.peopleHashes)
			if err != nil {
				if a.stop.Err() == nil {
					a.peopleFailed.Add(1)
					a.problem("person %d: %v", i, err)
				}
				return
			}
			a.peopleSolved.Add(1)
			solution = p
		case ans.status == http.StatusTooManyRequests || ans.status == http.StatusServiceUnavailable:
			t := time.NewTimer(ans.retry)
			select {
			case <-t.C:
			case <-a.stop.Done():
				t.Stop()
			}
		case ans.code == waitroom.CodeChallengeUsed:
			// Only a replay is refused so; ask for a new challenge.
		default:
			a.peopleFailed.Add(1)
			a.problem("person %d: join answered %d %s", i, ans.status, ans.code)
			return
		}
	}
}

// joinAnswer is what a join request got back.
type joinAnswer struct {
	status    int
	id        string
	code      waitroom.Code
	challenge *challenge.Challenge
	retry     time.Duration
}

// join posts one join, with a solved challenge when solution is set.
func (a *attackRun) join(ctx context.Context, hc *http.Client, solution string) (joinAnswer, error) {
	var body io.Reader
	if solution != "" {
		b, _ := json.Marshal(map[string]string{"challenge": solution})
		body = bytes.NewReader(b)
	}
	u := strings.TrimRight(a.cfg.Target, "/") + "/v1/rooms/" + a.cfg.Room + "/sessions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, body)
	if err != nil {
		return joinAnswer{}, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return joinAnswer{}, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return joinAnswer{}, err
	}
	ans := joinAnswer{status: resp.StatusCode, retry: time.Second}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		ans.retry = time.Duration(s) * time.Second
	}
	if ans.status == http.StatusCreated {
		var s waitroom.Session
		if err := json.Unmarshal(data, &s); err != nil || s.ID == "" {
			return ans, fmt.Errorf("join answered 201 without a session: %.200s", data)
		}
		ans.id = s.ID
		return ans, nil
	}
	var e struct {
		Error *struct {
			Code waitroom.Code `json:"code"`
		} `json:"error"`
		Challenge *challenge.Challenge `json:"challenge"`
	}
	if json.Unmarshal(data, &e) == nil {
		if e.Error != nil {
			ans.code = e.Error.Code
		}
		if e.Challenge != nil && e.Challenge.Challenge != "" {
			ans.challenge = e.Challenge
		}
	}
	return ans, nil
}

// SolveCounting solves c as a browser would, adding the hashes it tries to
// hashes as it goes (challenge.SolveCounted), so the compute a party spent
// is known even for solves cut short.
func SolveCounting(ctx context.Context, c challenge.Challenge, hashes *atomic.Int64) (string, error) {
	return challenge.SolveCounted(ctx, c, hashes)
}
