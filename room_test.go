package waitroom_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

func TestDefaultConfig(t *testing.T) {
	c := waitroom.DefaultConfig()
	want := waitroom.RoomConfig{
		Mode:           waitroom.ModeAuto,
		Capacity:       100,
		RatePerMinute:  0,
		ActiveTimeout:  waitroom.Duration(5 * time.Minute),
		MaxSession:     0,
		WaitingTimeout: waitroom.Duration(time.Minute),
		Grace:          waitroom.Duration(30 * time.Second),
		Paused:         false,
	}
	if !c.Equal(want) {
		t.Errorf("DefaultConfig() = %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate() = %v, want nil", err)
	}
}

func TestRoomConfigValidate(t *testing.T) {
	d := func(x time.Duration) waitroom.Duration { return waitroom.Duration(x) }
	tests := []struct {
		name string
		mod  func(*waitroom.RoomConfig)
		ok   bool
	}{
		{"manual", func(c *waitroom.RoomConfig) { c.Mode = waitroom.ModeManual }, true},
		{"empty mode", func(c *waitroom.RoomConfig) { c.Mode = "" }, false},
		{"upper-case mode", func(c *waitroom.RoomConfig) { c.Mode = "AUTO" }, false},
		{"unknown mode", func(c *waitroom.RoomConfig) { c.Mode = "fifo" }, false},
		{"capacity 0", func(c *waitroom.RoomConfig) { c.Capacity = 0 }, true},
		{"capacity max", func(c *waitroom.RoomConfig) { c.Capacity = waitroom.MaxCapacity }, true},
		{"capacity negative", func(c *waitroom.RoomConfig) { c.Capacity = -1 }, false},
		{"capacity over max", func(c *waitroom.RoomConfig) { c.Capacity = waitroom.MaxCapacity + 1 }, false},
		{"rate max", func(c *waitroom.RoomConfig) { c.RatePerMinute = waitroom.MaxRatePerMinute }, true},
		{"rate negative", func(c *waitroom.RoomConfig) { c.RatePerMinute = -1 }, false},
		{"rate over max", func(c *waitroom.RoomConfig) { c.RatePerMinute = waitroom.MaxRatePerMinute + 1 }, false},
		{"active_timeout 0", func(c *waitroom.RoomConfig) { c.ActiveTimeout = 0 }, true},
		{"active_timeout 1ms", func(c *waitroom.RoomConfig) { c.ActiveTimeout = d(time.Millisecond) }, true},
		{"active_timeout max", func(c *waitroom.RoomConfig) { c.ActiveTimeout = waitroom.MaxDuration }, true},
		{"active_timeout negative", func(c *waitroom.RoomConfig) { c.ActiveTimeout = -1 }, false},
		{"active_timeout under 1ms", func(c *waitroom.RoomConfig) { c.ActiveTimeout = d(999 * time.Microsecond) }, false},
		{"active_timeout over max", func(c *waitroom.RoomConfig) { c.ActiveTimeout = waitroom.MaxDuration + 1 }, false},
		{"max_session negative", func(c *waitroom.RoomConfig) { c.MaxSession = d(-time.Second) }, false},
		{"max_session 1ns", func(c *waitroom.RoomConfig) { c.MaxSession = 1 }, false},
		{"max_session over max", func(c *waitroom.RoomConfig) { c.MaxSession = waitroom.MaxDuration + 1 }, false},
		{"waiting_timeout negative", func(c *waitroom.RoomConfig) { c.WaitingTimeout = d(-time.Second) }, false},
		{"waiting_timeout under 1ms", func(c *waitroom.RoomConfig) { c.WaitingTimeout = d(time.Microsecond) }, false},
		{"waiting_timeout over max", func(c *waitroom.RoomConfig) { c.WaitingTimeout = waitroom.MaxDuration + 1 }, false},
		{"grace 0", func(c *waitroom.RoomConfig) { c.Grace = 0 }, true},
		{"grace negative", func(c *waitroom.RoomConfig) { c.Grace = d(-time.Millisecond) }, false},
		{"grace under 1ms", func(c *waitroom.RoomConfig) { c.Grace = d(time.Nanosecond) }, false},
		{"grace over max", func(c *waitroom.RoomConfig) { c.Grace = waitroom.MaxDuration + 1 }, false},
		{"paused", func(c *waitroom.RoomConfig) { c.Paused = true }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := waitroom.DefaultConfig()
			tt.mod(&c)
			err := c.Validate()
			if tt.ok {
				if err != nil {
					t.Errorf("Validate(%+v) = %v, want nil", c, err)
				}
				return
			}
			if got := waitroom.ErrorCode(err); got != waitroom.CodeInvalidConfig {
				t.Errorf("Validate(%+v) code = %q (%v), want %q", c, got, err, waitroom.CodeInvalidConfig)
			}
			if waitroom.ErrorMessage(err) == "" {
				t.Errorf("Validate(%+v) has an empty message", c)
			}
		})
	}
}

func TestParseRoomConfig(t *testing.T) {
	def := waitroom.DefaultConfig()
	with := func(mod func(*waitroom.RoomConfig)) waitroom.RoomConfig {
		c := waitroom.DefaultConfig()
		mod(&c)
		return c
	}
	tests := []struct {
		name string
		in   string
		want waitroom.RoomConfig
		code waitroom.Code // "" when the input is accepted
	}{
		{"empty body", "", def, ""},
		{"blank body", " \n\t ", def, ""},
		{"empty object", "{}", def, ""},
		{"one field", `{"capacity":5}`, with(func(c *waitroom.RoomConfig) { c.Capacity = 5 }), ""},
		{"every field", `{"mode":"manual","capacity":0,"rate_per_minute":60,"active_timeout":"90s","max_session":"1h","waiting_timeout":"0s","grace":"0s","paused":true}`,
			waitroom.RoomConfig{
				Mode: waitroom.ModeManual, Capacity: 0, RatePerMinute: 60,
				ActiveTimeout: waitroom.Duration(90 * time.Second), MaxSession: waitroom.Duration(time.Hour),
				WaitingTimeout: 0, Grace: 0, Paused: true,
			}, ""},
		{"explicit zero keeps zero, not default", `{"active_timeout":"0s","waiting_timeout":"0s"}`,
			with(func(c *waitroom.RoomConfig) { c.ActiveTimeout = 0; c.WaitingTimeout = 0 }), ""},
		{"unknown field", `{"capacity":5,"capacty":6}`, waitroom.RoomConfig{}, waitroom.CodeInvalidJSON},
		{"trailing object", `{} {}`, waitroom.RoomConfig{}, waitroom.CodeInvalidJSON},
		{"trailing garbage", `{"capacity":5}x`, waitroom.RoomConfig{}, waitroom.CodeInvalidJSON},
		{"trailing comma", `{"capacity":5},`, waitroom.RoomConfig{}, waitroom.CodeInvalidJSON},
		{"number for a duration", `{"grace":30}`, waitroom.RoomConfig{}, waitroom.CodeInvalidJSON},
		{"number for active_timeout", `{"active_timeout":300000000000}`, waitroom.RoomConfig{}, waitroom.CodeInvalidJSON},
		{"bad duration string", `{"grace":"soon"}`, waitroom.RoomConfig{}, waitroom.CodeInvalidJSON},
		{"negative duration", `{"grace":"-1s"}`, waitroom.RoomConfig{}, waitroom.CodeInvalidJSON},
		{"string for capacity", `{"capacity":"5"}`, waitroom.RoomConfig{}, waitroom.CodeInvalidJSON},
		{"not an object", `[1,2]`, waitroom.RoomConfig{}, waitroom.CodeInvalidJSON},
		{"truncated", `{"capacity":`, waitroom.RoomConfig{}, waitroom.CodeInvalidJSON},
		{"syntax error", `{capacity:5}`, waitroom.RoomConfig{}, waitroom.CodeInvalidJSON},
		{"negative capacity", `{"capacity":-1}`, waitroom.RoomConfig{}, waitroom.CodeInvalidConfig},
		{"unknown mode", `{"mode":"fast"}`, waitroom.RoomConfig{}, waitroom.CodeInvalidConfig},
		{"huge rate", `{"rate_per_minute":1000000001}`, waitroom.RoomConfig{}, waitroom.CodeInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := waitroom.ParseRoomConfig([]byte(tt.in))
			if tt.code == "" {
				if err != nil {
					t.Fatalf("ParseRoomConfig(%q) error = %v, want nil", tt.in, err)
				}
				if !got.Equal(tt.want) {
					t.Errorf("ParseRoomConfig(%q) = %+v, want %+v", tt.in, got, tt.want)
				}
				return
			}
			if code := waitroom.ErrorCode(err); code != tt.code {
				t.Errorf("ParseRoomConfig(%q) code = %q (err %v), want %q", tt.in, code, err, tt.code)
			}
			if waitroom.ErrorMessage(err) == "" {
				t.Errorf("ParseRoomConfig(%q) has an empty message", tt.in)
			}
		})
	}
}

func TestParseRoomConfigMessages(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{`{"capacty":6}`, `"capacty"`},
		{`{"capacity":"5"}`, `"capacity"`},
		{`{} {}`, "more than one"},
		{`{"grace":30}`, "duration"},
	}
	for _, tt := range tests {
		_, err := waitroom.ParseRoomConfig([]byte(tt.in))
		if msg := waitroom.ErrorMessage(err); !strings.Contains(msg, tt.want) {
			t.Errorf("ParseRoomConfig(%q) message = %q, want it to mention %q", tt.in, msg, tt.want)
		}
	}
}

func TestRoomConfigJSONRoundTrip(t *testing.T) {
	c := waitroom.RoomConfig{
		Mode: waitroom.ModeManual, Capacity: 7, RatePerMinute: 90,
		ActiveTimeout: waitroom.Duration(90 * time.Second), MaxSession: waitroom.Duration(2 * time.Hour),
		WaitingTimeout: waitroom.Duration(1500 * time.Millisecond), Grace: 0, Paused: true,
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"mode":"manual","capacity":7,"rate_per_minute":90,"active_timeout":"1m30s","max_session":"2h","waiting_timeout":"1.5s","grace":"0s","paused":true}`
	if string(b) != want {
		t.Errorf("json.Marshal(config) = %s, want %s", b, want)
	}
	got, err := waitroom.ParseRoomConfig(b)
	if err != nil {
		t.Fatalf("ParseRoomConfig(%s) error = %v", b, err)
	}
	if !got.Equal(c) {
		t.Errorf("round trip = %+v, want %+v", got, c)
	}
}

func TestDurationString(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{time.Millisecond, "1ms"},
		{1500 * time.Millisecond, "1.5s"},
		{30 * time.Second, "30s"},
		{90 * time.Second, "1m30s"},
		{5 * time.Minute, "5m"},
		{time.Hour, "1h"},
		{2 * time.Hour, "2h"},
		{time.Hour + 30*time.Minute, "1h30m"},
		{time.Hour + 5*time.Second, "1h0m5s"},
		{366 * 24 * time.Hour, "8784h"},
	}
	for _, tt := range tests {
		if got := waitroom.Duration(tt.d).String(); got != tt.want {
			t.Errorf("Duration(%v).String() = %q, want %q", tt.d, got, tt.want)
		}
		if got := waitroom.Duration(tt.d).D(); got != tt.d {
			t.Errorf("Duration(%v).D() = %v, want %v", tt.d, got, tt.d)
		}
	}
}

func TestDurationJSONRoundTrip(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond, 1500 * time.Millisecond, 90 * time.Second,
		5 * time.Minute, time.Hour, time.Hour + 30*time.Minute, time.Hour + 5*time.Second, waitroom.MaxDuration.D()} {
		b, err := json.Marshal(waitroom.Duration(d))
		if err != nil {
			t.Fatalf("json.Marshal(%v) error = %v", d, err)
		}
		if want := `"` + waitroom.Duration(d).String() + `"`; string(b) != want {
			t.Errorf("json.Marshal(%v) = %s, want %s", d, b, want)
		}
		var got waitroom.Duration
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("json.Unmarshal(%s) error = %v", b, err)
		}
		if got.D() != d {
			t.Errorf("round trip of %v = %v", d, got.D())
		}
	}
}

func TestDurationUnmarshalRefuses(t *testing.T) {
	for _, in := range []string{`30`, `30.5`, `null`, `true`, `{}`, `""`, `"30"`, `"-1s"`, `"500us"`, `"8785h"`, `"1 s"`} {
		d := waitroom.Duration(42)
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("json.Unmarshal(%s) = %v, want an error", in, d.D())
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"0s", 0, true},
		{"1ms", time.Millisecond, true},
		{"90s", 90 * time.Second, true},
		{"5m", 5 * time.Minute, true},
		{"1h30m", 90 * time.Minute, true},
		{"8784h", 366 * 24 * time.Hour, true},
		{"8784h0m0.000000001s", 0, false},
		{"8785h", 0, false},
		{"-1s", 0, false},
		{"-0s", 0, false}, // Go reads it; the document's pattern has no sign
		{"+5s", 0, false},
		{".5s", 0, false},
		{"5.s", 0, false},
		{"5μs", 0, false}, // the Greek mu, which Go also reads
		{"1500µs", 1500 * time.Microsecond, true},
		{"1.5s", 1500 * time.Millisecond, true},
		{"999us", 0, false},
		{"1ns", 0, false},
		{"", 0, false},
		{"5", 0, false},
		{"five minutes", 0, false},
		{strings.Repeat("0", 32) + "s", 0, false},
	}
	for _, tt := range tests {
		got, err := waitroom.ParseDuration(tt.in)
		if tt.ok != (err == nil) {
			t.Errorf("ParseDuration(%q) error = %v, want ok=%v", tt.in, err, tt.ok)
			continue
		}
		if tt.ok && got.D() != tt.want {
			t.Errorf("ParseDuration(%q) = %v, want %v", tt.in, got.D(), tt.want)
		}
	}
}

func TestValidRoomName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"default", true},
		{"a", true},
		{"0", true},
		{"a.b_c-d", true},
		{"9lives", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"A", false},
		{"Room", false},
		{"-a", false},
		{".a", false},
		{"_a", false},
		{"a b", false},
		{"a/b", false},
		{"a\n", false},
		{"é", false},
		{"a\x00", false},
	}
	for _, tt := range tests {
		if got := waitroom.ValidRoomName(tt.name); got != tt.ok {
			t.Errorf("ValidRoomName(%q) = %v, want %v", tt.name, got, tt.ok)
		}
		err := waitroom.CheckRoomName(tt.name)
		if tt.ok && err != nil {
			t.Errorf("CheckRoomName(%q) = %v, want nil", tt.name, err)
		}
		if !tt.ok && waitroom.ErrorCode(err) != waitroom.CodeInvalidRoomName {
			t.Errorf("CheckRoomName(%q) code = %q, want %q", tt.name, waitroom.ErrorCode(err), waitroom.CodeInvalidRoomName)
		}
	}
}

func TestCheckKey(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"u1", true},
		{"user@example.com", true},
		{" ", true},
		{"日本語", true},
		{strings.Repeat("k", waitroom.MaxKeyLen), true},
		{strings.Repeat("é", waitroom.MaxKeyLen/2), true},
		{strings.Repeat("k", waitroom.MaxKeyLen+1), false},
		{"", false},
		{"a\x00b", false},
		{"a\nb", false},
		{"\t", false},
		{"\x7f", false},
		{"\u0085", false},
		{"\u009f", false},
		{"\xff", false},
		{"a\xc3", false},
		{"\ufffd", false},
	}
	for _, tt := range tests {
		err := waitroom.CheckKey(tt.key)
		if tt.ok && err != nil {
			t.Errorf("CheckKey(%q) = %v, want nil", tt.key, err)
		}
		if !tt.ok && waitroom.ErrorCode(err) != waitroom.CodeInvalidKey {
			t.Errorf("CheckKey(%q) code = %q, want %q", tt.key, waitroom.ErrorCode(err), waitroom.CodeInvalidKey)
		}
	}
}

func TestPageSize(t *testing.T) {
	tests := []struct{ limit, want int }{
		{-5, waitroom.DefaultPageLimit},
		{0, waitroom.DefaultPageLimit},
		{1, 1},
		{50, 50},
		{waitroom.MaxPageLimit, waitroom.MaxPageLimit},
		{waitroom.MaxPageLimit + 1, waitroom.MaxPageLimit},
	}
	for _, tt := range tests {
		if got := (waitroom.Page{Limit: tt.limit}).Size(); got != tt.want {
			t.Errorf("Page{Limit: %d}.Size() = %d, want %d", tt.limit, got, tt.want)
		}
	}
}

// TestPageFields checks target_url and return_origins validation: the page
// must never be an open redirect, so only http(s) targets, paths on this
// server and bare origins pass.
func TestPageFields(t *testing.T) {
	for _, tt := range []struct {
		cfg string
		ok  bool
	}{
		{`{"target_url":"https://shop.example/checkout?x=1"}`, true},
		{`{"target_url":"/app/"}`, true},
		{`{"target_url":"//evil.example/"}`, false},
		{`{"target_url":"/\\evil.example"}`, false},
		{`{"target_url":"javascript:alert(1)"}`, false},
		{`{"target_url":"https://user:pw@shop.example/"}`, false},
		{`{"target_url":"shop.example"}`, false},
		{`{"return_origins":["https://shop.example","http://localhost:3000"]}`, true},
		{`{"return_origins":["https://shop.example/path"]}`, false},
		{`{"return_origins":["ftp://shop.example"]}`, false},
		{`{"return_origins":["https://shop.example?x"]}`, false},
	} {
		_, err := waitroom.ParseRoomConfig([]byte(tt.cfg))
		if (err == nil) != tt.ok {
			t.Errorf("ParseRoomConfig(%s): error %v, want ok=%v", tt.cfg, err, tt.ok)
		}
		if err != nil && waitroom.ErrorCode(err) != waitroom.CodeInvalidConfig {
			t.Errorf("ParseRoomConfig(%s): code %q, want invalid_config", tt.cfg, waitroom.ErrorCode(err))
		}
	}
	if o, err := waitroom.ParseOrigin("HTTPS://Shop.Example:8443"); err != nil || o != "https://shop.example:8443" {
		t.Errorf("ParseOrigin: got %q, %v; want the lower-case origin", o, err)
	}
}

// TestETag: a room's ETag is its revision, quoted and strong; ParseETag
// reads back exactly those and refuses everything else.
func TestETag(t *testing.T) {
	if got := (waitroom.Room{Revision: 42}).ETag(); got != `"42"` {
		t.Errorf("ETag = %s, want \"42\"", got)
	}
	for tag, want := range map[string]int64{`"1"`: 1, `"9223372036854775807"`: 9223372036854775807} {
		if rev, ok := waitroom.ParseETag(tag); !ok || rev != want {
			t.Errorf("ParseETag(%s) = %d, %v; want %d", tag, rev, ok, want)
		}
	}
	for _, tag := range []string{``, `"`, `""`, `1`, `"1`, `1"`, `W/"1"`, `"01"`, `"0"`, `"-1"`, `"+1"`, `"1 "`, `"9223372036854775808"`, `"x"`, `*`} {
		if rev, ok := waitroom.ParseETag(tag); ok {
			t.Errorf("ParseETag(%s) = %d, true; want refused", tag, rev)
		}
	}
}
