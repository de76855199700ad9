package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/waitroom/waitroom"
)

// The operator's moves and lookups: queue-all, move to the front, extend,
// find, and the audit log. All admin.

// queueAll: POST /v1/rooms/{room}/queue-all, admin.
func (s *server) queueAll(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	discardBody(w, r)
	room, moved, err := s.store.QueueAll(r.Context(), name, s.now())
	if err != nil {
		return err
	}
	s.audit(r, waitroom.AuditEntry{Room: name, Action: waitroom.AuditQueueAll, Detail: auditDetail(map[string]any{"moved": len(moved)})})
	return writeJSON(w, http.StatusOK, room)
}

// frontRequest is the body of a move to the front.
type frontRequest struct {
	Reason string `json:"reason"`
}

// front: POST /v1/rooms/{room}/sessions/{id}/front {"reason":…}, admin.
func (s *server) front(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	var req frontRequest
	if err := waitroom.DecodeJSON(body, &req); err != nil {
		return err
	}
	// Checked as sent, then trimmed: the document bounds what is sent.
	if err := waitroom.CheckAuditReason(req.Reason); err != nil {
		return err
	}
	req.Reason = strings.TrimSpace(req.Reason)
	if req.Reason == "" {
		return waitroom.Errorf(waitroom.CodeInvalidRequest, `Say why in "reason", such as {"reason":"lost their place to a bug"}; it goes into the audit log.`)
	}
	sess, err := s.store.Front(r.Context(), name, r.PathValue("id"), s.now())
	if err != nil {
		return err
	}
	s.audit(r, waitroom.AuditEntry{Room: name, Action: waitroom.AuditFront, Session: sess.ID, Ticket: sess.Ticket, Reason: req.Reason})
	s.writeFilled(w, sess)
	return nil
}

// extendRequest is the body of an extension.
type extendRequest struct {
	By     *waitroom.Duration `json:"by"`
	Reason string             `json:"reason"`
}

// extend: POST /v1/rooms/{room}/sessions/{id}/extend {"by":"10m"}, admin.
func (s *server) extend(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	var req extendRequest
	if err := waitroom.DecodeJSON(body, &req); err != nil {
		return err
	}
	if req.By == nil {
		return waitroom.Errorf(waitroom.CodeInvalidRequest, `Say how much longer in "by", such as {"by":"10m"}.`)
	}
	if err := waitroom.CheckExtend(req.By.D()); err != nil {
		return err
	}
	if err := waitroom.CheckAuditReason(req.Reason); err != nil {
		return err
	}
	req.Reason = strings.TrimSpace(req.Reason)
	sess, err := s.store.Extend(r.Context(), name, r.PathValue("id"), req.By.D(), s.now())
	if err != nil {
		return err
	}
	s.audit(r, waitroom.AuditEntry{Room: name, Action: waitroom.AuditExtend, Session: sess.ID, Ticket: sess.Ticket, Reason: req.Reason,
		Detail: auditDetail(map[string]any{"by": req.By.String(), "extended": waitroom.Duration(sess.Extended).String()})})
	s.writeFilled(w, sess)
	return nil
}

// writeFilled writes a session an admin asked about, filled like any other.
func (s *server) writeFilled(w http.ResponseWriter, sess waitroom.Session) {
	if s.fill != nil {
		s.fill(&sess, s.now())
	}
	writeSession(w, http.StatusOK, sess)
}

// findAnswer is the answer of find.
type findAnswer struct {
	Sessions []waitroom.Session    `json:"sessions"`
	Audit    []waitroom.AuditEntry `json:"audit"`
}

// maxFindQuery is the longest q of a find: a key is at most MaxKeyLen bytes.
const maxFindQuery = waitroom.MaxKeyLen

// find: GET /v1/rooms/{room}/find?q=, admin. q is a ticket number, a key, or
// the start of a session id (at least 11 characters, which hold the ticket).
func (s *server) find(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()["q"]
	if len(q) != 1 || q[0] == "" {
		return waitroom.Errorf(waitroom.CodeInvalidRequest, "Give one q: a ticket number, a key, or the start of a session id.")
	}
	query := q[0]
	if len(query) > maxFindQuery {
		return waitroom.Errorf(waitroom.CodeInvalidRequest, "q is at most %d bytes.", maxFindQuery)
	}
	var found []waitroom.Session
	try := func(ticket int64, key string, keep func(waitroom.Session) bool) error {
		sess, err := s.store.Lookup(r.Context(), name, ticket, key)
		switch {
		case waitroom.ErrorCode(err) == waitroom.CodeSessionNotFound:
			return nil
		case err != nil:
			return err
		}
		if keep(sess) && !containsID(found, sess.ID) {
			found = append(found, sess)
		}
		return nil
	}
	all := func(waitroom.Session) bool { return true }
	if t, ok := ticketQuery(query); ok {
		if err := try(t, "", all); err != nil {
			return err
		}
	}
	if t, ok := waitroom.TicketOfIDPrefix(query); ok {
		if err := try(t, "", func(x waitroom.Session) bool { return strings.HasPrefix(x.ID, query) }); err != nil {
			return err
		}
	}
	if waitroom.CheckKey(query) == nil {
		if err := try(0, query, all); err != nil {
			return err
		}
	}
	out := findAnswer{Sessions: nonNil(found), Audit: []waitroom.AuditEntry{}}
	if s.ledger != nil {
		for _, x := range found {
			entries, _, err := s.ledger.Audit(r.Context(), name, x.ID, waitroom.Page{Limit: 50})
			if err != nil {
				return err
			}
			out.Audit = append(out.Audit, entries...)
		}
	}
	for i := range out.Sessions {
		if s.fill != nil {
			s.fill(&out.Sessions[i], s.now())
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// ticketQuery reads q as a ticket number: decimal digits, optionally after
// "#", as the console shows tickets. Signs and spaces are no ticket.
func ticketQuery(q string) (int64, bool) {
	digits := strings.TrimPrefix(q, "#")
	if digits == "" || len(digits) > 19 || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	t, err := strconv.ParseInt(digits, 10, 64)
	return t, err == nil && t > 0
}

func containsID(ss []waitroom.Session, id string) bool {
	for _, x := range ss {
		if x.ID == id {
			return true
		}
	}
	return false
}

// auditAnswer is the answer of GET /v1/rooms/{room}/audit.
type auditAnswer struct {
	Entries []waitroom.AuditEntry `json:"entries"`
	Next    string                `json:"next"`
}

// auditLog: GET /v1/rooms/{room}/audit?limit=&after=&session=, admin.
func (s *server) auditLog(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	page, err := pageParams(r.URL.Query())
	if err != nil {
		return err
	}
	if s.ledger == nil {
		return waitroom.Errorf(waitroom.CodeNotFound, "This store keeps no audit log.")
	}
	if _, err := s.store.Room(r.Context(), name); err != nil {
		return err
	}
	session := r.URL.Query().Get("session")
	if len(session) > 64 {
		return waitroom.Errorf(waitroom.CodeInvalidRequest, "session is a session id.")
	}
	entries, next, err := s.ledger.Audit(r.Context(), name, session, page)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, auditAnswer{Entries: nonNil(entries), Next: next})
}

// audit records an operator's action, after it took effect. A ledger that
// fails loses the entry, not the action: the failure is logged.
func (s *server) audit(r *http.Request, e waitroom.AuditEntry) {
	if s.ledger == nil {
		return
	}
	e.At = s.now()
	e.Actor = waitroom.AuditActorAPI
	if _, bearer := r.Header["Authorization"]; !bearer {
		e.Actor = waitroom.AuditActorConsole
	}
	if err := s.ledger.AddAudit(r.Context(), e); err != nil {
		s.log.Warn("audit entry lost", "room", e.Room, "action", e.Action, "err", err)
	}
	if s.onAudit != nil {
		s.onAudit(e)
	}
}

// auditConfig records a PUT of a room: pause or resume when that is all
// that changed, else config with the fields that did.
func (s *server) auditConfig(r *http.Request, name string, before waitroom.RoomConfig, created bool, after waitroom.RoomConfig) {
	if created {
		s.audit(r, waitroom.AuditEntry{Room: name, Action: waitroom.AuditConfig, Detail: auditDetail(map[string]any{"created": after})})
		return
	}
	changes := configChanges(before, after)
	action := waitroom.AuditConfig
	if _, ok := changes["paused"]; ok && len(changes) == 1 {
		action = waitroom.AuditResume
		if after.Paused {
			action = waitroom.AuditPause
		}
	}
	s.audit(r, waitroom.AuditEntry{Room: name, Action: action, Detail: auditDetail(map[string]any{"changed": changes})})
}

// auditDetail encodes what an action changed.
func auditDetail(v any) []byte {
	b, err := jsonMarshal(v)
	if err != nil || len(b) > waitroom.MaxAuditDetail {
		return nil
	}
	return b
}

// configChanges lists the fields of a room's configuration that differ.
func configChanges(before, after waitroom.RoomConfig) map[string][2]any {
	a, _ := jsonMarshal(before)
	b, _ := jsonMarshal(after)
	var x, y map[string]any
	_ = jsonUnmarshal(a, &x)
	_ = jsonUnmarshal(b, &y)
	out := map[string][2]any{}
	for k, v := range y {
		if old, ok := x[k]; !ok || !jsonEqual(old, v) {
			out[k] = [2]any{x[k], v}
		}
	}
	for k, v := range x {
		if _, ok := y[k]; !ok {
			out[k] = [2]any{v, nil}
		}
	}
	return out
}

func jsonMarshal(v any) ([]byte, error)   { return json.Marshal(v) }
func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
func jsonEqual(a, b any) bool             { return reflect.DeepEqual(a, b) }
