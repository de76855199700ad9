// Package roomstats is the server side of the operator console's charts:
// a Recorder counts, per room and 10-second bucket, joins, admissions,
// abandons and the admissions' waits from the store's events, samples the
// room's totals and the estimate shown to the last person in line, and
// writes it all to the store's waitroom.Ledger, where every process reads
// it back (Summary, Overview).
//
// # Counting once
//
// A Recorder counts only the events its own store made (not Remote ones),
// so with many processes on one Redis each change is counted exactly once,
// by the process that made it, and the ledger adds up what each wrote.
// Gauges (waiting, active, the last estimate) are set, not added: any
// process may sample them.
//
// # Cost
//
// The store calls the Recorder on its write path, so that call only adds to
// the room's current bucket under a mutex: no allocation, no I/O, well
// under a microsecond per event (BenchmarkObserve). A background goroutine
// samples gauges and writes the buckets to the ledger once a second, one
// AddStats per room and bucket.
//
// # Estimate error
//
// For each admission of a session that joined at J the Recorder compares
// the actual wait with the estimate sampled for J's bucket: the estimate
// shown to the last person in line then. The last person in line just
// after a join is the one who joined, so that is the estimate they saw
// first, to within a bucket (10 s) and a sample (1 s): a room that changes
// pace within ten seconds makes it off by that change. Estimates come from
// this process's samples, and for sessions that joined before this
// process saw the bucket (another process, a restart) from the ledger's
// buckets, read when needed.
package roomstats

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/eta"
)

// Options configures a Recorder.
type Options struct {
	// ETA returns the estimated wait of the person at position in room at
	// now, and false when there is none. The server passes its
	// estimator's (see EstimatorETA). Nil: no estimates are recorded.
	ETA func(room string, position int64, now time.Time) (time.Duration, bool)
	// Sample is how often gauges are sampled and buckets written to the
	// ledger; 0 means every second. Negative: never by itself; the owner
	// calls Flush (tests).
	Sample time.Duration
	// Clock tells the time of samples; nil means the system clock.
	Clock waitroom.Clock
	// Logger receives failures to read the store or write the ledger; nil
	// means slog.Default().
	Logger *slog.Logger
}

// EstimatorETA returns the Options.ETA of an eta.Estimator: the wait it
// would tell the person at position, in whole seconds.
func EstimatorETA(e *eta.Estimator) func(room string, position int64, now time.Time) (time.Duration, bool) {
	return func(room string, position int64, now time.Time) (time.Duration, bool) {
		s := waitroom.Session{Room: room, Status: waitroom.StatusWaiting, Position: position}
		e.Fill(&s, now)
		if s.ETA == nil {
			return 0, false
		}
		return time.Duration(s.ETA.Seconds) * time.Second, true
	}
}

// Recorder counts a store's room events into its ledger. It is safe for
// concurrent use.
type Recorder struct {
	store  waitroom.Store
	ledger waitroom.Ledger
	opts   Options
	log    *slog.Logger
	cancel func()

	mu    sync.Mutex
	rooms map[string]*roomState

	flushMu sync.Mutex // one Flush at a time
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// step and keep are StatsStep and StatsKeep in milliseconds.
var (
	step = waitroom.StatsStep.Milliseconds()
	keep = waitroom.StatsKeep.Milliseconds()
)

// maxPending bounds the admissions per room whose estimate is being
// looked up; past it, admissions go without an estimate error.
const maxPending = 4096

// roomState is one room's counts not yet written, and what it knows of the
// room's estimates.
type roomState struct {
	cur   waitroom.StatsBucket // counts of bucket curMs; At is set when written
	curMs int64
	has   bool                   // cur is a bucket
	older []waitroom.StatsBucket // earlier buckets not yet written, At set
	// est maps a bucket (unix ms) to the estimate sampled for it (ms, -1
	// for none), for the estimate error of admissions of sessions that
	// joined in it.
	est map[int64]int64
	// pending holds admissions whose join bucket's estimate is not known
	// yet; Flush looks them up in the ledger.
	pending []pendingAdmission
	// active is the latest time (unix ms) of this process's own event in
	// the room or of a Summary of it: the room is sampled while that is
	// within StatsKeep.
	active  int64
	deleted bool
}

// pendingAdmission is an admission waiting for its join bucket's estimate.
type pendingAdmission struct {
	join int64 // the join's bucket
	at   int64 // the admission's bucket
	wait int64 // ms
}

// New returns a Recorder of store's events into ledger (usually the same
// store) and starts its background sampling unless opts.Sample < 0. Call
// Close to stop it.
func New(store waitroom.Store, ledger waitroom.Ledger, opts Options) *Recorder {
	if opts.Sample == 0 {
		opts.Sample = time.Second
	}
	if opts.Clock == nil {
		opts.Clock = waitroom.SystemClock{}
	}
	r := &Recorder{
		store:  store,
		ledger: ledger,
		opts:   opts,
		log:    opts.Logger,
		rooms:  make(map[string]*roomState),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.cancel = store.Subscribe(r.Observe)
	if opts.Sample > 0 {
		go r.run()
	} else {
		close(r.done)
	}
	return r
}

func (r *Recorder) run() {
	defer close(r.done)
	t := time.NewTicker(r.opts.Sample)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), max(r.opts.Sample, 5*time.Second))
			if err := r.Flush(ctx); err != nil {
				r.log.Warn("roomstats: writing stats", "err", err)
			}
			cancel()
		}
	}
}

// Close stops following the store, writes what is counted and stops the
// background sampling.
func (r *Recorder) Close() error {
	var err error
	r.once.Do(func() {
		r.cancel()
		close(r.stop)
		<-r.done
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = r.Flush(ctx)
	})
	return err
}

// Observe counts an event. The store calls it (New subscribes it) on its
// write path: it never blocks on I/O and does not allocate once the room
// is known.
func (r *Recorder) Observe(ev waitroom.Event) {
	if ev.Remote {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rs := r.rooms[ev.Room]
	if rs == nil {
		rs = &roomState{est: make(map[int64]int64)}
		r.rooms[ev.Room] = rs
	}
	if ev.Kind == waitroom.EventDeleted {
		rs.deleted = true
		return
	}
	rs.deleted = false
	at := waitroom.StatsBucketMs(ev.At)
	rs.active = max(rs.active, ev.At.UnixMilli())
	var b *waitroom.StatsBucket
	for i := range ev.Changes {
		c := &ev.Changes[i]
		if c.From != "" && c.From != waitroom.StatusWaiting {
			continue
		}
		if b == nil {
			b = rs.bucket(at)
		}
		if c.From == "" {
			b.Joins++
			continue
		}
		switch c.Session.Status {
		case waitroom.StatusActive, waitroom.StatusServed, waitroom.StatusInvited:
			b.Admissions++
			admitted := c.Session.AdmittedAt
			if admitted.IsZero() {
				admitted = c.Session.EndedAt
			}
			if admitted.IsZero() {
				admitted = ev.At
			}
			wait := admitted.Sub(c.Session.JoinedAt)
			b.Waits[waitroom.WaitBin(wait)]++
			rs.estimateError(b, waitroom.StatsBucketMs(c.Session.JoinedAt), at, wait.Milliseconds())
		case waitroom.StatusLeft, waitroom.StatusExpired:
			b.Abandons++
		}
	}
}

// estimateError adds an admission's estimate error to b when the estimate
// of its join bucket is known, and keeps it for Flush to look up when not.
func (rs *roomState) estimateError(b *waitroom.StatsBucket, join, at, wait int64) {
	if e, ok := rs.est[join]; ok {
		addError(b, e, wait)
		return
	}
	if join > at-keep && len(rs.pending) < maxPending {
		rs.pending = append(rs.pending, pendingAdmission{join: join, at: at, wait: wait})
	}
}

// addError adds the error of a wait against estimate e (ms, -1 for none).
func addError(b *waitroom.StatsBucket, e, wait int64) {
	if e < 0 {
		return
	}
	d := wait - e
	b.EstErrMs += d
	b.EstErrAbsMs += max(d, -d)
	b.EstRelErrBp += RelErrorBp(e, wait)
	b.EstN++
}

// RelErrorBp is the error of an estimate e of a wait against the actual
// wait (both in ms) relative to the actual wait, taken as at least a second
// (the resolution of an ETA), in basis points: the definition `waitroom
// load` reports too.
func RelErrorBp(e, wait int64) int64 {
	d := wait - e
	return 10_000 * max(d, -d) / max(wait, 1000)
}

// bucket returns the counts of bucket at (unix ms) not yet written.
func (rs *roomState) bucket(at int64) *waitroom.StatsBucket {
	if rs.has && at == rs.curMs {
		return &rs.cur
	}
	if !rs.has || at > rs.curMs {
		if rs.has && !empty(&rs.cur) {
			rs.cur.At = time.UnixMilli(rs.curMs).UTC()
			rs.older = append(rs.older, rs.cur)
		}
		rs.cur = waitroom.StatsBucket{}
		rs.curMs, rs.has = at, true
		return &rs.cur
	}
	// An earlier bucket than the current one: a late event, or an
	// estimate error resolved after its bucket passed.
	t := time.UnixMilli(at).UTC()
	for i := range rs.older {
		if rs.older[i].At.Equal(t) {
			return &rs.older[i]
		}
	}
	rs.older = append(rs.older, waitroom.StatsBucket{At: t})
	return &rs.older[len(rs.older)-1]
}

// empty reports whether b holds nothing to write.
func empty(b *waitroom.StatsBucket) bool {
	return *b == waitroom.StatsBucket{At: b.At}
}

// Flush samples the gauges of the rooms that had events or were asked for
// within StatsKeep, writes every bucket counted so far to the ledger, and
// looks up the estimates that admissions wait for. The background loop
// calls it every Options.Sample; counts it could not write are kept for the
// next Flush.
func (r *Recorder) Flush(ctx context.Context) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	now := r.opts.Clock.Now()
	nowMs := waitroom.StatsBucketMs(now)

	// Sample outside the lock: the store and the estimator take their time.
	r.mu.Lock()
	var names []string
	for name, rs := range r.rooms {
		if !rs.deleted && rs.active > now.UnixMilli()-keep {
			names = append(names, name)
		}
	}
	r.mu.Unlock()
	type sample struct {
		room      waitroom.Room
		gone      bool
		eta       int64
		nameIndex int
	}
	samples := make([]sample, 0, len(names))
	var errs []error
	for i, name := range names {
		room, err := r.store.Room(ctx, name)
		switch {
		case waitroom.ErrorCode(err) == waitroom.CodeRoomNotFound:
			samples = append(samples, sample{gone: true, nameIndex: i})
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		s := sample{room: room, eta: -1, nameIndex: i}
		if room.Waiting > 0 && r.opts.ETA != nil {
			if d, ok := r.opts.ETA(name, int64(room.Waiting), now); ok {
				s.eta = d.Milliseconds()
			}
		}
		samples = append(samples, s)
	}

	// Apply the samples, then look up the estimates pending admissions
	// wait for, so their errors go out with this write.
	var lookups []string
	r.mu.Lock()
	for _, s := range samples {
		rs := r.rooms[names[s.nameIndex]]
		if rs == nil {
			continue
		}
		if s.gone {
			rs.deleted = true
			continue
		}
		b := rs.bucket(nowMs)
		b.HasGauges, b.Waiting, b.Active, b.ETALastMs = true, s.room.Waiting, s.room.Active, s.eta
		rs.est[nowMs] = s.eta
	}
	for name, rs := range r.rooms {
		if len(rs.pending) > 0 && !rs.deleted {
			lookups = append(lookups, name)
		}
	}
	r.mu.Unlock()
	for _, name := range lookups {
		if err := r.resolve(ctx, name, nowMs); err != nil {
			errs = append(errs, err)
		}
	}

	// Take what is to be written.
	type write struct {
		room string
		b    waitroom.StatsBucket
	}
	var writes []write
	r.mu.Lock()
	for name, rs := range r.rooms {
		for _, b := range rs.older {
			writes = append(writes, write{name, b})
		}
		rs.older = rs.older[:0]
		if rs.has && !empty(&rs.cur) {
			rs.cur.At = time.UnixMilli(rs.curMs).UTC()
			writes = append(writes, write{name, rs.cur})
			rs.cur = waitroom.StatsBucket{}
		}
		for t := range rs.est {
			if t <= nowMs-keep {
				delete(rs.est, t)
			}
		}
		if rs.deleted || (rs.active <= now.UnixMilli()-keep && len(rs.pending) == 0) {
			delete(r.rooms, name)
		}
	}
	r.mu.Unlock()

	var failed []write
	for _, w := range writes {
		if err := r.ledger.AddStats(ctx, w.room, w.b); err != nil {
			errs = append(errs, err)
			failed = append(failed, w)
		}
	}
	if len(failed) > 0 {
		r.mu.Lock()
		for _, w := range failed {
			rs := r.rooms[w.room]
			if rs == nil || waitroom.StatsBucketMs(w.b.At) <= nowMs-keep {
				continue
			}
			rs.older = append(rs.older, w.b)
		}
		r.mu.Unlock()
	}
	return errors.Join(errs...)
}

// resolve reads the estimates room's pending admissions need from the
// ledger and adds the errors it can to the buckets of their admissions,
// for the next Flush to write. An estimate missing from a bucket that
// has passed (two steps ago or more) will not come: those admissions go
// without one.
func (r *Recorder) resolve(ctx context.Context, room string, nowMs int64) error {
	r.mu.Lock()
	rs := r.rooms[room]
	if rs == nil || len(rs.pending) == 0 {
		r.mu.Unlock()
		return nil
	}
	from := rs.pending[0].join
	for _, p := range rs.pending {
		from = min(from, p.join)
	}
	r.mu.Unlock()
	buckets, err := r.ledger.Stats(ctx, room, time.UnixMilli(from))
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rs = r.rooms[room]
	if rs == nil {
		return nil
	}
	for _, b := range buckets {
		if b.HasGauges {
			if _, ok := rs.est[waitroom.StatsBucketMs(b.At)]; !ok {
				rs.est[waitroom.StatsBucketMs(b.At)] = b.ETALastMs
			}
		}
	}
	kept := rs.pending[:0]
	for _, p := range rs.pending {
		if e, ok := rs.est[p.join]; ok {
			addError(rs.bucket(p.at), e, p.wait)
		} else if p.join > nowMs-2*step {
			kept = append(kept, p)
		}
	}
	rs.pending = kept
	return nil
}

// watch marks room as asked for at now, so it is sampled.
func (r *Recorder) watch(room string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs := r.rooms[room]
	if rs == nil {
		rs = &roomState{est: make(map[int64]int64)}
		r.rooms[room] = rs
	}
	rs.active = max(rs.active, now.UnixMilli())
}
