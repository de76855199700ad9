package waitroom_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// TestWaitBins checks the histogram's bins: in order, covering every wait,
// and each bin's value within 5.2% of any wait in it from 100 ms to 24 h.
func TestWaitBins(t *testing.T) {
	for d, want := range map[time.Duration]int{
		-time.Second:                 0,
		0:                            0,
		99 * time.Millisecond:        0,
		100 * time.Millisecond:       1,
		109 * time.Millisecond:       1,
		110 * time.Millisecond:       2,
		121 * time.Millisecond:       3,
		1000 * time.Hour:             waitroom.WaitBins - 1,
		time.Duration(math.MaxInt64): waitroom.WaitBins - 1,
	} {
		if got := waitroom.WaitBin(d); got != want {
			t.Errorf("WaitBin(%s) = %d, want %d", d, got, want)
		}
	}
	if b := waitroom.WaitBin(24 * time.Hour); b >= waitroom.WaitBins-1 {
		t.Errorf("WaitBin(24h) = %d, the overflow bin; 24h should be binned finely", b)
	}
	prev := 0
	worst := 0.0
	for ms := int64(100); ms <= 24*3600*1000; ms = ms*1001/1000 + 1 {
		d := time.Duration(ms) * time.Millisecond
		b := waitroom.WaitBin(d)
		if b < prev || b > prev+1 {
			t.Fatalf("WaitBin(%s) = %d after bin %d: bins must grow one at a time", d, b, prev)
		}
		prev = b
		rel := math.Abs(float64(waitroom.WaitBinValue(b)-d)) / float64(d)
		worst = max(worst, rel)
	}
	if worst > 0.052 {
		t.Fatalf("a bin's value is %.2f%% off a wait in it, want at most 5.2%%", 100*worst)
	}
	t.Logf("worst error of a bin's value: %.2f%%", 100*worst)
	if v := waitroom.WaitBinValue(0); v != 50*time.Millisecond {
		t.Errorf("WaitBinValue(0) = %s, want 50ms", v)
	}
}

// TestWaitPercentile compares percentiles of a histogram with the exact
// nearest-rank percentiles of the waits put in it.
func TestWaitPercentile(t *testing.T) {
	var h [waitroom.WaitBins]int64
	if _, ok := waitroom.WaitPercentile(&h, 0.5); ok {
		t.Fatal("WaitPercentile of an empty histogram is ok")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 7, 100, 5000} {
		h = [waitroom.WaitBins]int64{}
		waits := make([]time.Duration, n)
		for i := range waits {
			// Log-uniform from 100 ms to 10 h.
			waits[i] = time.Duration(math.Exp(r.Float64()*math.Log(360_000)) * float64(100*time.Millisecond))
			h[waitroom.WaitBin(waits[i])]++
		}
		slices.Sort(waits)
		for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 1} {
			exact := waits[max(int(math.Ceil(q*float64(n)))-1, 0)]
			got, ok := waitroom.WaitPercentile(&h, q)
			if !ok {
				t.Fatalf("n=%d q=%v: not ok", n, q)
			}
			if rel := math.Abs(float64(got-exact)) / float64(exact); rel > 0.052 {
				t.Errorf("n=%d: p%v = %s, exact %s (%.1f%% off)", n, 100*q, got, exact, 100*rel)
			}
		}
	}
}

func TestStatsBucketStart(t *testing.T) {
	for in, want := range map[time.Time]time.Time{
		time.Date(2030, 1, 1, 0, 0, 19, 999e6, time.UTC):             time.Date(2030, 1, 1, 0, 0, 10, 0, time.UTC),
		time.Date(2030, 1, 1, 0, 0, 20, 0, time.UTC):                 time.Date(2030, 1, 1, 0, 0, 20, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 55, 0, time.UTC):             time.Date(1969, 12, 31, 23, 59, 50, 0, time.UTC),
		time.Date(2030, 1, 1, 1, 0, 5, 0, time.FixedZone("x", 3600)): time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		got := waitroom.StatsBucketStart(in)
		if !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("StatsBucketStart(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestAuditEntryCheck(t *testing.T) {
	valid := waitroom.AuditEntry{At: time.Unix(1, 0), Room: "r", Actor: waitroom.AuditActorConsole, Action: waitroom.AuditFront,
		Session: "AAAAAAAAAAHDsdq6DDqJi_W4Q_VAfS3K", Ticket: 3, Reason: "a VIP, per the shop", Detail: json.RawMessage(`{"to":1}`)}
	if err := valid.Check(); err != nil {
		t.Fatalf("Check of a valid entry: %v", err)
	}
	for _, a := range []string{"pause", "resume", "config", "advance", "inventory", "queue_all", "front", "extend", "revoke", "delete"} {
		if !waitroom.ValidAuditAction(a) {
			t.Errorf("ValidAuditAction(%q) = false", a)
		}
	}
	for name, c := range map[string]struct {
		spoil func(e *waitroom.AuditEntry)
		code  waitroom.Code
	}{
		"no time":        {func(e *waitroom.AuditEntry) { e.At = time.Time{} }, waitroom.CodeInvalidRequest},
		"bad room":       {func(e *waitroom.AuditEntry) { e.Room = "" }, waitroom.CodeInvalidRoomName},
		"actor":          {func(e *waitroom.AuditEntry) { e.Actor = "" }, waitroom.CodeInvalidRequest},
		"action":         {func(e *waitroom.AuditEntry) { e.Action = "Pause" }, waitroom.CodeInvalidRequest},
		"session":        {func(e *waitroom.AuditEntry) { e.Session = strings.Repeat("a", 65) }, waitroom.CodeInvalidRequest},
		"session ctrl":   {func(e *waitroom.AuditEntry) { e.Session = "a\tb" }, waitroom.CodeInvalidRequest},
		"ticket":         {func(e *waitroom.AuditEntry) { e.Ticket = -2 }, waitroom.CodeInvalidRequest},
		"reason long":    {func(e *waitroom.AuditEntry) { e.Reason = strings.Repeat("a", 501) }, waitroom.CodeInvalidRequest},
		"reason C1":      {func(e *waitroom.AuditEntry) { e.Reason = "a\u0085b" }, waitroom.CodeInvalidRequest},
		"reason bidi":    {func(e *waitroom.AuditEntry) { e.Reason = "refund \u202egnp.exe" }, waitroom.CodeInvalidRequest},
		"reason ZWSP":    {func(e *waitroom.AuditEntry) { e.Reason = "a\u200bb" }, waitroom.CodeInvalidRequest},
		"reason NBSP":    {func(e *waitroom.AuditEntry) { e.Reason = "a\u00a0b" }, waitroom.CodeInvalidRequest},
		"session bidi":   {func(e *waitroom.AuditEntry) { e.Session = "a\u202eb" }, waitroom.CodeInvalidRequest},
		"detail":         {func(e *waitroom.AuditEntry) { e.Detail = json.RawMessage(`nope`) }, waitroom.CodeInvalidRequest},
		"detail too big": {func(e *waitroom.AuditEntry) { e.Detail = json.RawMessage(`"` + strings.Repeat("a", 4095) + `"`) }, waitroom.CodeInvalidRequest},
	} {
		e := valid
		c.spoil(&e)
		if got := waitroom.ErrorCode(e.Check()); got != c.code {
			t.Errorf("Check with a bad %s: code %q, want %q", name, got, c.code)
		}
	}
	if err := waitroom.CheckAuditReason("Früh, 早い — a bot (Ж) 🚫"); err != nil {
		t.Errorf("CheckAuditReason(text in several scripts) = %v", err)
	}
	if err := waitroom.CheckAuditReason(strings.Repeat("ü", 250)); err != nil {
		t.Errorf("CheckAuditReason(500 bytes) = %v", err)
	}
	if err := waitroom.CheckAuditReason(""); err != nil {
		t.Errorf("CheckAuditReason(\"\") = %v", err)
	}
	// The JSON form is the contract's.
	b, _ := json.Marshal(waitroom.AuditEntry{At: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Room: "r", Actor: "api", Action: "pause", ID: "7"})
	if want := `{"at":"2030-01-01T00:00:00Z","room":"r","actor":"api","action":"pause","id":"7"}`; string(b) != want {
		t.Errorf("AuditEntry JSON = %s, want %s", b, want)
	}
}
