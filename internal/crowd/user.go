// Package crowd plays a crowd of people against running waitroom servers:
// each simulated user joins a room, holds an event stream (or polls), stays
// admitted for a while and then leaves or abandons. It measures what people
// would feel: join latency, how soon an admission reaches the person, whether
// the line is fair and positions exact, and how good the ETA was.
//
// A run can span several worker processes (one process may hold only so many
// open connections) and many loopback source addresses (one address has only
// so many ports); the workers report back as JSON lines and obey a few
// commands on stdin, so the coordinating process can freeze the crowd and
// check every user's latest position against the server's truth.
package crowd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
)

// Config describes the crowd.
type Config struct {
	// Targets are the base URLs of the servers; users are spread over them
	// and a user whose server fails moves to the next.
	Targets []string `json:"targets"`
	Room    string   `json:"room"`
	// Users is how many people arrive in all.
	Users int `json:"users"`
	// Rate is arrivals per second; 0 means everyone at once.
	Rate float64 `json:"rate"`
	// Hold is how long an admitted user stays before leaving (each user
	// draws uniformly from Hold/2 to 3·Hold/2).
	Hold time.Duration `json:"hold"`
	// Abandon is the chance that an admitted user closes the page without
	// leaving (its slot then frees only by timeout).
	Abandon float64 `json:"abandon"`
	// Quit is the chance per second that a waiting user leaves the line.
	Quit float64 `json:"quit"`
	// Poll, when set, makes users poll GET this often instead of holding
	// an event stream.
	Poll time.Duration `json:"poll"`
	// Sources are local addresses to connect from, spread over users.
	Sources []netip.Addr `json:"sources"`
	// Seed makes a run's random choices repeatable.
	Seed uint64 `json:"seed"`
	// Start is when arrivals begin, so that workers started at different
	// moments keep one schedule; zero means when each worker starts.
	Start time.Time `json:"start,omitzero"`
}

// UserResult is what one simulated user saw.
type UserResult struct {
	User        int    `json:"u"`
	Ticket      int64  `json:"ticket"`
	JoinMicros  int64  `json:"join_us"`
	JoinError   string `json:"join_err,omitempty"`
	Final       string `json:"final"` // last status seen
	JoinedAt    int64  `json:"joined_ms,omitempty"`
	AdmittedAt  int64  `json:"admitted_ms,omitempty"` // server's admitted_at
	AdmitSeenAt int64  `json:"admit_seen_ms,omitempty"`
	FreedAt     int64  `json:"freed_ms,omitempty"` // server's ended_at of the user's admitted session
	FirstETA    int64  `json:"first_eta_s,omitempty"`
	FirstETAAt  int64  `json:"first_eta_ms,omitempty"`
	// ETAs are the distinct ETAs the person's page showed, in order.
	ETAs       []ETAShown `json:"etas,omitempty"`
	Updates    int        `json:"updates"`
	PosUps     int        `json:"pos_ups,omitempty"` // a waiting position that went up: never allowed
	Reconnects int        `json:"reconnects,omitempty"`
	Lost       bool       `json:"lost,omitempty"` // a 404 for a session the server had acknowledged
	Left       bool       `json:"left,omitempty"`
	Abandoned  bool       `json:"abandoned,omitempty"`
	Errors     int        `json:"errors,omitempty"`
	LastErr    string     `json:"last_err,omitempty"`
	// Causes counts the user's failed requests by what they were and met
	// ("stream: connection reset", "join: 503 unavailable"), retried or
	// not.
	Causes   map[string]int `json:"causes,omitempty"`
	Position int64          `json:"pos,omitempty"`
	// Entry is the public entry of a user who joined a scheduled room's
	// pre-queue (an entrant), as the published draw names it.
	Entry string `json:"entry,omitempty"`
	// PositionSeenAt is when the user first saw a place in line: waiting
	// with a position, or active (unix milliseconds, the user's clock).
	PositionSeenAt int64 `json:"position_seen_ms,omitempty"`
	// JoinCause is what a join that failed met, as counted in the report
	// (see causeOf): empty when it did not fail, or when the run ended
	// before it had an answer.
	JoinCause string `json:"join_cause,omitempty"`
}

// user is one simulated person.
type user struct {
	cfg    *Config
	n      int
	client *http.Client
	// target is the index of the server the user talks to; the stream and
	// the leave of one user run at once and either may move it.
	target atomic.Int64
	rngMu  sync.Mutex // the user's goroutines share rng
	rng    *rand.Rand
	frozen *atomic.Bool
	joined *atomic.Int64
	// admitted counts this worker's users who have seen their admission,
	// for progress reports.
	admitted *atomic.Int64
	busy     *atomic.Int64 // requests of this worker's users in flight
	updates  *atomic.Int64 // stream updates this worker's users received
	mu       sync.Mutex    // guards res and sess
	res      UserResult
	sess     waitroom.Session
	lastID   string
	cancel   context.CancelFunc
	ending   atomic.Bool
}

// clients builds one HTTP client per source address (or one without).
func clients(sources []netip.Addr) []*http.Client {
	mk := func(local net.Addr) *http.Client {
		d := &net.Dialer{Timeout: 10 * time.Second, LocalAddr: local, KeepAlive: 30 * time.Second}
		return &http.Client{Transport: &http.Transport{
			DialContext:         d.DialContext,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		}}
	}
	if len(sources) == 0 {
		return []*http.Client{mk(nil)}
	}
	out := make([]*http.Client, len(sources))
	for i, a := range sources {
		out[i] = mk(&net.TCPAddr{IP: a.AsSlice()})
	}
	return out
}

func (u *user) float() float64 {
	u.rngMu.Lock()
	defer u.rngMu.Unlock()
	return u.rng.Float64()
}

func (u *user) int64n(n int64) int64 {
	u.rngMu.Lock()
	defer u.rngMu.Unlock()
	return u.rng.Int64N(n)
}

func (u *user) base() string {
	return u.cfg.Targets[int(u.target.Load()%int64(len(u.cfg.Targets)))]
}

// next moves the user to another server after a failure.
func (u *user) next() { u.target.Add(1) }

// fail records a failed request: what it was (join, leave, stream, poll)
// and the error it met.
func (u *user) fail(what string, err error) {
	u.mu.Lock()
	u.res.Errors++
	u.res.LastErr = err.Error()
	if !strings.HasPrefix(u.res.LastErr, what+":") {
		u.res.LastErr = what + ": " + u.res.LastErr
	}
	if u.res.Causes == nil {
		u.res.Causes = make(map[string]int)
	}
	u.res.Causes[what+": "+causeOf(err)]++
	u.mu.Unlock()
}

// run plays the user until it ends or ctx does.
func (u *user) run(ctx context.Context) UserResult {
	ctx, u.cancel = context.WithCancel(ctx)
	defer u.cancel()
	u.res.User = u.n
	if !u.join(ctx) {
		return u.result()
	}
	if u.cfg.Quit > 0 {
		go u.maybeQuit(ctx)
	}
	for ctx.Err() == nil && !u.ending.Load() {
		var err error
		if u.cfg.Poll > 0 {
			err = u.poll(ctx)
		} else {
			err = u.stream(ctx)
		}
		if err == nil || ctx.Err() != nil || u.ending.Load() {
			break
		}
		what := "stream"
		if u.cfg.Poll > 0 {
			what = "poll"
		}
		u.fail(what, err)
		var lost lostError
		if errors.As(err, &lost) {
			u.mu.Lock()
			u.res.Lost = true
			u.mu.Unlock()
			break
		}
		u.next()
		u.mu.Lock()
		u.res.Reconnects++
		u.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(100+u.int64n(400)) * time.Millisecond):
		}
	}
	return u.result()
}

func (u *user) result() UserResult {
	u.mu.Lock()
	defer u.mu.Unlock()
	r := u.res
	r.Final = string(u.sess.Status)
	r.Position = u.sess.Position
	return r
}

// join posts the join, retrying on other servers for transport errors and
// 5xx answers. A join that fails for good says why in JoinError and
// JoinCause.
func (u *user) join(ctx context.Context) bool {
	var last error
	defer func() {
		if last != nil {
			u.mu.Lock()
			u.res.JoinError, u.res.JoinCause = last.Error(), causeOf(last)
			u.mu.Unlock()
		}
	}()
	for attempt := 0; attempt < 2*len(u.cfg.Targets)+1; attempt++ {
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, "POST", u.base()+"/v1/rooms/"+u.cfg.Room+"/sessions", nil)
		resp, err := u.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				last = nil // not a failure: the run is over
				u.mu.Lock()
				u.res.JoinError = "the run ended before its answer"
				u.mu.Unlock()
				return false
			}
			u.fail("join", err)
			last = err
			u.next()
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			last = newStatusError(resp.StatusCode, bytes.TrimSpace(body))
			if resp.StatusCode >= 500 {
				u.fail("join", last)
				u.next()
				continue
			}
			return false
		}
		var s waitroom.Session
		if err := json.Unmarshal(body, &s); err != nil {
			last = fmt.Errorf("bad join answer: %w", err)
			return false
		}
		last = nil
		u.mu.Lock()
		u.res.JoinMicros = time.Since(start).Microseconds()
		u.res.Ticket = s.Ticket
		u.res.JoinedAt = s.JoinedAt.UnixMilli()
		if s.Ticket == 0 && !s.OpensAt.IsZero() {
			// A pre-queue entry: the draw gives the ticket later.
			u.res.Entry = s.Entry
		}
		u.mu.Unlock()
		u.joined.Add(1)
		u.observe(ctx, s)
		return true
	}
	return false
}

// lostError is a 404 for a session the server acknowledged.
type lostError struct{ answer *statusError }

func (e lostError) Error() string { return "session lost: " + e.answer.Error() }

// Unwrap returns the 404 answer, which causeOf counts.
func (e lostError) Unwrap() error { return e.answer }

// observe records a Session the user saw and acts on it.
func (u *user) observe(ctx context.Context, s waitroom.Session) {
	now := time.Now().UnixMilli()
	u.mu.Lock()
	prev := u.sess
	if stage(s.Status) < stage(prev.Status) {
		// Two goroutines observe one session: the stream, and the answer to
		// the user's own leave. A stream event sent before the leave may be
		// read after its answer; statuses never go back, so it is stale.
		u.mu.Unlock()
		return
	}
	u.sess = s
	u.res.Updates++
	if u.updates != nil {
		u.updates.Add(1)
	}
	// An entrant of a pre-queue has no position (0) until the draw.
	if prev.Status == waitroom.StatusWaiting && s.Status == waitroom.StatusWaiting && prev.Position > 0 && s.Position > prev.Position {
		u.res.PosUps++
	}
	if s.Ticket != 0 {
		// An entrant's ticket comes from the draw.
		u.res.Ticket = s.Ticket
	}
	if u.res.PositionSeenAt == 0 && ((s.Status == waitroom.StatusWaiting && s.Position > 0) || s.Status == waitroom.StatusActive) {
		u.res.PositionSeenAt = now
	}
	if s.ETA != nil && u.res.FirstETAAt == 0 {
		u.res.FirstETA, u.res.FirstETAAt = s.ETA.Seconds, now
	}
	if s.ETA != nil && s.Status == waitroom.StatusWaiting {
		u.res.noteETA(now, s.ETA.Seconds, s.ETA.Low, s.ETA.High)
	}
	admitted := s.Status == waitroom.StatusActive && u.res.AdmittedAt == 0
	if admitted {
		u.res.AdmittedAt = s.AdmittedAt.UnixMilli()
		u.res.AdmitSeenAt = now
		if u.admitted != nil {
			u.admitted.Add(1)
		}
	}
	ended := s.Status.Final()
	if ended && u.res.AdmittedAt != 0 && u.res.FreedAt == 0 && !s.EndedAt.IsZero() {
		u.res.FreedAt = s.EndedAt.UnixMilli()
	}
	u.mu.Unlock()
	if ended {
		u.ending.Store(true)
		u.cancel()
		return
	}
	if admitted {
		go u.stayThenGo(ctx)
	}
}

// stage orders statuses: waiting, then active, then the final ones.
func stage(st waitroom.Status) int {
	switch st {
	case waitroom.StatusWaiting:
		return 1
	case waitroom.StatusActive:
		return 2
	case "":
		return 0
	}
	return 3
}

// stayThenGo holds the slot for a while, then leaves or abandons.
func (u *user) stayThenGo(ctx context.Context) {
	hold := u.cfg.Hold/2 + time.Duration(u.int64n(int64(u.cfg.Hold)+1))
	select {
	case <-ctx.Done():
		return
	case <-time.After(hold):
	}
	for u.frozen.Load() && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	if u.float() < u.cfg.Abandon {
		u.mu.Lock()
		u.res.Abandoned = true
		u.mu.Unlock()
		u.ending.Store(true)
		u.cancel()
		return
	}
	u.leave(ctx)
}

// maybeQuit leaves the line at random while waiting.
func (u *user) maybeQuit(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		u.mu.Lock()
		waiting := u.sess.Status == waitroom.StatusWaiting
		u.mu.Unlock()
		if waiting && !u.frozen.Load() && u.float() < u.cfg.Quit {
			u.leave(ctx)
			return
		}
	}
}

func (u *user) leave(ctx context.Context) {
	u.busy.Add(1)
	defer u.busy.Add(-1)
	u.mu.Lock()
	id := u.sess.ID
	u.mu.Unlock()
	for attempt := 0; attempt < 2*len(u.cfg.Targets)+1 && ctx.Err() == nil; attempt++ {
		req, _ := http.NewRequestWithContext(ctx, "DELETE", u.base()+"/v1/rooms/"+u.cfg.Room+"/sessions/"+id, nil)
		resp, err := u.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return // the run ended: not the server's failure
			}
			u.fail("leave", err)
			u.next()
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			var s waitroom.Session
			if json.Unmarshal(body, &s) == nil {
				u.mu.Lock()
				u.res.Left = true
				u.mu.Unlock()
				u.observe(ctx, s)
			}
			return
		}
		u.fail("leave", newStatusError(resp.StatusCode, bytes.TrimSpace(body)))
		if resp.StatusCode < 500 {
			return
		}
		u.next()
	}
}

// stream reads the session's event stream until it ends; an error means
// the stream broke and the user should reconnect.
func (u *user) stream(ctx context.Context) error {
	u.mu.Lock()
	id := u.sess.ID
	u.mu.Unlock()
	req, _ := http.NewRequestWithContext(ctx, "GET", u.base()+"/v1/rooms/"+u.cfg.Room+"/sessions/"+id+"/events", nil)
	if u.lastID != "" {
		req.Header.Set("Last-Event-ID", u.lastID)
	}
	// Until its first event arrives the stream is a request in flight: a
	// freeze waits for it, so a check never blames a stream still opening.
	u.busy.Add(1)
	connecting := true
	defer func() {
		if connecting {
			u.busy.Add(-1)
		}
	}()
	resp, err := u.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return lostError{newStatusError(resp.StatusCode, bytes.TrimSpace(b))}
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return newStatusError(resp.StatusCode, bytes.TrimSpace(b))
	}
	r := bufio.NewReaderSize(resp.Body, 4096)
	var data []byte
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			if u.ending.Load() {
				return nil
			}
			return fmt.Errorf("stream: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				var s waitroom.Session
				if err := json.Unmarshal(data, &s); err != nil {
					return fmt.Errorf("stream: bad event: %w", err)
				}
				u.observe(ctx, s)
				if connecting {
					connecting = false
					u.busy.Add(-1)
				}
				data = nil
				if s.Status.Final() {
					return nil
				}
			}
		case bytes.HasPrefix(line, []byte("id: ")):
			u.lastID = string(line[4:])
		case bytes.HasPrefix(line, []byte("data: ")):
			data = append(data[:0:0], line[6:]...)
		}
	}
}

// poll reads the session now and then until it ends.
func (u *user) poll(ctx context.Context) error {
	for {
		u.mu.Lock()
		id := u.sess.ID
		u.mu.Unlock()
		req, _ := http.NewRequestWithContext(ctx, "GET", u.base()+"/v1/rooms/"+u.cfg.Room+"/sessions/"+id, nil)
		resp, err := u.client.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return lostError{newStatusError(resp.StatusCode, bytes.TrimSpace(body))}
		}
		if resp.StatusCode != http.StatusOK {
			return newStatusError(resp.StatusCode, bytes.TrimSpace(body))
		}
		var s waitroom.Session
		if err := json.Unmarshal(body, &s); err != nil {
			return err
		}
		u.observe(ctx, s)
		if s.Status.Final() {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(u.cfg.Poll):
		}
	}
}
