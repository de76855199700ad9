package roomstats_test

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/eta"
	"github.com/waitroom/waitroom/internal/roomstats"
	"github.com/waitroom/waitroom/memstore"
)

// t0 starts every test: a whole bucket, in the future (so a Redis ledger
// keeps what the tests write).
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const sec = time.Second

// etaLog is a test's Options.ETA: 30 s a position, remembering each call.
type etaLog struct {
	mu    sync.Mutex
	calls []int64 // positions asked for
}

func (e *etaLog) eta(room string, position int64, now time.Time) (time.Duration, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, position)
	return time.Duration(position) * 30 * sec, true
}

// fixture is a memstore with a Recorder on it, driven by a manual clock.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	s     *memstore.Store
	clock *waitroom.ManualClock
	rec   *roomstats.Recorder
	etas  *etaLog
}

func newFixture(t *testing.T) *fixture {
	s := memstore.New()
	t.Cleanup(func() { _ = s.Close() })
	f := &fixture{t: t, ctx: t.Context(), s: s, clock: waitroom.NewManualClock(t0), etas: &etaLog{}}
	f.rec = f.recorder()
	return f
}

// recorder starts a Recorder on f's store that samples only when flushed.
func (f *fixture) recorder() *roomstats.Recorder {
	rec := roomstats.New(f.s, f.s, roomstats.Options{ETA: f.etas.eta, Sample: -1, Clock: f.clock})
	f.t.Cleanup(func() { _ = rec.Close() })
	return rec
}

func (f *fixture) put(room string, cfg waitroom.RoomConfig) {
	f.t.Helper()
	if _, _, err := f.s.PutRoom(f.ctx, room, cfg, f.clock.Now()); err != nil {
		f.t.Fatalf("PutRoom: %v", err)
	}
}

// join joins room at d after t0.
func (f *fixture) join(room string, d time.Duration) waitroom.Session {
	f.t.Helper()
	f.clock.Set(at(d))
	s, err := f.s.Join(f.ctx, room, "", at(d))
	if err != nil {
		f.t.Fatalf("Join at %s: %v", d, err)
	}
	return s
}

func (f *fixture) leave(room string, s waitroom.Session, d time.Duration) {
	f.t.Helper()
	f.clock.Set(at(d))
	if _, err := f.s.Leave(f.ctx, room, s.ID, waitroom.ReasonLeft, at(d)); err != nil {
		f.t.Fatalf("Leave at %s: %v", d, err)
	}
}

// read returns s as the store has it now (without counting as presence).
func (f *fixture) read(room string, s waitroom.Session) waitroom.Session {
	f.t.Helper()
	got, err := f.s.Sessions(f.ctx, room, []string{s.ID})
	if err != nil || got[0].ID == "" {
		f.t.Fatalf("Sessions(%s): %v", s.ID, err)
	}
	return got[0]
}

func (f *fixture) flush(d time.Duration) {
	f.t.Helper()
	f.clock.Set(at(d))
	if err := f.rec.Flush(f.ctx); err != nil {
		f.t.Fatalf("Flush at %s: %v", d, err)
	}
}

// buckets returns room's buckets by their time after t0.
func (f *fixture) buckets(room string) map[time.Duration]waitroom.StatsBucket {
	f.t.Helper()
	bs, err := f.s.Stats(f.ctx, room, time.Time{})
	if err != nil {
		f.t.Fatalf("Stats: %v", err)
	}
	out := make(map[time.Duration]waitroom.StatsBucket, len(bs))
	for _, b := range bs {
		out[b.At.Sub(t0)] = b
	}
	return out
}

// counts is what a test expects of one bucket's counters.
type counts struct {
	joins, admissions, abandons int64
}

// estErr is what the test expects of an admission's estimate error.
type estErr struct {
	sum, abs, n int64
}

// addErr adds the error of a wait against an estimate, as the test
// computes it.
func (e *estErr) add(wait, estimate time.Duration) {
	d := (wait - estimate).Milliseconds()
	e.sum += d
	e.abs += max(d, -d)
	e.n++
}

func wait(s waitroom.Session) time.Duration { return s.AdmittedAt.Sub(s.JoinedAt) }

// TestCountsWaitsAndEstimates drives a room of capacity 2 and checks every
// bucket, then the Summary and the rates, against values computed here
// from the sessions the store returned.
func TestCountsWaitsAndEstimates(t *testing.T) {
	f := newFixture(t)
	f.put("r", waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 2})
	var s [8]waitroom.Session
	for i := 1; i <= 5; i++ {
		s[i] = f.join("r", time.Duration(i)*sec) // 1, 2 active; 3, 4, 5 wait
	}
	f.flush(6 * sec) // waiting 3, active 2: the last is told 90 s
	f.leave("r", s[1], 25*sec)
	s[3] = f.read("r", s[3]) // admitted at 25 s
	f.leave("r", s[4], 41*sec)
	f.leave("r", s[2], 72*sec)
	s[5] = f.read("r", s[5]) // admitted at 72 s
	s[6] = f.join("r", 75*sec)
	f.flush(76 * sec) // waiting 1: told 30 s
	f.leave("r", s[3], 100*sec)
	s[6] = f.read("r", s[6])
	s[7] = f.join("r", 130*sec)
	f.leave("r", s[5], 131*sec) // s7 admitted after 1 s, before any sample of its bucket
	s[7] = f.read("r", s[7])
	f.flush(135 * sec) // nobody waits: no estimate, so s7 has no estimate error
	f.flush(140 * sec)

	for i, st := range []waitroom.Status{3: waitroom.StatusActive, 5: waitroom.StatusActive, 6: waitroom.StatusActive, 7: waitroom.StatusActive} {
		if st != "" && s[i].Status != st {
			t.Fatalf("session %d is %s, want %s", i, s[i].Status, st)
		}
	}
	if got := f.etas.calls; !slices.Equal(got, []int64{3, 1}) {
		t.Fatalf("ETA asked for positions %v, want [3 1] (the last in line, when someone waits)", got)
	}
	var e20, e70, e100 estErr
	e20.add(wait(s[3]), 90*sec)
	e70.add(wait(s[5]), 90*sec)
	e100.add(wait(s[6]), 30*sec)
	want := map[time.Duration]struct {
		c       counts
		waits   []time.Duration
		est     estErr
		gauges  bool
		w, a    int
		etaLast int64
	}{
		0:         {c: counts{joins: 5}, gauges: true, w: 3, a: 2, etaLast: 90_000},
		20 * sec:  {c: counts{admissions: 1}, waits: []time.Duration{wait(s[3])}, est: e20},
		40 * sec:  {c: counts{abandons: 1}},
		70 * sec:  {c: counts{joins: 1, admissions: 1}, waits: []time.Duration{wait(s[5])}, est: e70, gauges: true, w: 1, a: 2, etaLast: 30_000},
		100 * sec: {c: counts{admissions: 1}, waits: []time.Duration{wait(s[6])}, est: e100},
		130 * sec: {c: counts{joins: 1, admissions: 1}, waits: []time.Duration{wait(s[7])}, gauges: true, w: 0, a: 2, etaLast: -1},
		140 * sec: {gauges: true, w: 0, a: 2, etaLast: -1},
	}
	got := f.buckets("r")
	if len(got) != len(want) {
		t.Fatalf("%d buckets, want %d: %v", len(got), len(want), got)
	}
	for d, w := range want {
		b, ok := got[d]
		if !ok {
			t.Fatalf("no bucket at %s", d)
		}
		var h [waitroom.WaitBins]int64
		for _, x := range w.waits {
			h[waitroom.WaitBin(x)]++
		}
		if (counts{b.Joins, b.Admissions, b.Abandons}) != w.c || b.Waits != h ||
			(estErr{b.EstErrMs, b.EstErrAbsMs, b.EstN}) != w.est || b.HasGauges != w.gauges ||
			(w.gauges && (b.Waiting != w.w || b.Active != w.a || b.ETALastMs != w.etaLast)) {
			t.Fatalf("bucket at %s = %+v\nwant %+v", d, b, w)
		}
	}

	sum, err := f.rec.Summary(f.ctx, "r", at(141*sec))
	if err != nil {
		t.Fatalf("Summary: %v", err)
	}
	if len(sum.Series) != 360 || sum.StepSeconds != 10 || !sum.Series[359].T.Equal(at(140*sec)) {
		t.Fatalf("Summary series: %d points, step %d, last at %s; want 360, 10, %s", len(sum.Series), sum.StepSeconds, sum.Series[len(sum.Series)-1].T, at(140*sec))
	}
	first := 359 - 14 // the point at t0
	for i, p := range sum.Series {
		d := p.T.Sub(t0)
		w := want[d]
		waiting, active := 0, 0
		switch {
		case d >= 140*sec:
			active = 2
		case d >= 130*sec:
			active = 2
		case d >= 70*sec:
			waiting, active = 1, 2
		case d >= 0:
			waiting, active = 3, 2
		}
		if p.Joins != w.c.joins || p.Admissions != w.c.admissions || p.Abandons != w.c.abandons || p.Waiting != waiting || p.Active != active {
			t.Fatalf("point %d (%s) = %+v, want counts %+v, waiting %d, active %d", i, d, p, w.c, waiting, active)
		}
		if i < first && (p.Waiting != 0 || p.Joins != 0) {
			t.Fatalf("point %d before any data = %+v", i, p)
		}
	}
	waits := []time.Duration{wait(s[3]), wait(s[5]), wait(s[6]), wait(s[7])}
	slices.Sort(waits)
	if sum.Waits.Count != 4 || sum.Waits.WindowSeconds != 900 {
		t.Fatalf("Summary waits = %+v, want 4 in 900 s", sum.Waits)
	}
	for _, q := range []struct {
		got  int64
		rank int // nearest rank among the 4
	}{{sum.Waits.P50Ms, 2}, {sum.Waits.P90Ms, 4}, {sum.Waits.P99Ms, 4}} {
		exact := waits[q.rank-1]
		if rel := math.Abs(float64(q.got)-float64(exact.Milliseconds())) / float64(exact.Milliseconds()); rel > 0.052 {
			t.Fatalf("percentile of rank %d = %d ms, exact %s", q.rank, q.got, exact)
		}
	}
	all := estErr{e20.sum + e70.sum + e100.sum, e20.abs + e70.abs + e100.abs, 3}
	wantMean := float64(all.sum) / 3 / 1000
	wantAbs := float64(all.abs) / 3 / 1000
	if e := sum.Estimate; e.Count != 3 || math.Abs(e.MeanErrorSeconds-wantMean) > 0.001 || math.Abs(e.MeanAbsErrorSeconds-wantAbs) > 0.001 || e.LastETASeconds != nil {
		t.Fatalf("Summary estimate = %+v, want 3 errors, mean %.3f s, mean abs %.3f s, no last ETA", e, wantMean, wantAbs)
	}
	b, _ := json.Marshal(sum.Latest())
	var decoded map[string]any
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	if series := decoded["series"].([]any); len(series) != 1 || decoded["estimate"].(map[string]any)["last_eta_seconds"] != nil {
		t.Fatalf("Latest JSON = %s; want one point and a null last_eta_seconds", b)
	}

	rates, err := f.rec.Overview(f.ctx, "r", at(141*sec))
	if err != nil {
		t.Fatalf("Overview: %v", err)
	}
	// The minute before the 140 s bucket: 80 s to 139.999 s.
	if rates != (roomstats.Rates{JoinsPerMinute: 1, AdmissionsPerMinute: 2}) {
		t.Fatalf("Overview at 141 s = %+v, want 1 join and 2 admissions a minute", rates)
	}
}

// TestEstimateFromLedger checks that an admission whose join bucket this
// Recorder never sampled (it started after) gets its estimate from the
// ledger, where the Recorder before it wrote it.
func TestEstimateFromLedger(t *testing.T) {
	f := newFixture(t)
	f.put("r", waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 1})
	a := f.join("r", 1*sec)
	b := f.join("r", 2*sec)
	f.flush(3 * sec) // b is told 30 s
	if err := f.rec.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	f.rec = f.recorder() // a restart
	f.leave("r", a, 50*sec)
	b = f.read("r", b)
	f.flush(51 * sec)
	got := f.buckets("r")[50*sec]
	var want estErr
	want.add(wait(b), 30*sec)
	if got.Admissions != 1 || (estErr{got.EstErrMs, got.EstErrAbsMs, got.EstN}) != want {
		t.Fatalf("bucket at 50 s = %+v, want 1 admission and estimate error %+v", got, want)
	}
}

// TestManualRoom counts services (waiting → served) as admissions.
func TestManualRoom(t *testing.T) {
	f := newFixture(t)
	f.put("desk", waitroom.RoomConfig{Mode: waitroom.ModeManual, Capacity: 0})
	x := f.join("desk", 0)
	y := f.join("desk", 1*sec)
	f.clock.Set(at(12 * sec))
	served, err := f.s.Advance(f.ctx, "desk", 2, at(12*sec))
	if err != nil || len(served) != 2 {
		t.Fatalf("Advance = %v, %v", served, err)
	}
	f.flush(13 * sec)
	bs := f.buckets("desk")
	var h [waitroom.WaitBins]int64
	h[waitroom.WaitBin(12*sec-x.JoinedAt.Sub(t0))]++
	h[waitroom.WaitBin(12*sec-y.JoinedAt.Sub(t0))]++
	if bs[0].Joins != 2 || bs[10*sec].Admissions != 2 || bs[10*sec].Waits != h || bs[10*sec].Abandons != 0 {
		t.Fatalf("buckets = %+v, want 2 joins, then 2 admissions with waits of 12 s and 11 s", bs)
	}
}

// TestRemoteEventsAreNotCounted feeds a Recorder another process's event:
// it counts nothing, since that process counts it.
func TestRemoteEventsAreNotCounted(t *testing.T) {
	f := newFixture(t)
	f.put("r", waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 1})
	f.rec.Observe(waitroom.Event{Room: "r", Kind: waitroom.EventSessions, At: at(sec), Remote: true,
		Changes: []waitroom.Change{{From: "", Session: waitroom.Session{Status: waitroom.StatusWaiting}}}})
	f.join("r", 2*sec)
	f.flush(3 * sec)
	if b := f.buckets("r")[0]; b.Joins != 1 {
		t.Fatalf("joins = %d, want 1 (the remote one is not counted)", b.Joins)
	}
}

// TestDeletedRoom stops sampling a deleted room after writing its counts.
func TestDeletedRoom(t *testing.T) {
	f := newFixture(t)
	f.put("gone", waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 1})
	f.join("gone", sec)
	f.join("gone", 2*sec)
	f.clock.Set(at(3 * sec))
	if err := f.s.DeleteRoom(f.ctx, "gone", true, at(3*sec)); err != nil {
		t.Fatalf("DeleteRoom: %v", err)
	}
	f.flush(4 * sec)
	f.flush(15 * sec)
	bs := f.buckets("gone")
	if bs[0].Joins != 2 || len(bs) != 1 || bs[0].HasGauges {
		t.Fatalf("buckets of a deleted room = %+v, want its 2 joins and no samples", bs)
	}
	if len(f.etas.calls) != 0 {
		t.Fatalf("ETA asked %d times for a deleted room", len(f.etas.calls))
	}
}

// TestBackgroundFlush lets the Recorder write by itself.
func TestBackgroundFlush(t *testing.T) {
	s := memstore.New()
	defer s.Close()
	rec := roomstats.New(s, s, roomstats.Options{Sample: 10 * time.Millisecond})
	defer rec.Close()
	now := time.Now()
	if _, _, err := s.PutRoom(t.Context(), "r", waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 5}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Join(t.Context(), "r", "", now); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		bs, err := s.Stats(t.Context(), "r", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) > 0 && bs[len(bs)-1].HasGauges && bs[0].Joins == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no join and sample written after 10 s: %+v", bs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCloseFlushes checks that Close writes what was counted.
func TestCloseFlushes(t *testing.T) {
	f := newFixture(t)
	f.put("r", waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 1})
	f.join("r", sec)
	if err := f.rec.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if b := f.buckets("r")[0]; b.Joins != 1 {
		t.Fatalf("after Close: %d joins written, want 1", b.Joins)
	}
}

// admissionEvent is one admission, as a store's event carries it.
func admissionEvent(room string, joined, admitted time.Time) waitroom.Event {
	return waitroom.Event{Room: room, Kind: waitroom.EventSessions, At: admitted, Waiting: 10, Active: 5,
		Changes: []waitroom.Change{{From: waitroom.StatusWaiting, Session: waitroom.Session{
			Room: room, Status: waitroom.StatusActive, Ticket: 7, JoinedAt: joined, AdmittedAt: admitted}}}}
}

// warmRecorder returns a Recorder that knows room "r" and the estimate of
// the bucket at t0, so an admission of a session that joined then takes
// the path every admission takes once the room runs.
func warmRecorder(tb testing.TB) (*roomstats.Recorder, waitroom.Event) {
	s := memstore.New()
	tb.Cleanup(func() { _ = s.Close() })
	clock := waitroom.NewManualClock(at(sec))
	rec := roomstats.New(s, s, roomstats.Options{Sample: -1, Clock: clock, ETA: (&etaLog{}).eta})
	tb.Cleanup(func() { _ = rec.Close() })
	ctx := context.Background()
	if _, _, err := s.PutRoom(ctx, "r", waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 0}, at(0)); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.Join(ctx, "r", "", at(0)); err != nil {
		tb.Fatal(err)
	}
	if err := rec.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
	ev := admissionEvent("r", at(500*time.Millisecond), at(2*sec))
	rec.Observe(ev)
	return rec, ev
}

// TestObserveDoesNotAllocate guards the store's write path.
func TestObserveDoesNotAllocate(t *testing.T) {
	rec, ev := warmRecorder(t)
	if n := testing.AllocsPerRun(1000, func() { rec.Observe(ev) }); n != 0 {
		t.Fatalf("Observe allocates %v times an event, want 0", n)
	}
}

// BenchmarkObserve measures the cost the store pays per event: one
// admission, with its wait and estimate error.
func BenchmarkObserve(b *testing.B) {
	rec, ev := warmRecorder(b)
	b.ReportAllocs()
	for b.Loop() {
		rec.Observe(ev)
	}
}

// BenchmarkSecondAt1000 is one second of a room admitting 1,000 people a
// second: 1,000 admission events, then the Flush that samples the room
// and writes its bucket (to memstore, so this is the Recorder's own CPU,
// not a backend's). Its time per op is the CPU a second such a room
// costs.
func BenchmarkSecondAt1000(b *testing.B) {
	s := memstore.New()
	b.Cleanup(func() { _ = s.Close() })
	clock := waitroom.NewManualClock(at(0))
	rec := roomstats.New(s, s, roomstats.Options{Sample: -1, Clock: clock, ETA: (&etaLog{}).eta})
	b.Cleanup(func() { _ = rec.Close() })
	ctx := context.Background()
	if _, _, err := s.PutRoom(ctx, "r", waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 0}, at(0)); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Join(ctx, "r", "", at(0)); err != nil {
		b.Fatal(err)
	}
	ev := admissionEvent("r", at(0), at(0))
	c := &ev.Changes[0].Session
	b.ReportAllocs()
	sec := 0
	for b.Loop() {
		sec++
		for i := range 1000 {
			admitted := at(time.Duration(sec)*time.Second + time.Duration(i)*time.Millisecond)
			ev.At, c.AdmittedAt, c.JoinedAt = admitted, admitted, admitted.Add(-5*time.Second)
			rec.Observe(ev)
		}
		clock.Set(at(time.Duration(sec+1) * time.Second))
		if err := rec.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEstimatorETA checks the adapter of an eta.Estimator: no estimate
// without admissions, then the one Fill gives a session at that position.
func TestEstimatorETA(t *testing.T) {
	s := memstore.New()
	defer s.Close()
	est := eta.New(s)
	defer est.Close()
	f := roomstats.EstimatorETA(est)
	ctx := t.Context()
	if _, _, err := s.PutRoom(ctx, "r", waitroom.RoomConfig{Mode: waitroom.ModeAuto, Capacity: 1}, at(0)); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 6 {
		x, err := s.Join(ctx, "r", "", at(time.Duration(i)*sec))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, x.ID)
	}
	if _, ok := f("r", 3, at(6*sec)); ok {
		t.Fatal("an estimate before any admission")
	}
	for i := range 3 {
		if _, err := s.Leave(ctx, "r", ids[i], waitroom.ReasonLeft, at(time.Duration(10+30*i)*sec)); err != nil {
			t.Fatal(err)
		}
	}
	// Three departures over a minute: the least an estimate rests on.
	now := at(75 * sec)
	got, ok := f("r", 2, now)
	want := waitroom.Session{Room: "r", Status: waitroom.StatusWaiting, Position: 2}
	est.Fill(&want, now)
	if !ok || want.ETA == nil || got != time.Duration(want.ETA.Seconds)*time.Second {
		t.Fatalf("EstimatorETA = %s, %v; want %+v", got, ok, want.ETA)
	}
}
