package webhook

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/waitroom/waitroom"
)

// Options configures a Deliverer. Zero values take the defaults.
type Options struct {
	// Store is the outbox delivered.
	Store waitroom.Hooks
	// Client sends the requests; nil makes one that does not follow
	// redirects, ignores proxy settings and, unless AllowPrivate, refuses
	// private addresses (Dialer).
	Client       *http.Client
	AllowPrivate bool
	Clock        waitroom.Clock
	// Timeout bounds one try (default 10s); Lease is how long a claim
	// lasts (default 30s, at least twice Timeout): another process takes
	// a delivery over when this one died holding it.
	Timeout, Lease time.Duration
	// RetryFor is how long after its event a delivery is retried before
	// it becomes a dead letter (default 24h).
	RetryFor time.Duration
	// Backoff is the delay before the try after the nth failure (n ≥ 1);
	// the default is 1s doubling up to an hour, with full jitter in its
	// upper half.
	Backoff func(n int) time.Duration
	// Workers bounds the tries in flight (default 64), PerHook those to
	// one endpoint (default 16), so a slow endpoint cannot hold every
	// worker.
	Workers, PerHook int
	// Poll is how often the outbox is read when nothing kicks the
	// deliverer (default 250ms).
	Poll   time.Duration
	Logger *slog.Logger
	// PublicURL, when set, is where browsers reach the server
	// (scheme://host[:port], serve --public-url): the data of a
	// session.invited message (and of any other with a claim_path) then
	// carries claim_url, PublicURL followed by its claim_path, the whole
	// link to send the person. The outbox keeps the message as it was
	// made; the link is added to each request's body, and signed with it.
	PublicURL string
}

// Counts is what a Deliverer did since it started.
type Counts struct {
	Delivered, Failed, Dead int64
}

// Deliverer claims due deliveries from the outbox, sends them and settles
// the outcomes. Any number of deliverers, in any number of processes, may
// share one outbox: claims are leases, so each delivery is tried by one
// at a time. It is safe for concurrent use.
type Deliverer struct {
	o     Options
	kick  chan struct{}
	sem   chan struct{}
	mu    sync.Mutex
	perHk map[string]int // tries in flight by room/webhook
	hooks map[string]hookCache
	outs  chan outcome
	// rooms is the rooms with webhooks as of the last round, for Notify;
	// roomList and roomsAt the list and when it was read.
	rooms    atomic.Pointer[map[string]struct{}]
	roomList []string
	roomsAt  time.Time
	circuits map[string]*circuit // by room/webhook
	counts   struct{ delivered, failed, dead atomic.Int64 }
}

type hookCache struct {
	at    time.Time
	hooks map[string]endpoint
}

type endpoint struct {
	w  waitroom.Webhook
	wh *standardwebhooks.Webhook
}

type outcome struct {
	room string
	o    waitroom.DeliveryOutcome
}

// New returns a Deliverer; Run starts it.
func New(o Options) *Deliverer {
	if o.Clock == nil {
		o.Clock = waitroom.SystemClock{}
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	o.Lease = max(o.Lease, 2*o.Timeout)
	if o.RetryFor <= 0 {
		o.RetryFor = 24 * time.Hour
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.Workers <= 0 {
		o.Workers = 64
	}
	if o.PerHook <= 0 {
		o.PerHook = 16
	}
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Client == nil {
		o.Client = NewClient(o.AllowPrivate)
	}
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	return &Deliverer{o: o, kick: make(chan struct{}, 1), sem: make(chan struct{}, o.Workers),
		perHk: map[string]int{}, circuits: map[string]*circuit{}, hooks: map[string]hookCache{}, outs: make(chan outcome, 4*o.Workers)}
}

// NewClient returns the HTTP client deliveries use: no redirects followed
// (a 3xx is a failed try), no proxy from the environment, and unless
// allowPrivate no private address dialled.
func NewClient(allowPrivate bool) *http.Client {
	tr := &http.Transport{
		DialContext:           dialContext(allowPrivate),
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// DefaultBackoff is Backoff(time.Second, time.Hour).
var DefaultBackoff = Backoff(time.Second, time.Hour)

// Backoff waits first after the first failure, doubling up to most, each
// delay drawn from its upper half (jitter, so deliveries that failed
// together are not retried together).
func Backoff(first, most time.Duration) func(n int) time.Duration {
	return func(n int) time.Duration {
		d := most
		if n < 40 && first<<(n-1) > 0 {
			d = min(most, first<<(n-1))
		}
		return d/2 + rand.N(d/2+1)
	}
}

// Kick tells the deliverer that the outbox may have something new.
func (d *Deliverer) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Notify is a store subscriber (waitroom.Store.Subscribe): it kicks the
// deliverer when ev is of a room that had webhooks at the last round, and
// costs a map read otherwise.
func (d *Deliverer) Notify(ev waitroom.Event) {
	if m := d.rooms.Load(); m != nil {
		if _, ok := (*m)[ev.Room]; ok {
			d.Kick()
		}
	}
}

// Counts reports what the deliverer did.
func (d *Deliverer) Counts() Counts {
	return Counts{d.counts.delivered.Load(), d.counts.failed.Load(), d.counts.dead.Load()}
}

// Run delivers until ctx ends, then waits for the tries in flight and
// settles them.
func (d *Deliverer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	settled := make(chan struct{})
	go func() { d.settleLoop(); close(settled) }()
	poll := time.NewTimer(0)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			close(d.outs)
			<-settled
			return
		case <-d.kick:
		case <-poll.C:
		}
		// After a full claim there may be more: look again at once (a
		// finished try kicks sooner). Otherwise rounds are at least
		// roundGap apart, however often changes kick: a busy room's
		// kicks gather into one round.
		started := time.Now()
		if d.round(ctx, &wg) {
			poll.Reset(0)
			continue
		}
		poll.Reset(d.o.Poll)
		select {
		case <-ctx.Done():
		case <-time.After(max(0, roundGap-time.Since(started))):
		}
	}
}

// roundGap is the least time between two rounds that were not cut short.
const roundGap = 10 * time.Millisecond

// Circuit breaking: after breakAfter failed tries in a row, an endpoint
// is paused and then probed with one delivery at a time, the pauses
// growing as Backoff, until a try succeeds. Its deliveries wait in the
// outbox meanwhile, so a failing endpoint costs a try now and then, not
// a try (and retries) per event.
const breakAfter = 3

// circuit is one endpoint's run of failures.
type circuit struct {
	fails int       // failed tries in a row
	level int       // pauses in a row
	until time.Time // paused until
}

// gate says how many deliveries webhook name of room may be tried now:
// 0 while paused, 1 to probe after a pause, else n.
func (d *Deliverer) gate(room, name string, now time.Time, n int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.circuits[room+"/"+name]
	switch {
	case c == nil || c.fails < breakAfter:
		return n
	case now.Before(c.until):
		return 0
	}
	return min(n, 1)
}

// record counts a try's outcome in its endpoint's circuit.
func (d *Deliverer) record(room, name string, ok bool, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := room + "/" + name
	if ok {
		delete(d.circuits, k)
		return
	}
	c := d.circuits[k]
	if c == nil {
		c = &circuit{}
		d.circuits[k] = c
	}
	c.fails++
	if c.fails >= breakAfter {
		c.level++
		c.until = now.Add(d.o.Backoff(c.level))
	}
}

// Paused lists the endpoints paused after failing, as "room/webhook".
func (d *Deliverer) Paused() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for k, c := range d.circuits {
		if c.fails >= breakAfter {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// round claims what is due in every room with webhooks, for each
// webhook as many as it and the deliverer have free workers, and starts
// each try. It reports whether some claim was cut short by those limits
// (there may be more due).
func (d *Deliverer) round(ctx context.Context, wg *sync.WaitGroup) bool {
	rooms, err := d.hookRooms(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.o.Logger.Warn("webhooks: list rooms", "err", err)
		}
		return false
	}
	full := false
	for _, room := range rooms {
		now := d.o.Clock.Now()
		for name, ep := range d.endpoints(ctx, room, now) {
			free := d.gate(room, name, now, min(cap(d.sem)-len(d.sem), d.o.PerHook-d.inflight(room, name, 0)))
			if free <= 0 {
				continue // a finished try kicks, a pause ends by the poll
			}
			ds, err := d.claim(ctx, room, name, now, free)
			if err != nil {
				if ctx.Err() == nil {
					d.o.Logger.Warn("webhooks: claim", "room", room, "webhook", name, "err", err)
				}
				continue
			}
			if len(ds) == free && free > 1 {
				full = true
			}
			for _, dl := range ds {
				d.sem <- struct{}{}
				d.inflight(room, name, 1)
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { d.inflight(room, name, -1); <-d.sem; d.Kick() }()
					d.try(ctx, dl, ep)
				}()
			}
		}
	}
	return full
}

// hookRooms lists the rooms with webhooks, read at most every Poll.
func (d *Deliverer) hookRooms(ctx context.Context) ([]string, error) {
	d.mu.Lock()
	list, at := d.roomList, d.roomsAt
	d.mu.Unlock()
	if list != nil && time.Since(at) < d.o.Poll {
		return list, nil
	}
	list, err := d.o.Store.HookRooms(ctx)
	if err != nil {
		return nil, err
	}
	set := make(map[string]struct{}, len(list))
	for _, r := range list {
		set[r] = struct{}{}
	}
	d.rooms.Store(&set)
	d.mu.Lock()
	d.roomList, d.roomsAt = append([]string{}, list...), time.Now()
	d.mu.Unlock()
	return list, nil
}

// claim claims up to n due deliveries to webhook name of room. Those
// already past the retry window (they waited out a pause) become dead
// letters at once, untried, and more are claimed in their place.
func (d *Deliverer) claim(ctx context.Context, room, name string, now time.Time, n int) ([]waitroom.Delivery, error) {
	var out []waitroom.Delivery
	for range 40 {
		ds, err := d.o.Store.ClaimDeliveries(ctx, room, name, now, d.o.Lease, n-len(out))
		if err != nil {
			return out, err
		}
		var dead []waitroom.DeliveryOutcome
		for _, dl := range ds {
			if now.Before(dl.RetrySince().Add(d.o.RetryFor)) {
				out = append(out, dl)
				continue
			}
			dead = append(dead, waitroom.DeliveryOutcome{Hook: name, ID: dl.Message.ID, Dead: true,
				Error: "not delivered within " + d.o.RetryFor.String() + "; last error: " + cmp.Or(dl.LastError, "the endpoint was failing")})
		}
		if len(dead) == 0 {
			return out, nil
		}
		d.counts.dead.Add(int64(len(dead)))
		if err := d.o.Store.SettleDeliveries(ctx, room, dead, now); err != nil {
			return out, err
		}
		if len(out) >= n {
			return out, nil
		}
	}
	return out, nil
}

// endpoints returns room's webhooks with their signers, read at most once
// a second.

func (d *Deliverer) endpoints(ctx context.Context, room string, now time.Time) map[string]endpoint {
	d.mu.Lock()
	c, ok := d.hooks[room]
	d.mu.Unlock()
	if ok && now.Sub(c.at) < time.Second && now.Sub(c.at) >= 0 {
		return c.hooks
	}
	list, err := d.o.Store.Webhooks(ctx, room)
	if err != nil {
		d.o.Logger.Warn("webhooks: read endpoints", "room", room, "err", err)
		return c.hooks
	}
	m := make(map[string]endpoint, len(list))
	for _, w := range list {
		wh, err := standardwebhooks.NewWebhook(w.Secret)
		if err != nil {
			d.o.Logger.Warn("webhooks: bad secret", "room", room, "webhook", w.Name, "err", err)
			continue
		}
		m[w.Name] = endpoint{w, wh}
	}
	d.mu.Lock()
	d.hooks[room] = hookCache{now, m}
	d.mu.Unlock()
	return m
}

// inflight adds delta to the tries in flight to webhook name of room and
// returns the count.
func (d *Deliverer) inflight(room, name string, delta int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := room + "/" + name
	n := d.perHk[k] + delta
	if n == 0 {
		delete(d.perHk, k)
	} else {
		d.perHk[k] = n
	}
	return n
}

// try sends one claimed delivery and queues its outcome.
func (d *Deliverer) try(ctx context.Context, dl waitroom.Delivery, ep endpoint) {
	err := d.send(ctx, dl, ep)
	if ctx.Err() != nil && err != nil {
		return // shutting down: the claim lapses and the next claim retries it
	}
	now := d.o.Clock.Now()
	d.record(dl.Room, dl.Hook, err == nil, now)
	o := waitroom.DeliveryOutcome{Hook: dl.Hook, ID: dl.Message.ID, OK: err == nil}
	switch {
	case err == nil:
		d.counts.delivered.Add(1)
	default:
		o.Error = err.Error()
		next := now.Add(d.o.Backoff(dl.Attempts + 1))
		if !next.Before(dl.RetrySince().Add(d.o.RetryFor)) {
			o.Dead = true
			d.counts.dead.Add(1)
		} else {
			o.Next = next
		}
		d.counts.failed.Add(1)
	}
	d.outs <- outcome{dl.Room, o}
}

// body returns the request body a delivery of m sends: m.Body(), with
// claim_url added to the data when the deliverer knows its PublicURL and
// the data has a claim_path (session.invited, and the session.joined of
// a held session invited as it joined, which shares its data).
func (d *Deliverer) body(m waitroom.HookMessage) []byte {
	if d.o.PublicURL != "" && bytes.Contains(m.Data, []byte(`"claim_path":`)) {
		m.Data = withClaimURL(m.Data, d.o.PublicURL)
	}
	return m.Body()
}

// withClaimURL returns data, the JSON object of a session event, with "claim_url": publicURL + its claim_path added as its last
// member. Data without a claim_path (one that starts with "/"), with a
// claim_url already, or that is not a JSON object is returned as it is.
func withClaimURL(data json.RawMessage, publicURL string) json.RawMessage {
	var v struct {
		ClaimPath *string `json:"claim_path"`
		ClaimURL  *string `json:"claim_url"`
	}
	if json.Unmarshal(data, &v) != nil || v.ClaimPath == nil || !strings.HasPrefix(*v.ClaimPath, "/") || v.ClaimURL != nil {
		return data
	}
	obj := bytes.TrimSpace(data)
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' {
		return data
	}
	link, err := json.Marshal(strings.TrimRight(publicURL, "/") + *v.ClaimPath)
	if err != nil {
		return data
	}
	// The object has a member (claim_path), so the new one follows a comma.
	out := make([]byte, 0, len(obj)+len(link)+14)
	out = append(out, obj[:len(obj)-1]...)
	out = append(out, `,"claim_url":`...)
	out = append(out, link...)
	out = append(out, '}')
	if !json.Valid(out) {
		return data
	}
	return out
}

// send makes one try.
func (d *Deliverer) send(ctx context.Context, dl waitroom.Delivery, ep endpoint) error {
	body := d.body(dl.Message)
	now := d.o.Clock.Now()
	sig, err := ep.wh.Sign(dl.Message.ID, now, body)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.w.URL, strings.NewReader(string(body)))
	if err != nil {
		return fmt.Errorf("request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "waitroom-webhooks/1")
	req.Header.Set(standardwebhooks.HeaderWebhookID, dl.Message.ID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := d.o.Client.Do(req)
	if err != nil {
		return errors.New(shortError(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return nil
}

// shortError is a transport error without the request's URL (which the
// endpoint shows anyway), at most 200 bytes.
func shortError(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			err = inner
		}
	}
	s := err.Error()
	if errors.Is(err, context.DeadlineExceeded) {
		s = "timed out"
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// settleLoop records outcomes in batches: one store call for up to 256
// outcomes of a room, or what arrived within 20ms.
func (d *Deliverer) settleLoop() {
	pending := map[string][]waitroom.DeliveryOutcome{}
	n := 0
	flush := func() {
		for room, outs := range pending {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := d.o.Store.SettleDeliveries(ctx, room, outs, d.o.Clock.Now()); err != nil {
				d.o.Logger.Warn("webhooks: settle", "room", room, "n", len(outs), "err", err)
			}
			cancel()
		}
		clear(pending)
		n = 0
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case o, ok := <-d.outs:
			if !ok {
				flush()
				return
			}
			pending[o.room] = append(pending[o.room], o.o)
			if n++; n >= 256 {
				flush()
			}
		case <-tick.C:
			if n > 0 {
				flush()
			}
		}
	}
}
