package sqlitestore

import (
	"bytes"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/waitroom/waitroom"
)

// TestLogLinesRoundTrip: a webhook event written as a log line reads back
// as exactly the message waitroom.HookMessages would have sent, for any
// session fields a store can hold (printable keys and tiers, millisecond
// times) and for room events.
func TestLogLinesRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.StringMatching(`[ -~¡-⿿]{0,20}`)
		ms := func(label string, zero bool) time.Time {
			if zero && rapid.Bool().Draw(t, label+"zero") {
				return time.Time{}
			}
			return time.UnixMilli(rapid.Int64Range(1, 4e12).Draw(t, label)).UTC()
		}
		at := ms("at", false)
		var h waitroom.HookEvent
		if rapid.Bool().Draw(t, "room event") {
			h = waitroom.HookEvent{Type: waitroom.HookRoomSoldOut, At: at, Room: &waitroom.HookRoom{Room: "r", Waiting: rapid.Int().Draw(t, "w"),
				Sold: rapid.Int64().Draw(t, "sold"), Paused: rapid.Bool().Draw(t, "paused")}}
		} else {
			d := &waitroom.HookSession{Room: "r", Session: rapid.StringMatching(`[A-Za-z0-9_-]{0,40}`).Draw(t, "id"),
				Ticket: rapid.Int64().Draw(t, "ticket"), Key: text.Draw(t, "key"), Tier: text.Draw(t, "tier"),
				Status:   waitroom.Status(rapid.SampledFrom([]string{"waiting", "invited", "active", "left", "expired", "served"}).Draw(t, "status")),
				From:     waitroom.Status(rapid.SampledFrom([]string{"", "waiting", "invited", "active"}).Draw(t, "from")),
				Reason:   waitroom.Reason(rapid.SampledFrom([]string{"", "left", "idle", "sold_out", "unclaimed"}).Draw(t, "reason")),
				JoinedAt: ms("joined", true), Waiting: rapid.IntRange(0, 1<<40).Draw(t, "waiting"), Active: rapid.IntRange(0, 1<<40).Draw(t, "active"),
				Entry: text.Draw(t, "entry")}
			if a := ms("admitted", true); !a.IsZero() {
				d.Admitted = &a
			}
			if e := ms("ended", true); !e.IsZero() {
				d.EndedAt = &e
			}
			if rapid.Bool().Draw(t, "held") {
				d.Position, d.Contact = rapid.Int64Range(0, 1000).Draw(t, "position"), text.Draw(t, "contact")
				if c := ms("claim_by", true); !c.IsZero() {
					d.ClaimBy, d.ClaimPath = &c, "/claim/r/"+d.Session
				}
			}
			h = waitroom.HookEvent{Type: waitroom.HookSessionEnded, At: at, Session: d}
		}
		line := appendLogEvent(nil, h)
		if bytes.Count(line, []byte{'\n'}) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("line %q is not one line", line)
		}
		line = line[:len(line)-1]
		got, ok := parseLogLine("r", line)
		want := h.Message()
		if !ok || got.Type != want.Type || !got.At.Equal(want.At) || string(got.Data) != string(want.Data) {
			t.Fatalf("read back %+v (%v)\nwant %+v\nline %q", got, ok, want, line)
		}
		if typ := logLineType(line); typ != h.Type {
			t.Fatalf("type %q, want %q", typ, h.Type)
		}
		if a, ok := logLineAt(line); !ok || a != at.UnixMilli() {
			t.Fatalf("at %d, want %d", a, at.UnixMilli())
		}
	})
}
