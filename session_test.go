package waitroom_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

func TestStatusAndReason(t *testing.T) {
	live := map[waitroom.Status]bool{
		waitroom.StatusWaiting: true, waitroom.StatusActive: true,
		waitroom.StatusServed: false, waitroom.StatusLeft: false, waitroom.StatusExpired: false,
	}
	for s, want := range live {
		if s.Live() != want {
			t.Errorf("%q.Live() = %v, want %v", s, s.Live(), want)
		}
		if s.Final() != !want {
			t.Errorf("%q.Final() = %v, want %v", s, s.Final(), !want)
		}
	}
	if waitroom.Status("bogus").Live() || waitroom.Status("bogus").Final() {
		t.Errorf("an unknown status is neither live nor final")
	}
	reasons := map[waitroom.Reason]waitroom.Status{
		waitroom.ReasonLeft:        waitroom.StatusLeft,
		waitroom.ReasonRevoked:     waitroom.StatusLeft,
		waitroom.ReasonServed:      waitroom.StatusServed,
		waitroom.ReasonIdle:        waitroom.StatusExpired,
		waitroom.ReasonMaxSession:  waitroom.StatusExpired,
		waitroom.ReasonNoPresence:  waitroom.StatusExpired,
		waitroom.ReasonGone:        waitroom.StatusExpired,
		waitroom.ReasonRoomDeleted: waitroom.StatusExpired,
	}
	for r, want := range reasons {
		if got := r.Status(); got != want {
			t.Errorf("%q.Status() = %q, want %q", r, got, want)
		}
	}
}

func TestSessionIDRoundTrip(t *testing.T) {
	for _, ticket := range []int64{1, 2, 255, 1 << 32, 1<<62 - 1, 1 << 62} {
		id := waitroom.NewSessionID(ticket)
		s := id.String()
		if len(s) != waitroom.SessionIDLen {
			t.Errorf("len(%q) = %d, want %d", s, len(s), waitroom.SessionIDLen)
		}
		if strings.ContainsAny(s, "+/=") {
			t.Errorf("id %q is not URL-safe", s)
		}
		got, err := waitroom.ParseSessionID(s)
		if err != nil {
			t.Fatalf("ParseSessionID(%q) error = %v", s, err)
		}
		if got != id {
			t.Errorf("ParseSessionID(%q) = %+v, want %+v", s, got, id)
		}
		if !got.Matches(id.Secret) {
			t.Errorf("Matches(own secret) = false, want true")
		}
		other := id.Secret
		other[15] ^= 1
		if got.Matches(other) {
			t.Errorf("Matches(different secret) = true, want false")
		}
	}
}

func TestNewSessionIDSecretsDiffer(t *testing.T) {
	seen := map[[16]byte]bool{}
	for i := 0; i < 1000; i++ {
		id := waitroom.NewSessionID(1)
		if seen[id.Secret] {
			t.Fatalf("NewSessionID repeated a secret after %d ids", i)
		}
		seen[id.Secret] = true
	}
}

// rawID encodes a ticket and secret the way session ids are encoded, so the
// tests can build ids the server would never issue.
func rawID(ticket uint64, secret byte) string {
	var raw [24]byte
	binary.BigEndian.PutUint64(raw[:8], ticket)
	for i := 8; i < 24; i++ {
		raw[i] = secret
	}
	return base64.RawURLEncoding.EncodeToString(raw[:])
}

func TestParseSessionIDRejects(t *testing.T) {
	valid := waitroom.NewSessionID(7).String()
	tests := map[string]string{
		"empty":            "",
		"short":            valid[:31],
		"long":             valid + "A",
		"padding":          valid[:30] + "==",
		"std alphabet +":   "+" + valid[1:],
		"std alphabet /":   "/" + valid[1:],
		"space":            " " + valid[1:],
		"non-ASCII":        "é" + valid[2:],
		"ticket zero":      rawID(0, 0xab),
		"ticket too large": rawID(1<<62+1, 0xab),
		"ticket negative":  rawID(1<<63, 0xab),
		"ticket max":       rawID(^uint64(0), 0xab),
	}
	for name, s := range tests {
		id, err := waitroom.ParseSessionID(s)
		if waitroom.ErrorCode(err) != waitroom.CodeInvalidSessionID {
			t.Errorf("%s: ParseSessionID(%q) = %+v, %v; want code %q", name, s, id, err, waitroom.CodeInvalidSessionID)
		}
	}
	// The largest ticket accepted.
	if _, err := waitroom.ParseSessionID(rawID(1<<62, 0)); err != nil {
		t.Errorf("ParseSessionID(ticket 1<<62) error = %v, want nil", err)
	}
}

func TestSessionAhead(t *testing.T) {
	for _, tt := range []struct{ pos, want int64 }{{0, 0}, {1, 0}, {2, 1}, {100, 99}, {-3, 0}} {
		if got := (waitroom.Session{Position: tt.pos}).Ahead(); got != tt.want {
			t.Errorf("Session{Position: %d}.Ahead() = %d, want %d", tt.pos, got, tt.want)
		}
	}
}

func sessionTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestSessionJSONRoundTrip(t *testing.T) {
	joined := sessionTime("2030-01-01T00:00:00.123Z")
	admitted := sessionTime("2030-01-01T00:05:00Z")
	ended := sessionTime("2030-01-01T01:00:00.999Z")
	tests := []waitroom.Session{
		{ID: waitroom.NewSessionID(3).String(), Room: "default", Status: waitroom.StatusWaiting, Ticket: 3,
			Position: 1, Waiting: 4, Active: 100, Capacity: 100, ETA: &waitroom.ETA{Seconds: 30, Low: 20, High: 45},
			JoinedAt: joined},
		{ID: waitroom.NewSessionID(4).String(), Room: "r.1", Status: waitroom.StatusWaiting, Ticket: 4, Key: `<user&"1">`,
			Position: 2, Waiting: 4, Active: 100, Capacity: 100, JoinedAt: joined},
		{ID: waitroom.NewSessionID(1).String(), Room: "r", Status: waitroom.StatusActive, Ticket: 1, Key: "日本",
			Waiting: 0, Active: 1, Capacity: 2, JoinedAt: joined, AdmittedAt: admitted, Pass: "eyJh.eyJz.c2ln"},
		{ID: waitroom.NewSessionID(2).String(), Room: "r", Status: waitroom.StatusExpired, Ticket: 2,
			Waiting: 0, Active: 0, Capacity: 2, JoinedAt: joined, AdmittedAt: admitted, EndedAt: ended,
			EndReason: waitroom.ReasonIdle},
		{ID: waitroom.NewSessionID(9).String(), Room: "m", Status: waitroom.StatusServed, Ticket: 9,
			JoinedAt: joined, EndedAt: ended, EndReason: waitroom.ReasonServed},
		{},
	}
	for _, s := range tests {
		b := s.AppendJSON(nil)
		if !json.Valid(b) {
			t.Fatalf("AppendJSON(%+v) = %s, not valid JSON", s, b)
		}
		m, err := s.MarshalJSON()
		if err != nil || !bytes.Equal(m, b) {
			t.Errorf("MarshalJSON() = %s, %v; want %s (AppendJSON)", m, err, b)
		}
		var got waitroom.Session
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("json.Unmarshal(%s) error = %v", b, err)
		}
		if !sameSession(got, s) {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", b, got, s)
		}
	}
}

// sameSession compares sessions, times by instant and ETA by value.
func sameSession(a, b waitroom.Session) bool {
	if (a.ETA == nil) != (b.ETA == nil) || (a.ETA != nil && *a.ETA != *b.ETA) {
		return false
	}
	if !a.JoinedAt.Equal(b.JoinedAt) || !a.AdmittedAt.Equal(b.AdmittedAt) || !a.EndedAt.Equal(b.EndedAt) || !a.OpensAt.Equal(b.OpensAt) {
		return false
	}
	a.ETA, b.ETA = nil, nil
	a.JoinedAt, a.AdmittedAt, a.EndedAt, a.OpensAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	b.JoinedAt, b.AdmittedAt, b.EndedAt, b.OpensAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return a == b
}

func TestSessionJSONFields(t *testing.T) {
	joined := sessionTime("2030-01-01T02:03:04.5+02:00")
	first := waitroom.Session{ID: "x", Room: "r", Status: waitroom.StatusWaiting, Ticket: 5, Position: 1,
		Waiting: 1, Capacity: 1, JoinedAt: joined}
	var m map[string]any
	if err := json.Unmarshal(first.AppendJSON(nil), &m); err != nil {
		t.Fatal(err)
	}
	if m["ahead"] != float64(0) {
		t.Errorf("position 1: ahead = %v, want 0 (present)", m["ahead"])
	}
	if m["position"] != float64(1) {
		t.Errorf("position 1: position = %v, want 1", m["position"])
	}
	if m["joined_at"] != "2030-01-01T00:03:04.500Z" {
		t.Errorf("joined_at = %v, want UTC with milliseconds", m["joined_at"])
	}
	for _, absent := range []string{"key", "eta_seconds", "eta_low_seconds", "eta_high_seconds", "admitted_at", "ended_at", "end_reason"} {
		if v, ok := m[absent]; ok {
			t.Errorf("waiting session without %s: field present with %v", absent, v)
		}
	}
	for _, present := range []string{"id", "room", "status", "ticket", "waiting", "active", "capacity"} {
		if _, ok := m[present]; !ok {
			t.Errorf("field %q absent, want present", present)
		}
	}

	// Position and ETA are only for waiting sessions, even if set.
	for _, st := range []waitroom.Status{waitroom.StatusActive, waitroom.StatusLeft, waitroom.StatusServed, waitroom.StatusExpired} {
		s := waitroom.Session{ID: "x", Room: "r", Status: st, Ticket: 5, Position: 3, ETA: &waitroom.ETA{Seconds: 1, Low: 1, High: 2}}
		b := s.AppendJSON(nil)
		for _, absent := range []string{`"position"`, `"ahead"`, `"eta_seconds"`, `"eta_low_seconds"`, `"eta_high_seconds"`} {
			if bytes.Contains(b, []byte(absent)) {
				t.Errorf("%s session: JSON %s holds %s, want it absent", st, b, absent)
			}
		}
	}

	// A waiting session with an ETA carries all three ETA fields, and ahead = position-1.
	s := waitroom.Session{ID: "x", Room: "r", Status: waitroom.StatusWaiting, Ticket: 9, Position: 7,
		ETA: &waitroom.ETA{Seconds: 60, Low: 30, High: 90}}
	m = nil
	if err := json.Unmarshal(s.AppendJSON(nil), &m); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{"position": 7, "ahead": 6, "eta_seconds": 60, "eta_low_seconds": 30, "eta_high_seconds": 90} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
}

func TestSessionJSONKeyEscaped(t *testing.T) {
	s := waitroom.Session{ID: "x", Room: "r", Status: waitroom.StatusActive, Key: "<script>&"}
	b := s.AppendJSON(nil)
	if bytes.Contains(b, []byte("<script>")) {
		t.Errorf("AppendJSON = %s, want the key HTML-escaped", b)
	}
}

func TestSessionUnmarshalRejects(t *testing.T) {
	for _, in := range []string{`[]`, `{"ticket":"1"}`, `{"joined_at":"yesterday"}`, `{"status":1}`, `{`} {
		var s waitroom.Session
		if err := json.Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("json.Unmarshal(%s) = %+v, want an error", in, s)
		}
	}
}

func TestSessionJSONPassOnlyWhileActive(t *testing.T) {
	for _, tc := range []struct {
		status waitroom.Status
		want   bool
	}{
		{waitroom.StatusActive, true},
		{waitroom.StatusWaiting, false},
		{waitroom.StatusLeft, false},
		{waitroom.StatusExpired, false},
	} {
		s := waitroom.Session{ID: "x", Room: "r", Status: tc.status, Ticket: 1, Pass: "a.b.c"}
		var m map[string]any
		if err := json.Unmarshal(s.AppendJSON(nil), &m); err != nil {
			t.Fatal(err)
		}
		if _, got := m["pass"]; got != tc.want {
			t.Errorf("status %s: pass in JSON = %v, want %v (a pass is only for an active session)", tc.status, got, tc.want)
		}
	}
}

// The hand-written time encoding must be exactly TimeFormat's.
func TestSessionJSONTimesMatchTimeFormat(t *testing.T) {
	for _, ts := range []time.Time{
		time.Date(2026, 11, 21, 9, 5, 3, 7_000_000, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2030, 6, 1, 12, 0, 0, 999_500_000, time.FixedZone("x", -7*3600)),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(1_800_000_000, 123_456_789),
	} {
		s := waitroom.Session{ID: "x", Room: "r", Status: waitroom.StatusWaiting, JoinedAt: ts}
		var m map[string]any
		if err := json.Unmarshal(s.AppendJSON(nil), &m); err != nil {
			t.Fatal(err)
		}
		if got, want := m["joined_at"], ts.UTC().Format(waitroom.TimeFormat); got != want {
			t.Errorf("joined_at of %v = %v, want %q", ts, got, want)
		}
	}
}
