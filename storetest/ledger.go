package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// Ledger runs the conformance suite of waitroom.Ledger: the audit log
// (newest first, paging, the session filter, the cap of AuditKeep per
// room), stats buckets (counters add, gauges set, since, order, expiry
// relative to the newest bucket) and console sign-ins. Each subtest runs on
// a fresh ledger from open, which registers its own cleanup. Times start at
// the suite's fixed instant (in the future, so a backend that must turn a
// bucket's time into a wall-clock expiry keeps it); nothing sleeps.
func Ledger(t *testing.T, open func(t *testing.T) waitroom.Ledger, opts ...LedgerOption) {
	c := ledgerConfig{auditKeep: waitroom.AuditKeep}
	for _, o := range opts {
		o(&c)
	}
	for _, tc := range ledgerSuite {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(&ledgerFixture{t: t, l: open(t), auditKeep: c.auditKeep})
		})
	}
}

// LedgerOption configures the Ledger suite.
type LedgerOption func(*ledgerConfig)

type ledgerConfig struct{ auditKeep int }

// WithAuditKeep tells the suite that the ledger under test keeps n audit
// entries a room instead of waitroom.AuditKeep: a backend whose every
// entry is a disk commit lowers its cap in tests to stay fast.
func WithAuditKeep(n int) LedgerOption { return func(c *ledgerConfig) { c.auditKeep = n } }

var ledgerSuite = []struct {
	name string
	fn   func(*ledgerFixture)
}{
	{"AuditNewestFirst", testAuditNewestFirst},
	{"AuditPaging", testAuditPaging},
	{"AuditSessionFilter", testAuditSessionFilter},
	{"AuditInvalid", testAuditInvalid},
	{"AuditCap", testAuditCap},
	{"StatsMerge", testStatsMerge},
	{"StatsSinceAndOrder", testStatsSinceAndOrder},
	{"StatsExpiry", testStatsExpiry},
	{"StatsConcurrentMerge", testStatsConcurrentMerge},
	{"ConsoleSessions", testConsoleSessions},
}

type ledgerFixture struct {
	t         *testing.T
	l         waitroom.Ledger
	auditKeep int
}

// entry returns a valid audit entry of room at d after the suite's start.
func entry(room string, d time.Duration, action string) waitroom.AuditEntry {
	return waitroom.AuditEntry{At: at(d), Room: room, Actor: waitroom.AuditActorConsole, Action: action}
}

func (f *ledgerFixture) addAudit(e waitroom.AuditEntry) {
	f.t.Helper()
	if err := f.l.AddAudit(f.t.Context(), e); err != nil {
		f.t.Fatalf("AddAudit(%s %s at %s) error = %v", e.Room, e.Action, rel(e.At), err)
	}
}

func (f *ledgerFixture) audit(room, session string, page waitroom.Page) ([]waitroom.AuditEntry, string) {
	f.t.Helper()
	out, next, err := f.l.Audit(f.t.Context(), room, session, page)
	if err != nil {
		f.t.Fatalf("Audit(%q, session %q, %+v) error = %v", room, session, page, err)
	}
	return out, next
}

// auditAll reads every page of room's audit log, limit entries a page,
// checking that the cursors end.
func (f *ledgerFixture) auditAll(room, session string, limit int) []waitroom.AuditEntry {
	f.t.Helper()
	var all []waitroom.AuditEntry
	after := ""
	for pages := 0; ; pages++ {
		if pages > f.auditKeep+1 {
			f.t.Fatalf("Audit(%q) paging does not end", room)
		}
		out, next := f.audit(room, session, waitroom.Page{After: after, Limit: limit})
		if len(out) > limit {
			f.t.Fatalf("Audit(%q, limit %d) returned %d entries", room, limit, len(out))
		}
		all = append(all, out...)
		if next == "" {
			return all
		}
		if len(out) == 0 || next != out[len(out)-1].ID {
			f.t.Fatalf("Audit(%q) next = %q, want the last entry's ID (page of %d)", room, next, len(out))
		}
		after = next
	}
}

// wantNewestFirst checks that IDs are set, unique and sort (as strings)
// from newest to oldest.
func (f *ledgerFixture) wantNewestFirst(what string, es []waitroom.AuditEntry) {
	f.t.Helper()
	for i, e := range es {
		if e.ID == "" {
			f.t.Fatalf("%s: entry %d has no ID", what, i)
		}
		if i > 0 && !(e.ID < es[i-1].ID) {
			f.t.Fatalf("%s: entry %d has ID %q, not before the previous %q", what, i, e.ID, es[i-1].ID)
		}
	}
}

func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("detail %q is not JSON: %v", raw, err)
	}
	return b.String()
}

// sameEntry fails unless got is want as stored (the ID aside).
func (f *ledgerFixture) sameEntry(what string, got, want waitroom.AuditEntry) {
	f.t.Helper()
	if !got.At.Equal(want.At) || got.Room != want.Room || got.Actor != want.Actor || got.Action != want.Action ||
		got.Session != want.Session || got.Ticket != want.Ticket || got.Reason != want.Reason ||
		compactJSON(f.t, got.Detail) != compactJSON(f.t, want.Detail) {
		f.t.Fatalf("%s: got %+v (detail %s), want %+v (detail %s)", what, got, got.Detail, want, want.Detail)
	}
}

func testAuditNewestFirst(f *ledgerFixture) {
	want := []waitroom.AuditEntry{
		entry("r", 0, waitroom.AuditPause),
		{At: at(time.Second + 7*msec), Room: "r", Actor: waitroom.AuditActorAPI, Action: waitroom.AuditRevoke,
			Session: "AAAAAAAAAAHDsdq6DDqJi_W4Q_VAfS3K", Ticket: 7, Reason: "a bot, says the shop ✓"},
		{At: at(2 * time.Second), Room: "r", Actor: waitroom.AuditActorConsole, Action: waitroom.AuditConfig,
			Detail: json.RawMessage(`{"capacity": {"from": 2, "to": 5}}`)},
		entry("r", 3*time.Second, waitroom.AuditResume),
	}
	for _, e := range want {
		f.addAudit(e)
	}
	f.addAudit(entry("other", 0, waitroom.AuditDelete))
	got, next := f.audit("r", "", waitroom.Page{})
	if len(got) != len(want) || next != "" {
		f.t.Fatalf("Audit(r) = %d entries, next %q; want %d, next \"\"", len(got), next, len(want))
	}
	f.wantNewestFirst("Audit(r)", got)
	for i := range got {
		f.sameEntry(fmt.Sprintf("Audit(r)[%d]", i), got[i], want[len(want)-1-i])
	}
	if other, _ := f.audit("other", "", waitroom.Page{}); len(other) != 1 || other[0].Action != waitroom.AuditDelete {
		f.t.Fatalf("Audit(other) = %+v, want the one delete", other)
	}
	if none, next := f.audit("nobody", "", waitroom.Page{}); len(none) != 0 || next != "" {
		f.t.Fatalf("Audit(nobody) = %d entries, next %q; want none", len(none), next)
	}
}

func testAuditPaging(f *ledgerFixture) {
	for i := range 25 {
		e := entry("r", time.Duration(i)*time.Second, waitroom.AuditAdvance)
		e.Ticket = int64(i + 1)
		f.addAudit(e)
	}
	for _, limit := range []int{1, 10, 25, 100} {
		all := f.auditAll("r", "", limit)
		if len(all) != 25 {
			f.t.Fatalf("Audit pages of %d: %d entries, want 25", limit, len(all))
		}
		f.wantNewestFirst(fmt.Sprintf("Audit pages of %d", limit), all)
		for i, e := range all {
			if e.Ticket != int64(25-i) {
				f.t.Fatalf("Audit pages of %d: entry %d is ticket %d, want %d", limit, i, e.Ticket, 25-i)
			}
		}
	}
	first, next := f.audit("r", "", waitroom.Page{Limit: 10})
	if len(first) != 10 || next != first[9].ID {
		f.t.Fatalf("first page: %d entries, next %q; want 10 and the tenth's ID", len(first), next)
	}
	// A cursor stays valid after newer entries arrive.
	f.addAudit(entry("r", time.Minute, waitroom.AuditPause))
	second, _ := f.audit("r", "", waitroom.Page{After: next, Limit: 10})
	if len(second) != 10 || second[0].Ticket != 15 {
		f.t.Fatalf("second page after a new entry starts at ticket %d (%d entries), want 15", second[0].Ticket, len(second))
	}
	for _, bad := range []string{"x", "-1", "1e3", "'; DROP TABLE audit"} {
		_, _, err := f.l.Audit(f.t.Context(), "r", "", waitroom.Page{After: bad})
		wantCode(f.t, fmt.Sprintf("Audit after %q", bad), err, waitroom.CodeInvalidRequest)
	}
	_, _, err := f.l.Audit(f.t.Context(), "Bad Name", "", waitroom.Page{})
	wantCode(f.t, "Audit of a bad room name", err, waitroom.CodeInvalidRoomName)
}

func testAuditSessionFilter(f *ledgerFixture) {
	const a, b = "AAAAAAAAAAEaaaaaaaaaaaaaaaaaaaaa", "AAAAAAAAAAIbbbbbbbbbbbbbbbbbbbbb"
	var wantA []int64
	for i := range 30 {
		e := entry("r", time.Duration(i)*time.Second, waitroom.AuditFront)
		e.Ticket = int64(i + 1)
		switch i % 3 {
		case 0:
			e.Session = a
			wantA = append(wantA, e.Ticket)
		case 1:
			e.Session = b
		}
		f.addAudit(e)
	}
	slices.Reverse(wantA)
	for _, limit := range []int{1, 3, 4, 100} {
		got := f.auditAll("r", a, limit)
		f.wantNewestFirst("Audit(session a)", got)
		var tickets []int64
		for _, e := range got {
			if e.Session != a {
				f.t.Fatalf("Audit(session a) returned an entry of session %q", e.Session)
			}
			tickets = append(tickets, e.Ticket)
		}
		if !slices.Equal(tickets, wantA) {
			f.t.Fatalf("Audit(session a, pages of %d) tickets = %v, want %v", limit, tickets, wantA)
		}
	}
	if got, next := f.audit("r", "AAAAAAAAAAMnobodynobodynobodyno", waitroom.Page{}); len(got) != 0 || next != "" {
		f.t.Fatalf("Audit(unknown session) = %d entries, next %q; want none", len(got), next)
	}
}

func testAuditInvalid(f *ledgerFixture) {
	valid := entry("r", 0, waitroom.AuditPause)
	cases := map[string]func(e *waitroom.AuditEntry){
		"no time":         func(e *waitroom.AuditEntry) { e.At = time.Time{} },
		"unknown actor":   func(e *waitroom.AuditEntry) { e.Actor = "root" },
		"unknown action":  func(e *waitroom.AuditEntry) { e.Action = "explode" },
		"long reason":     func(e *waitroom.AuditEntry) { e.Reason = strings.Repeat("x", waitroom.MaxAuditReason+1) },
		"control reason":  func(e *waitroom.AuditEntry) { e.Reason = "two\nlines" },
		"invalid UTF-8":   func(e *waitroom.AuditEntry) { e.Reason = "\xff" },
		"detail not JSON": func(e *waitroom.AuditEntry) { e.Detail = json.RawMessage(`{"a":`) },
		"detail too big": func(e *waitroom.AuditEntry) {
			e.Detail = json.RawMessage(`"` + strings.Repeat("x", waitroom.MaxAuditDetail) + `"`)
		},
		"negative ticket": func(e *waitroom.AuditEntry) { e.Ticket = -1 },
	}
	for name, spoil := range cases {
		e := valid
		spoil(&e)
		wantCode(f.t, "AddAudit with "+name, f.l.AddAudit(f.t.Context(), e), waitroom.CodeInvalidRequest)
	}
	e := valid
	e.Room = "Bad Room"
	wantCode(f.t, "AddAudit with a bad room name", f.l.AddAudit(f.t.Context(), e), waitroom.CodeInvalidRoomName)
	// The edges are accepted.
	e = valid
	e.Reason = strings.Repeat("é", waitroom.MaxAuditReason/2)
	e.Detail = json.RawMessage(`"` + strings.Repeat("x", waitroom.MaxAuditDetail-2) + `"`)
	f.addAudit(e)
	if got, _ := f.audit("r", "", waitroom.Page{}); len(got) != 1 {
		f.t.Fatalf("Audit after refused entries = %d entries, want only the valid one", len(got))
	}
}

func testAuditCap(f *ledgerFixture) {
	const extra = 3
	for i := range f.auditKeep + extra {
		e := entry("r", time.Duration(i)*msec, waitroom.AuditAdvance)
		e.Ticket = int64(i + 1)
		f.addAudit(e)
	}
	f.addAudit(entry("small", 0, waitroom.AuditPause))
	all := f.auditAll("r", "", waitroom.MaxPageLimit)
	if len(all) != f.auditKeep {
		f.t.Fatalf("Audit after %d entries holds %d, want %d", f.auditKeep+extra, len(all), f.auditKeep)
	}
	if newest, oldest := all[0].Ticket, all[len(all)-1].Ticket; newest != int64(f.auditKeep+extra) || oldest != extra+1 {
		f.t.Fatalf("Audit holds tickets %d down to %d, want %d down to %d", newest, oldest, f.auditKeep+extra, extra+1)
	}
	if small, _ := f.audit("small", "", waitroom.Page{}); len(small) != 1 {
		f.t.Fatalf("another room's log holds %d entries, want 1", len(small))
	}
}

func (f *ledgerFixture) addStats(room string, b waitroom.StatsBucket) {
	f.t.Helper()
	if err := f.l.AddStats(f.t.Context(), room, b); err != nil {
		f.t.Fatalf("AddStats(%q, %s) error = %v", room, rel(b.At), err)
	}
}

func (f *ledgerFixture) stats(room string, since time.Time) []waitroom.StatsBucket {
	f.t.Helper()
	out, err := f.l.Stats(f.t.Context(), room, since)
	if err != nil {
		f.t.Fatalf("Stats(%q, %s) error = %v", room, rel(since), err)
	}
	return out
}

// bucketTimes returns the buckets' times relative to the suite's start.
func bucketTimes(bs []waitroom.StatsBucket) []time.Duration {
	out := make([]time.Duration, len(bs))
	for i, b := range bs {
		out[i] = b.At.Sub(base)
	}
	return out
}

func testStatsMerge(f *ledgerFixture) {
	step := waitroom.StatsStep
	// Two processes add their counts to the bucket of 10s..20s, at
	// unaligned times within it.
	p1 := waitroom.StatsBucket{At: at(step + 1234*msec), Joins: 5, Admissions: 3, Abandons: 1,
		EstErrAbsMs: 900, EstErrMs: -300, EstN: 2, EstRelErrBp: 5000}
	p1.Waits[waitroom.WaitBin(2*time.Second)] = 2
	p1.Waits[waitroom.WaitBin(time.Hour)] = 1
	p2 := waitroom.StatsBucket{At: at(2*step - msec), Joins: 7, Admissions: 1, EstErrAbsMs: 100, EstErrMs: 100, EstN: 1, EstRelErrBp: 1000,
		HasGauges: true, Waiting: 40, Active: 2, ETALastMs: 125_000}
	p2.Waits[waitroom.WaitBin(2*time.Second)] = 1
	f.addStats("r", p1)
	f.addStats("r", p2)
	want := waitroom.StatsBucket{At: at(step), Joins: 12, Admissions: 4, Abandons: 1,
		EstErrAbsMs: 1000, EstErrMs: -200, EstN: 3, EstRelErrBp: 6000, HasGauges: true, Waiting: 40, Active: 2, ETALastMs: 125_000}
	want.Waits[waitroom.WaitBin(2*time.Second)] = 3
	want.Waits[waitroom.WaitBin(time.Hour)] = 1
	f.wantBuckets("after two adds", f.stats("r", base), want)

	// Counters without gauges leave the gauges; new gauges replace them,
	// including "no estimate" (-1) and an estimate of 0.
	f.addStats("r", waitroom.StatsBucket{At: at(step), Abandons: 2})
	want.Abandons = 3
	f.wantBuckets("after counters only", f.stats("r", base), want)
	f.addStats("r", waitroom.StatsBucket{At: at(step), HasGauges: true, Waiting: 0, Active: 3, ETALastMs: -1})
	want.Waiting, want.Active, want.ETALastMs = 0, 3, -1
	f.wantBuckets("after gauges -1", f.stats("r", base), want)
	f.addStats("r", waitroom.StatsBucket{At: at(step), HasGauges: true, Waiting: 1, Active: 3, ETALastMs: 0})
	want.Waiting, want.ETALastMs = 1, 0
	f.wantBuckets("after gauges 0", f.stats("r", base), want)

	// A bucket with only counters reads without gauges.
	f.addStats("r", waitroom.StatsBucket{At: at(2 * step), Joins: 1})
	got := f.stats("r", at(2*step))
	if len(got) != 1 || got[0].HasGauges || got[0].Joins != 1 {
		f.t.Fatalf("Stats of a counters-only bucket = %+v, want 1 join and no gauges", got)
	}
	if other := f.stats("other", base); len(other) != 0 {
		f.t.Fatalf("Stats(other) = %d buckets, want none", len(other))
	}
	wantCode(f.t, "AddStats to a bad room name", f.l.AddStats(f.t.Context(), "Bad Name", p1), waitroom.CodeInvalidRoomName)
}

// wantBuckets fails unless got is want, bucket by bucket.
func (f *ledgerFixture) wantBuckets(what string, got []waitroom.StatsBucket, want ...waitroom.StatsBucket) {
	f.t.Helper()
	if len(got) != len(want) {
		f.t.Fatalf("%s: %d buckets at %v, want %d at %v", what, len(got), bucketTimes(got), len(want), bucketTimes(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.At.Equal(w.At) {
			f.t.Fatalf("%s: bucket %d at %s, want %s", what, i, rel(g.At), rel(w.At))
		}
		g.At, w.At = time.Time{}, time.Time{}
		if !w.HasGauges {
			w.Waiting, w.Active, w.ETALastMs = g.Waiting, g.Active, g.ETALastMs
		}
		if g != w {
			f.t.Fatalf("%s: bucket %d\n got %+v\nwant %+v", what, i, g, w)
		}
	}
}

func testStatsSinceAndOrder(f *ledgerFixture) {
	step := waitroom.StatsStep
	for _, k := range []int{3, 0, 2, 1} {
		f.addStats("r", waitroom.StatsBucket{At: at(time.Duration(k) * step), Joins: int64(k + 1)})
	}
	all := f.stats("r", time.Time{})
	if got, want := bucketTimes(all), []time.Duration{0, step, 2 * step, 3 * step}; !slices.Equal(got, want) {
		f.t.Fatalf("Stats(since zero) times = %v, want %v", got, want)
	}
	for i, b := range all {
		if b.Joins != int64(i+1) {
			f.t.Fatalf("bucket %d has %d joins, want %d", i, b.Joins, i+1)
		}
		if b.At.Location() != time.UTC {
			f.t.Fatalf("bucket %d's time is in %v, want UTC", i, b.At.Location())
		}
	}
	for since, want := range map[time.Duration][]time.Duration{
		2 * step:       {2 * step, 3 * step},
		step + msec:    {2 * step, 3 * step},
		3*step + msec:  {},
		100 * step:     {},
		-time.Hour:     {0, step, 2 * step, 3 * step},
		step - 1*msec:  {step, 2 * step, 3 * step},
		3*step - 1*sec: {3 * step},
	} {
		if got := bucketTimes(f.stats("r", at(since))); !slices.Equal(got, want) {
			f.t.Fatalf("Stats(since %s) times = %v, want %v", since, got, want)
		}
	}
}

func testStatsExpiry(f *ledgerFixture) {
	step, keep := waitroom.StatsStep, waitroom.StatsKeep
	f.addStats("r", waitroom.StatsBucket{At: at(0), Joins: 1})
	f.addStats("r", waitroom.StatsBucket{At: at(step), Joins: 2})
	f.addStats("old", waitroom.StatsBucket{At: at(0), Joins: 1})
	// The newest bucket is keep-step after the first: both are kept.
	f.addStats("r", waitroom.StatsBucket{At: at(keep - step), Joins: 3})
	if got, want := bucketTimes(f.stats("r", time.Time{})), []time.Duration{0, step, keep - step}; !slices.Equal(got, want) {
		f.t.Fatalf("Stats within StatsKeep = %v, want %v", got, want)
	}
	// A bucket keep after the first: the first is dropped.
	f.addStats("r", waitroom.StatsBucket{At: at(keep), Joins: 4})
	if got, want := bucketTimes(f.stats("r", time.Time{})), []time.Duration{step, keep - step, keep}; !slices.Equal(got, want) {
		f.t.Fatalf("Stats after a bucket StatsKeep newer than the first = %v, want %v", got, want)
	}
	// A bucket that arrives already too old is not kept.
	f.addStats("r", waitroom.StatsBucket{At: at(-time.Hour), Joins: 5})
	f.addStats("r", waitroom.StatsBucket{At: at(0), Joins: 6})
	if got, want := bucketTimes(f.stats("r", time.Time{})), []time.Duration{step, keep - step, keep}; !slices.Equal(got, want) {
		f.t.Fatalf("Stats after adding too old buckets = %v, want %v", got, want)
	}
	// Far ahead: only the new bucket remains.
	f.addStats("r", waitroom.StatsBucket{At: at(10 * keep), Joins: 7})
	got := f.stats("r", time.Time{})
	if len(got) != 1 || !got[0].At.Equal(at(10*keep)) || got[0].Joins != 7 {
		f.t.Fatalf("Stats after a bucket far ahead = %v, want only it", bucketTimes(got))
	}
	// Another room's buckets are its own.
	if got := f.stats("old", time.Time{}); len(got) != 1 {
		f.t.Fatalf("Stats(old) = %d buckets, want 1", len(got))
	}
}

func testStatsConcurrentMerge(f *ledgerFixture) {
	const workers, adds = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range adds {
				b := waitroom.StatsBucket{At: at(time.Duration(i%3) * waitroom.StatsStep), Joins: 1, Admissions: int64(w)}
				b.Waits[w] = 1
				if err := f.l.AddStats(f.t.Context(), "r", b); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		f.t.Fatalf("AddStats from many goroutines: %v", err)
	}
	var joins, adm int64
	var waits [waitroom.WaitBins]int64
	for _, b := range f.stats("r", base) {
		joins += b.Joins
		adm += b.Admissions
		for i, n := range b.Waits {
			waits[i] += n
		}
	}
	if joins != workers*adds || adm != adds*(workers*(workers-1)/2) {
		f.t.Fatalf("after %d concurrent adds: %d joins, %d admissions; want %d and %d", workers*adds, joins, adm, workers*adds, adds*(workers*(workers-1)/2))
	}
	for w := range workers {
		if waits[w] != adds {
			f.t.Fatalf("wait bin %d holds %d, want %d", w, waits[w], adds)
		}
	}
}

func testConsoleSessions(f *ledgerFixture) {
	ctx := f.t.Context()
	live := func(id string, now time.Time) bool {
		f.t.Helper()
		ok, err := f.l.ConsoleSession(ctx, id, now)
		if err != nil {
			f.t.Fatalf("ConsoleSession(%q, %s) error = %v", id, rel(now), err)
		}
		return ok
	}
	put := func(id string, expires time.Time) {
		f.t.Helper()
		if err := f.l.PutConsoleSession(ctx, id, expires); err != nil {
			f.t.Fatalf("PutConsoleSession(%q, %s) error = %v", id, rel(expires), err)
		}
	}
	del := func(id string) {
		f.t.Helper()
		if err := f.l.DeleteConsoleSession(ctx, id); err != nil {
			f.t.Fatalf("DeleteConsoleSession(%q) error = %v", id, err)
		}
	}
	exp := at(12 * time.Hour)
	put("sess-a", exp)
	put("sess-b", exp)
	if !live("sess-a", at(0)) || !live("sess-a", exp.Add(-msec)) {
		f.t.Fatal("a session is not live before it expires")
	}
	if live("sess-a", exp) || live("sess-a", exp.Add(time.Hour)) {
		f.t.Fatal("a session is live at or after its expiry")
	}
	if live("nobody", at(0)) {
		f.t.Fatal("an unknown session is live")
	}
	del("sess-b")
	if live("sess-b", at(0)) {
		f.t.Fatal("a deleted session is live")
	}
	del("sess-b")
	del("never-was")
	// Putting again sets a new expiry.
	put("sess-c", at(time.Hour))
	put("sess-c", at(2*time.Hour))
	if !live("sess-c", at(90*time.Minute)) {
		f.t.Fatal("a session put again does not last to its new expiry")
	}
	wantCode(f.t, "PutConsoleSession with an empty id", f.l.PutConsoleSession(ctx, "", exp), waitroom.CodeInvalidRequest)
	if live("", at(0)) {
		f.t.Fatal("the empty id is live")
	}
}
