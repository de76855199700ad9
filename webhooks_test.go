package waitroom

import (
	"encoding/json"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestHookSessionJSON: the hand-written encoder of session events gives
// exactly what encoding/json gives, for any strings (control characters,
// HTML, invalid UTF-8, U+2028) and times.
func TestHookSessionJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		str := rapid.OneOf(rapid.String(), rapid.StringOf(rapid.RuneFrom([]rune{'<', '>', '&', '"', '\\', '\n', '\u2028', '\u2029', 0, 0x1f, 'é', '😀'})),
			rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }))
		tm := func(label string) time.Time {
			return time.Unix(rapid.Int64Range(-1e10, 1e11).Draw(t, label+"s"), rapid.Int64Range(0, 999_999_999).Draw(t, label+"ns")).UTC()
		}
		d := HookSession{Room: str.Draw(t, "room"), Session: str.Draw(t, "session"), Ticket: rapid.Int64().Draw(t, "ticket"),
			Key: str.Draw(t, "key"), Tier: str.Draw(t, "tier"), Status: Status(str.Draw(t, "status")), From: Status(str.Draw(t, "from")),
			Reason: Reason(str.Draw(t, "reason")), JoinedAt: tm("joined"), Waiting: rapid.Int().Draw(t, "waiting"),
			Active: rapid.Int().Draw(t, "active"), Entry: str.Draw(t, "entry")}
		if rapid.Bool().Draw(t, "admitted") {
			a := tm("admitted")
			d.Admitted = &a
		}
		if rapid.Bool().Draw(t, "ended") {
			e := tm("ended")
			d.EndedAt = &e
		}
		d.Position, d.Contact, d.ClaimPath = rapid.Int64().Draw(t, "position"), str.Draw(t, "contact"), str.Draw(t, "claim_path")
		if rapid.Bool().Draw(t, "invited") {
			c := tm("claim_by")
			d.ClaimBy = &c
		}
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("AppendJSON = %s\nencoding/json = %s", got, want)
		}
	})
}

// TestHookMessagesSession: a join that is admitted at once makes
// session.joined and session.admitted with the same data; an ending
// makes session.ended with its reason; a move inside the line none.
func TestHookMessagesSession(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := Session{ID: "abc", Room: "r", Ticket: 7, Status: StatusActive, JoinedAt: at, AdmittedAt: at}
	ended := s
	ended.Status, ended.EndReason, ended.EndedAt = StatusLeft, ReasonLeft, at.Add(time.Second)
	moved := s
	moved.Status = StatusWaiting
	e := Event{Room: "r", Kind: EventSessions, At: at, Waiting: 2, Active: 1, Changes: []Change{{Session: s}, {Session: ended, From: StatusActive}, {Session: moved, From: StatusWaiting}}}
	ms := HookMessages(e)
	if len(ms) != 3 || ms[0].Type != HookSessionJoined || ms[1].Type != HookSessionAdmitted || ms[2].Type != HookSessionEnded {
		t.Fatalf("messages %+v", ms)
	}
	var d HookSession
	if err := json.Unmarshal(ms[2].Data, &d); err != nil || d.Reason != ReasonLeft || d.From != StatusActive || d.Ticket != 7 || d.EndedAt == nil || d.Waiting != 2 {
		t.Fatalf("ended data %s: %v", ms[2].Data, err)
	}
	if string(ms[0].Data) != string(ms[1].Data) {
		t.Fatalf("joined and admitted data differ: %s / %s", ms[0].Data, ms[1].Data)
	}
}
