package sqlitestore

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/waitroom/waitroom"
)

// The lines of a webhook log row (hook_log.msgs), one per message. A
// session event is written as its fields, not its JSON, so a join adds
// about 80 bytes to its commit rather than 250, and no JSON is made on the
// way in:
//
//	s type at session ticket key tier status from reason joined admitted ended waiting active entry [position contact claim_by claim_path]
//
// tab-separated, times in unix milliseconds (0 for none); keys, tiers,
// contacts and entries hold no control characters, ids none at all. The
// four last fields are there only when one is set (session.near,
// session.invited, a held session's events). Any other event
// is j, type, at and its JSON. The JSON a webhook is sent is made when the
// message is read (HookSession.AppendJSON), and is the same as
// waitroom.HookMessages gives.

// logLines is one event's lines and how many.
type logLines struct {
	n int
	b []byte
}

// appendLogEvent appends h as one line.
func appendLogEvent(b []byte, h waitroom.HookEvent) []byte {
	d := h.Session
	if d == nil {
		b = append(b, 'j', '\t')
		b = append(b, h.Type...)
		b = append(b, '\t')
		b = strconv.AppendInt(b, h.At.UnixMilli(), 10)
		b = append(b, '\t')
		m := h.Message()
		b = append(b, m.Data...)
		return append(b, '\n')
	}
	msOf := func(t *time.Time) int64 {
		if t == nil || t.IsZero() {
			return 0
		}
		return t.UnixMilli()
	}
	b = append(b, 's', '\t')
	b = append(b, h.Type...)
	b = append(b, '\t')
	b = strconv.AppendInt(b, h.At.UnixMilli(), 10)
	for _, f := range []string{d.Session} {
		b = append(b, '\t')
		b = append(b, f...)
	}
	b = append(b, '\t')
	b = strconv.AppendInt(b, d.Ticket, 10)
	for _, f := range []string{d.Key, d.Tier, string(d.Status), string(d.From), string(d.Reason)} {
		b = append(b, '\t')
		b = append(b, f...)
	}
	for _, v := range []int64{msOf(&d.JoinedAt), msOf(d.Admitted), msOf(d.EndedAt), int64(d.Waiting), int64(d.Active)} {
		b = append(b, '\t')
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, '\t')
	b = append(b, d.Entry...)
	if d.Position != 0 || d.Contact != "" || d.ClaimBy != nil || d.ClaimPath != "" {
		b = append(b, '\t')
		b = strconv.AppendInt(b, d.Position, 10)
		b = append(b, '\t')
		b = append(b, d.Contact...)
		b = append(b, '\t')
		b = strconv.AppendInt(b, msOf(d.ClaimBy), 10)
		b = append(b, '\t')
		b = append(b, d.ClaimPath...)
	}
	return append(b, '\n')
}

// logLineType returns the type of a line, without reading the rest.
func logLineType(line []byte) string {
	if len(line) < 2 {
		return ""
	}
	typ, _, _ := bytes.Cut(line[2:], []byte{'\t'})
	return string(typ)
}

// logLineAt returns the time of a line (unix ms).
func logLineAt(line []byte) (int64, bool) {
	if len(line) < 2 {
		return 0, false
	}
	_, rest, _ := bytes.Cut(line[2:], []byte{'\t'})
	at, _, _ := bytes.Cut(rest, []byte{'\t'})
	v, err := strconv.ParseInt(string(at), 10, 64)
	return v, err == nil
}

// parseLogLine reads a line of room's log into its message (without ID).
func parseLogLine(room string, line []byte) (waitroom.HookMessage, bool) {
	f := bytes.Split(line, []byte{'\t'})
	if len(f) < 4 {
		return waitroom.HookMessage{}, false
	}
	num := func(b []byte) (int64, bool) {
		v, err := strconv.ParseInt(string(b), 10, 64)
		return v, err == nil
	}
	at, ok := num(f[2])
	if !ok {
		return waitroom.HookMessage{}, false
	}
	m := waitroom.HookMessage{Type: string(f[1]), At: time.UnixMilli(at).UTC()}
	switch {
	case string(f[0]) == "j":
		m.Data = json.RawMessage(bytes.Join(f[3:], []byte{'\t'}))
		return m, true
	case string(f[0]) != "s" || (len(f) != 16 && len(f) != 20):
		return waitroom.HookMessage{}, false
	}
	var n [6]int64
	for i, j := range []int{4, 10, 11, 12, 13, 14} {
		v, ok := num(f[j])
		if !ok {
			return waitroom.HookMessage{}, false
		}
		n[i] = v
	}
	tmOf := func(v int64) *time.Time {
		if v == 0 {
			return nil
		}
		t := time.UnixMilli(v).UTC()
		return &t
	}
	d := waitroom.HookSession{Room: room, Session: string(f[3]), Ticket: n[0], Key: string(f[5]), Tier: string(f[6]),
		Status: waitroom.Status(f[7]), From: waitroom.Status(f[8]), Reason: waitroom.Reason(f[9]),
		Admitted: tmOf(n[2]), EndedAt: tmOf(n[3]), Waiting: int(n[4]), Active: int(n[5]), Entry: string(f[15])}
	if n[1] != 0 {
		d.JoinedAt = time.UnixMilli(n[1]).UTC()
	}
	if len(f) == 20 {
		pos, ok1 := num(f[16])
		claimBy, ok2 := num(f[18])
		if !ok1 || !ok2 {
			return waitroom.HookMessage{}, false
		}
		d.Position, d.Contact, d.ClaimBy, d.ClaimPath = pos, string(f[17]), tmOf(claimBy), string(f[19])
	}
	m.Data = d.AppendJSON(nil)
	return m, true
}
