package waitroom_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/waitroom/waitroom"
)

func FuzzParseRoomConfig(f *testing.F) {
	for _, s := range []string{
		"", " ", "{}", "null", "[]", `{"capacity":5}`, `{"mode":"manual","paused":true}`,
		`{"mode":"auto","capacity":0,"rate_per_minute":60,"active_timeout":"90s","max_session":"1h","waiting_timeout":"0s","grace":"0s","paused":false}`,
		`{"grace":30}`, `{"grace":"-1s"}`, `{"capacity":-1}`, `{"capacty":1}`, `{} {}`, `{"capacity":5}x`,
		`{"active_timeout":"8784h"}`, `{"active_timeout":"1.5ms"}`, `{"capacity":1e3}`, `{"capacity":1.5}`,
		`{"mode":"manual","mode":"auto"}`, `{"max_session":"\u0031s"}`,
		`{"opens_at":"2030-01-01T10:00:00Z","closes_at":"2030-01-01T12:00:00+01:00"}`, `{"opens_at":"2030-01-01T10:00:00.123456789-07:00"}`,
		`{"opens_at":"tomorrow"}`, `{"closes_at":5}`, `{"opens_at":"2030-01-01T10:00:00Z","closes_at":"2030-01-01T10:00:00Z"}`,
		`{"opens_at":"0001-01-01T00:00:00Z"}`, `{"opens_at":"9999-12-31T23:59:59Z"}`, `{"opens_at":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := waitroom.ParseRoomConfig(data)
		if err != nil {
			code := waitroom.ErrorCode(err)
			if code != waitroom.CodeInvalidJSON && code != waitroom.CodeInvalidConfig {
				t.Fatalf("ParseRoomConfig(%q) code = %q, want invalid_json or invalid_config", data, code)
			}
			if waitroom.ErrorMessage(err) == "" {
				t.Fatalf("ParseRoomConfig(%q) error has an empty message", data)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ParseRoomConfig(%q) accepted %+v, which fails Validate: %v", data, c, err)
		}
		// What is accepted writes back out and reads in as the same.
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("json.Marshal(%+v) error = %v", c, err)
		}
		c2, err := waitroom.ParseRoomConfig(b)
		if err != nil {
			t.Fatalf("ParseRoomConfig(%s) (re-encoded) error = %v", b, err)
		}
		if !c2.Equal(c) {
			t.Fatalf("round trip of %q: got %+v, want %+v", data, c2, c)
		}
	})
}

func FuzzParseSessionID(f *testing.F) {
	f.Add("")
	f.Add(waitroom.NewSessionID(1).String())
	f.Add(waitroom.NewSessionID(1 << 62).String())
	f.Add(rawID(0, 1))
	f.Add(rawID(1<<62+1, 1))
	f.Add(waitroom.NewEntryID(1).String())
	f.Add(waitroom.NewEntryID(waitroom.MaxEntry).String())
	f.Add("AAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAA")
	f.Add("AAAAAAAAAAE+AAAAAAAAAAAAAAAAAAA=")
	f.Add("A0000\r000000000000000000000000000") // base64 would skip the \r
	f.Fuzz(func(t *testing.T, s string) {
		id, err := waitroom.ParseSessionID(s)
		// Differential check against the standard library's decoder.
		// encoding/base64 skips \r and \n; an id is exactly 32 characters.
		raw, stdErr := base64.RawURLEncoding.Strict().DecodeString(s)
		stdOK := stdErr == nil && len(raw) == 24 && len(s) == waitroom.SessionIDLen
		if stdOK {
			t := binary.BigEndian.Uint64(raw[:8])
			e := t &^ (1 << 63) // an entry id: the top bit set, then 1..2^62
			stdOK = (t >= 1 && t <= 1<<62) || (t&(1<<63) != 0 && e >= 1 && e <= 1<<62)
		}
		if stdOK != (err == nil) {
			t.Fatalf("ParseSessionID(%q) error = %v, but encoding/base64 accepts it: %v", s, err, stdOK)
		}
		if err != nil {
			if code := waitroom.ErrorCode(err); code != waitroom.CodeInvalidSessionID {
				t.Fatalf("ParseSessionID(%q) code = %q, want %q", s, code, waitroom.CodeInvalidSessionID)
			}
			if id != (waitroom.SessionID{}) {
				t.Fatalf("ParseSessionID(%q) failed but returned %+v, want the zero id", s, id)
			}
			return
		}
		if (id.Ticket < 1 || id.Ticket > 1<<62 || id.Entry != 0) && (id.Entry < 1 || id.Entry > waitroom.MaxEntry || id.Ticket != 0) {
			t.Fatalf("ParseSessionID(%q) = ticket %d entry %d, want one of them in 1..2^62 and the other 0", s, id.Ticket, id.Entry)
		}
		if got := id.String(); got != s {
			t.Fatalf("ParseSessionID(%q).String() = %q, want the input (one spelling per id)", s, got)
		}
		if !id.Matches(id.Secret) {
			t.Fatalf("id does not match its own secret")
		}
	})
}

func FuzzSessionIDString(f *testing.F) {
	f.Add(int64(1), []byte("0123456789abcdef"))
	f.Add(int64(1<<62), []byte{})
	f.Fuzz(func(t *testing.T, ticket int64, secret []byte) {
		if ticket < 1 || ticket > 1<<62 {
			return
		}
		id := waitroom.SessionID{Ticket: ticket}
		copy(id.Secret[:], secret)
		s := id.String()
		if len(s) != waitroom.SessionIDLen {
			t.Fatalf("len(%q) = %d, want %d", s, len(s), waitroom.SessionIDLen)
		}
		got, err := waitroom.ParseSessionID(s)
		if err != nil || got != id {
			t.Fatalf("ParseSessionID(%q) = %+v, %v; want %+v", s, got, err, id)
		}
	})
}

// documentedDuration is the pattern of openapi.json's Duration.
var documentedDuration = regexp.MustCompile(`^(0|([0-9]+(\.[0-9]+)?(h|m|s|ms|us|µs|ns))+)$`)

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"0", "0s", "1ms", "999us", "90s", "5m", "1h30m", "8784h", "8785h", "-1s", "-0s",
		"1.5h", ".5s", "1e3s", "", "5", "1h0m0.0000001s", "9223372036854775807ns", strings.Repeat("1", 40) + "s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := waitroom.ParseDuration(s)
		if std, stdErr := time.ParseDuration(s); stdErr == nil && len(s) <= 32 && documentedDuration.MatchString(s) &&
			std >= 0 && std <= waitroom.MaxDuration.D() && (std == 0 || std >= time.Millisecond) {
			// Everything Go accepts within the limits, in the document's
			// form, is accepted, with Go's value.
			if err != nil || d.D() != std {
				t.Fatalf("ParseDuration(%q) = %v, %v; want %v", s, d.D(), err, std)
			}
		}
		if err != nil {
			return
		}
		if d < 0 || d > waitroom.MaxDuration || (d > 0 && d.D() < time.Millisecond) {
			t.Fatalf("ParseDuration(%q) = %v, outside [0, max] or under 1ms", s, d.D())
		}
		d2, err := waitroom.ParseDuration(d.String())
		if err != nil || d2 != d {
			t.Fatalf("ParseDuration(%q) = %v; ParseDuration(String() %q) = %v, %v", s, d.D(), d.String(), d2.D(), err)
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("json.Marshal(%v) error = %v", d.D(), err)
		}
		var d3 waitroom.Duration
		if err := json.Unmarshal(b, &d3); err != nil || d3 != d {
			t.Fatalf("JSON round trip of %v via %s = %v, %v", d.D(), b, d3.D(), err)
		}
	})
}

var roomNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

func FuzzRoomName(f *testing.F) {
	for _, s := range []string{"default", "a", "a.b_c-d", "-a", "A", "", "a\n", "é", strings.Repeat("a", 64), strings.Repeat("a", 65)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := roomNameRE.MatchString(s)
		if got := waitroom.ValidRoomName(s); got != want {
			t.Fatalf("ValidRoomName(%q) = %v, want %v (the regexp)", s, got, want)
		}
		err := waitroom.CheckRoomName(s)
		if want != (err == nil) {
			t.Fatalf("CheckRoomName(%q) = %v, want ok=%v", s, err, want)
		}
		if err != nil && waitroom.ErrorCode(err) != waitroom.CodeInvalidRoomName {
			t.Fatalf("CheckRoomName(%q) code = %q, want %q", s, waitroom.ErrorCode(err), waitroom.CodeInvalidRoomName)
		}
	})
}

func FuzzCheckKey(f *testing.F) {
	for _, s := range []string{"u1", "", " ", "a\x00", "\x7f", "\u0085", "\ufffd", "\xff", "日本", strings.Repeat("k", 256), strings.Repeat("k", 257),
		"a\u202eb", "a\u200bb", "a\u00a0b", "\u3164", "\ufe0f", "\U000e0020", "\ufdd0", "\ue000", "e\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		// The rule, written independently: 1..MaxKeyLen bytes of valid
		// UTF-8 of graphic characters (no controls, format characters or
		// unassigned code points), the only space the ASCII one, and none
		// that shows nothing (default ignorable, blank braille) or stands
		// for invalid input (the replacement character).
		want := len(key) >= 1 && len(key) <= waitroom.MaxKeyLen && utf8.ValidString(key)
		for _, r := range key {
			if r != ' ' && (!unicode.IsGraphic(r) || unicode.Is(unicode.Zs, r)) || r == utf8.RuneError || r == '\u2800' ||
				unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Variation_Selector, r) {
				want = false
			}
		}
		err := waitroom.CheckKey(key)
		if want != (err == nil) {
			t.Fatalf("CheckKey(%q) = %v, want ok=%v", key, err, want)
		}
		if err != nil && waitroom.ErrorCode(err) != waitroom.CodeInvalidKey {
			t.Fatalf("CheckKey(%q) code = %q, want %q", key, waitroom.ErrorCode(err), waitroom.CodeInvalidKey)
		}
	})
}

func FuzzSessionJSON(f *testing.F) {
	for _, s := range []waitroom.Session{
		{ID: waitroom.NewSessionID(3).String(), Room: "default", Status: waitroom.StatusWaiting, Ticket: 3,
			Position: 1, Waiting: 4, Active: 100, Capacity: 100, ETA: &waitroom.ETA{Seconds: 30, Low: 20, High: 45},
			JoinedAt: sessionTime("2030-01-01T00:00:00.123Z")},
		{ID: "x", Room: "r", Status: waitroom.StatusExpired, Ticket: 2, Key: "<k>", JoinedAt: sessionTime("2030-01-01T00:00:00Z"),
			AdmittedAt: sessionTime("2030-01-01T00:01:00Z"), EndedAt: sessionTime("2030-01-01T00:02:00Z"), EndReason: waitroom.ReasonIdle},
	} {
		f.Add(s.AppendJSON(nil))
	}
	f.Add([]byte(`{"status":"active","position":4,"eta_seconds":3}`))
	f.Add([]byte(`{"status":"waiting","position":-2,"eta_low_seconds":3}`))
	f.Add([]byte(`{"joined_at":"2030-01-01T02:00:00.123456+05:30"}`))
	f.Add([]byte(`{"id":"\u00e9\u2028"}`))
	f.Add([]byte(`{"id":"\u0000\u0007","room":"\udb40\udc01<&>","key":"\"\\"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"status":"waiting","ticket":0,"entry":"s:x","opens_at":"2030-01-01T00:00:00Z","entrants":12}`))
	f.Add([]byte(`{"status":"active","opens_at":"2030-01-01T00:00:00Z","entrants":-3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s waitroom.Session
		if err := json.Unmarshal(data, &s); err != nil {
			return
		}
		for _, tm := range []time.Time{s.JoinedAt, s.AdmittedAt, s.EndedAt} {
			if y := tm.UTC().Year(); !tm.IsZero() && (y < 1 || y > 9999) {
				return // RFC 3339 has four-digit years only
			}
		}
		b := s.AppendJSON(nil)
		if !json.Valid(b) {
			t.Fatalf("AppendJSON of %s = %s, not valid JSON", data, b)
		}
		var got waitroom.Session
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("json.Unmarshal(%s) (re-encoded from %s) error = %v", b, data, err)
		}
		// What AppendJSON drops on purpose: position and ETA outside
		// waiting, sub-millisecond time and the zone.
		want := s
		if want.Status != waitroom.StatusWaiting || want.Position <= 0 {
			want.Position = 0
		}
		if want.Status != waitroom.StatusWaiting {
			want.ETA = nil
		}
		if want.Status != waitroom.StatusWaiting || want.OpensAt.IsZero() {
			want.OpensAt, want.Entrants = time.Time{}, 0
		}
		if y := want.OpensAt.UTC().Year(); y < 1 || y > 9999 {
			return
		}
		want.OpensAt = msUTC(want.OpensAt)
		want.JoinedAt = msUTC(want.JoinedAt)
		want.AdmittedAt = msUTC(want.AdmittedAt)
		want.EndedAt = msUTC(want.EndedAt)
		if !sameSession(got, want) {
			t.Fatalf("round trip of %s via %s:\n got %+v\nwant %+v", data, b, got, want)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["ahead"]; ok != (want.Position > 0) || (ok && m["ahead"] != float64(want.Position-1)) {
			t.Fatalf("%s: ahead = %v (present %v), want position-1 exactly when a position is given", b, m["ahead"], ok)
		}
	})
}

// msUTC truncates t to the millisecond the API writes, keeping the zero time zero.
func msUTC(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Truncate(time.Millisecond).UTC()
}
