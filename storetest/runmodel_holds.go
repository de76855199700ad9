package storetest

import (
	"time"

	"github.com/waitroom/waitroom"
	"pgregory.net/rapid"
)

// The model test's moves for holding places and telling sessions they are
// near: configurations with hold_places, claim_window and notify_at, held
// joins (in rooms that hold places and in rooms that refuse them), and
// claims.

func init() {
	refusal[waitroom.CodeNotInvited] = "of a session that is not invited"
}

// withHolds sometimes makes cfg hold places, and sometimes sets notify_at.
func (h *modelRun) withHolds(t *rapid.T, cfg waitroom.RoomConfig) waitroom.RoomConfig {
	if rapid.IntRange(0, 2).Draw(t, "hold_places") == 0 {
		cfg.HoldPlaces = true
		cfg.ClaimWindow = waitroom.Duration(rapid.SampledFrom([]time.Duration{sec, 5 * sec, 30 * sec, 5 * time.Minute}).Draw(t, "claim_window"))
	}
	cfg.NotifyAt = rapid.SampledFrom([]int{0, 0, 1, 2, 3}).Draw(t, "notify_at")
	return cfg
}

// modelContacts are the contacts held joins give.
var modelContacts = []string{"", "", "", "sms:+15550100", "mailto:a@example.com"}

// claim claims a session: invited ones become active, others are refused.
func (h *modelRun) claim(t *rapid.T) {
	id := h.pick(t)
	now := h.when(t)
	s, code := h.session(id)
	h.begin(t, "Claim %s", h.label(id))
	got, err := h.s.Claim(h.ctx, h.m.name, id, now)
	if code == "" {
		if c := h.m.claim(s, now); c != "" {
			wantCode(t, "Claim", err, c)
			h.recover(t, now)
			h.checkEvents(t, "")
			return
		}
	}
	if h.refused(t, "Claim", err, code, now) {
		return
	}
	h.compare(t, "Claim", got, s)
	h.checkEvents(t, waitroom.EventSessions)
}

// checkNearEvents checks each near change the store sent: a waiting
// session of this room at a position of at most notify_at, where the model
// has it now.
func (h *modelRun) checkNearEvents(t *rapid.T, events []waitroom.Event) {
	t.Helper()
	for _, e := range events {
		for _, c := range e.Changes {
			if !c.Near {
				continue
			}
			s := h.sessions[c.Session.ID]
			if c.Session.Status != waitroom.StatusWaiting || c.From != waitroom.StatusWaiting || s == nil {
				t.Fatalf("near change of #%d: %s→%s, want a waiting session", c.Session.Ticket, c.From, c.Session.Status)
			}
			if want := h.m.position(s); s.status == waitroom.StatusWaiting && c.Session.Position != want {
				t.Fatalf("near change of #%d at position %d, want %d", c.Session.Ticket, c.Session.Position, want)
			}
			if c.Session.Position < 1 || c.Session.Position > int64(h.m.cfg.NotifyAt) {
				t.Fatalf("near change of #%d at position %d, notify_at %d", c.Session.Ticket, c.Session.Position, h.m.cfg.NotifyAt)
			}
			if c.Session.Contact != s.contact {
				t.Fatalf("near change of #%d: contact %q, want %q", c.Session.Ticket, c.Session.Contact, s.contact)
			}
		}
	}
}
