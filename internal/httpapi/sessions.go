package httpapi

import (
	"net/http"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
)

// joinRequest is the optional body of a join.
type joinRequest struct {
	// Key is an identity only a trusted caller (with the admin token) may
	// set; a pointer tells an absent key from an empty one.
	Key *string `json:"key"`
	// Invite is an invite token (see package invite); Challenge a solved
	// proof-of-work challenge (package challenge).
	Invite    string `json:"invite"`
	Challenge string `json:"challenge"`
	// Contact makes the join held (a room with hold_places): the trusted
	// backend's opaque way to reach the person, which the webhooks carry.
	// Like Key it needs the admin token; a pointer tells an absent contact
	// from an empty one.
	Contact *string `json:"contact"`
}

// join: POST /v1/rooms/{room}/sessions.
func (s *server) join(w http.ResponseWriter, r *http.Request) error {
	room, err := roomName(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	var req joinRequest
	if err := decodeOptional(body, &req); err != nil {
		return err
	}
	// A caller with the admin token is a trusted backend joining on behalf
	// of its users (see admit.Request.Trusted).
	trusted := false
	if _, ok := r.Header["Authorization"]; ok {
		err := s.tokenCheck(r)
		if waitroom.ErrorCode(err) == waitroom.CodeRateLimited {
			return err // a guess from an address out of wrong tokens
		}
		trusted = err == nil
	}
	now := s.now()
	sess, err := s.admit.Enter(r, admit.Request{Room: room, Key: req.Key, Contact: req.Contact,
		Invite: req.Invite, Challenge: req.Challenge, Trusted: trusted}, now)
	if err != nil {
		return err
	}
	s.complete(&sess, now)
	writeSession(w, http.StatusCreated, sess)
	return nil
}

// session: GET /v1/rooms/{room}/sessions/{id}. Reading counts as presence.
func (s *server) session(w http.ResponseWriter, r *http.Request) error {
	room, err := roomName(r)
	if err != nil {
		return err
	}
	now := s.now()
	sess, err := s.store.Session(r.Context(), room, r.PathValue("id"), now)
	if err != nil {
		return err
	}
	s.complete(&sess, now)
	writeSession(w, http.StatusOK, sess)
	return nil
}

// heartbeat: POST /v1/rooms/{room}/sessions/{id}/heartbeat.
func (s *server) heartbeat(w http.ResponseWriter, r *http.Request) error {
	room, err := roomName(r)
	if err != nil {
		return err
	}
	now := s.now()
	sess, err := s.store.Heartbeat(r.Context(), room, r.PathValue("id"), now)
	if err != nil {
		return err
	}
	s.complete(&sess, now)
	writeSession(w, http.StatusOK, sess)
	return nil
}

// claim: POST /v1/rooms/{room}/sessions/{id}/claim. An invited (held)
// session claims its slot and becomes active; the answer carries its pass
// like any active session's. The id is the credential, as for heartbeat.
// An active session answers as it is; a waiting or ended one is 409
// not_invited.
func (s *server) claim(w http.ResponseWriter, r *http.Request) error {
	room, err := roomName(r)
	if err != nil {
		return err
	}
	now := s.now()
	sess, err := s.store.Claim(r.Context(), room, r.PathValue("id"), now)
	if err != nil {
		return err
	}
	s.complete(&sess, now)
	writeSession(w, http.StatusOK, sess)
	return nil
}

// away: POST /v1/rooms/{room}/sessions/{id}/away. Built for
// navigator.sendBeacon, which sends a body of any type: it is read (up to
// maxBody) and ignored.
func (s *server) away(w http.ResponseWriter, r *http.Request) error {
	discardBody(w, r)
	room, err := roomName(r)
	if err != nil {
		return err
	}
	if err := s.store.Away(r.Context(), room, r.PathValue("id"), s.now()); err != nil {
		return err
	}
	noContent(w)
	return nil
}

// leave: DELETE /v1/rooms/{room}/sessions/{id}. Without Authorization the
// holder of the id leaves; with the admin token an operator revokes it; with
// a wrong token the request is refused rather than quietly downgraded.
func (s *server) leave(w http.ResponseWriter, r *http.Request) error {
	reason := waitroom.ReasonLeft
	if s.adminAsked(r) {
		if err := s.adminCheck(r); err != nil {
			return err
		}
		reason = waitroom.ReasonRevoked
	}
	room, err := roomName(r)
	if err != nil {
		return err
	}
	sess, err := s.store.Leave(r.Context(), room, r.PathValue("id"), reason, s.now())
	if err != nil {
		return err
	}
	if reason == waitroom.ReasonRevoked {
		s.audit(r, waitroom.AuditEntry{Room: room, Action: waitroom.AuditRevoke, Session: sess.ID, Ticket: sess.Ticket,
			Detail: auditDetail(map[string]any{"status": sess.Status, "end_reason": sess.EndReason})})
	}
	writeSession(w, http.StatusOK, sess)
	return nil
}
