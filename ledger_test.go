package waitroom_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// TestWaitBins checks the histogram's bins: in order, covering every wait,
// one at a time from 100 ms to 24 h, each starting where WaitBinStart says.
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
	for ms := int64(100); ms <= 24*3600*1000; ms = ms*1001/1000 + 1 {
		d := time.Duration(ms) * time.Millisecond
		b := waitroom.WaitBin(d)
		if b < prev || b > prev+1 {
			t.Fatalf("WaitBin(%s) = %d after bin %d: bins must grow one at a time", d, b, prev)
		}
		prev = b
	}
	for i := range waitroom.WaitBins {
		start := waitroom.WaitBinStart(i)
		if got := waitroom.WaitBin(start); got != i {
			t.Errorf("WaitBin(WaitBinStart(%d) = %s) = %d", i, start, got)
		}
		if i > 0 {
			if got := waitroom.WaitBin(start - time.Millisecond); got != i-1 {
				t.Errorf("WaitBin(WaitBinStart(%d) - 1ms) = %d, want %d", i, got, i-1)
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
