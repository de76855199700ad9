package httpapi

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	"github.com/waitroom/waitroom"
)

// Safe changes to a live room: PATCH (a JSON merge patch, RFC 7396), pause
// and resume, and the entity tags that make them, and PUT, conditional.
// A room's ETag is its configuration's revision (waitroom.Room.ETag); If-Match
// is checked against a read of the room, and the change is then made with
// Store.UpdateRoom on the revision read, so the check and the change are one
// atomic step in the store however many processes share it: a change made
// by anyone in between makes UpdateRoom fail (412 precondition_failed), never
// get lost.

// patchTries bounds how often a change without If-Match is made again from a
// fresh read when another change lands between its read and its write. Each
// retry means someone else's change went in, so running out takes a storm of
// changes to one room; it then answers 412 like a stale If-Match.
const patchTries = 8

// maxReasonBody bounds the body of pause and resume: a reason of
// waitroom.MaxAuditReason bytes, escaped, fits many times over.
const maxReasonBody = 8 << 10

// condition is a request's If-Match: absent, "*" (any current room), or a
// list of entity tags.
type condition struct {
	set  bool
	any  bool
	tags []string
}

// ifMatch reads the If-Match header fields of r.
func ifMatch(r *http.Request) condition {
	vs := r.Header.Values("If-Match")
	if len(vs) == 0 {
		return condition{}
	}
	c := condition{set: true}
	for _, v := range vs {
		for _, t := range strings.Split(v, ",") {
			switch t = strings.TrimSpace(t); t {
			case "":
			case "*":
				c.any = true
			default:
				c.tags = append(c.tags, t)
			}
		}
	}
	return c
}

// matches reports whether room satisfies the condition, comparing entity
// tags strongly (RFC 9110 13.1.1): a weak tag never matches.
func (c condition) matches(room waitroom.Room) bool {
	if !c.set || c.any {
		return true
	}
	for _, t := range c.tags {
		if rev, ok := waitroom.ParseETag(t); ok && rev == room.Revision {
			return true
		}
	}
	return false
}

// preconditionFailed is the 412 of a condition the room does not meet.
func preconditionFailed(name string) error {
	return waitroom.Errorf(waitroom.CodePreconditionFailed,
		"Room %q is not at the version If-Match names (its ETag changed, or it does not exist): nothing was changed; read the room again and make the change afresh.", name)
}

// writeRoom answers a room with its ETag.
func writeRoom(w http.ResponseWriter, status int, room waitroom.Room) error {
	w.Header().Set("ETag", room.ETag())
	return writeJSON(w, status, room)
}

// change applies edit to room name's configuration under cond: it reads the
// room, checks cond, makes the new configuration with edit and writes it
// with UpdateRoom on the revision read. Without If-Match a write that finds
// the room changed since its read starts again from a fresh read, so a
// change to other fields made meanwhile is kept, never overwritten. An edit
// that changes nothing writes nothing (changed false).
func (s *server) change(r *http.Request, name string, cond condition, edit func(waitroom.RoomConfig) (waitroom.RoomConfig, error)) (before, after waitroom.Room, changed bool, err error) {
	ctx := r.Context()
	for range patchTries {
		before, err = s.store.Room(ctx, name)
		if err != nil {
			return before, after, false, err
		}
		if !cond.matches(before) {
			return before, after, false, preconditionFailed(name)
		}
		cfg, err := edit(before.RoomConfig)
		if err != nil {
			return before, after, false, err
		}
		if cfg.Equal(before.RoomConfig) {
			return before, before, false, nil
		}
		after, err = s.store.UpdateRoom(ctx, name, cfg, before.Revision, s.now())
		if waitroom.ErrorCode(err) == waitroom.CodePreconditionFailed && !cond.set {
			continue // changed meanwhile: merge into the fresh room
		}
		if waitroom.ErrorCode(err) == waitroom.CodePreconditionFailed {
			err = preconditionFailed(name)
		}
		return before, after, err == nil, err
	}
	return before, after, false, waitroom.Errorf(waitroom.CodePreconditionFailed,
		"Room %q changed %d times while this change was being made: nothing was changed; try again.", name, patchTries)
}

// patchRoom: PATCH /v1/rooms/{room}, admin. The body is a JSON merge patch
// of the configuration (RFC 7396): a field it names takes its value, null
// takes a field back to its default, and every field it does not name stays
// as it is. The result is checked exactly as a PUT body is.
func (s *server) patchRoom(w http.ResponseWriter, r *http.Request) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	if err := patchType(r); err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	var patch map[string]json.RawMessage
	if err := decodePatch(body, &patch); err != nil {
		return err
	}
	before, after, changed, err := s.change(r, name, ifMatch(r), func(cfg waitroom.RoomConfig) (waitroom.RoomConfig, error) {
		return mergeConfig(cfg, patch)
	})
	if err != nil {
		return err
	}
	if changed {
		s.auditConfig(r, name, before.RoomConfig, false, after.RoomConfig)
	}
	return writeRoom(w, http.StatusOK, after)
}

// patchType refuses a JSON Patch (RFC 6902), a list of operations that
// would read as something else entirely. Any other body is read as a merge
// patch, whatever its Content-Type says, as PUT reads its body as JSON:
// the admin token is the guard, and curl's -d and Python's urllib send
// application/x-www-form-urlencoded unless told otherwise.
func patchType(r *http.Request) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json-patch+json" {
		return nil
	}
	return waitroom.Errorf(waitroom.CodeInvalidRequest,
		`PATCH takes a JSON merge patch (Content-Type: application/merge-patch+json), an object of the fields to change such as {"capacity":50}, not a JSON Patch.`)
}

// decodePatch reads a merge patch, which must be a JSON object: any other
// value would replace the whole configuration, which is what PUT is for.
func decodePatch(body []byte, patch *map[string]json.RawMessage) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if err := waitroom.DecodeJSON(body, new(any)); err != nil {
			return err
		}
		return waitroom.Errorf(waitroom.CodeInvalidJSON,
			`A merge patch is a JSON object naming the fields to change, such as {"capacity":50}; to replace the whole configuration, use PUT.`)
	}
	return waitroom.DecodeJSON(body, patch)
}

// mergeConfig applies a merge patch to cfg as the API writes it and reads
// the result back as a PUT body. The configuration has no nested objects
// (its lists, tiers included, are replaced whole), so one level of the
// RFC 7396 algorithm is all of it.
func mergeConfig(cfg waitroom.RoomConfig, patch map[string]json.RawMessage) (waitroom.RoomConfig, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return cfg, &waitroom.Error{Code: waitroom.CodeInternal, Message: msgInternal, Err: err}
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return cfg, &waitroom.Error{Code: waitroom.CodeInternal, Message: msgInternal, Err: err}
	}
	for k, v := range patch {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(doc, k)
		} else {
			doc[k] = v
		}
	}
	merged, err := json.Marshal(doc)
	if err != nil {
		return cfg, &waitroom.Error{Code: waitroom.CodeInternal, Message: msgInternal, Err: err}
	}
	return waitroom.ParseRoomConfig(merged)
}

// reasonRequest is the optional body of pause and resume.
type reasonRequest struct {
	Reason string `json:"reason"`
}

// pauseRoom: POST /v1/rooms/{room}/pause, admin.
func (s *server) pauseRoom(w http.ResponseWriter, r *http.Request) error {
	return s.setPaused(w, r, true)
}

// resumeRoom: POST /v1/rooms/{room}/resume, admin. Waiting sessions are
// admitted at once, up to the capacity.
func (s *server) resumeRoom(w http.ResponseWriter, r *http.Request) error {
	return s.setPaused(w, r, false)
}

// setPaused pauses or resumes a room and nothing else, with the reason the
// optional body gives for the audit log. A pause of a paused room (or a
// resume of one that is not) changes nothing and records nothing.
func (s *server) setPaused(w http.ResponseWriter, r *http.Request, paused bool) error {
	name, err := roomName(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	if len(body) > maxReasonBody {
		return waitroom.Errorf(waitroom.CodeInvalidRequest, "The body holds at most a reason of %d bytes.", waitroom.MaxAuditReason)
	}
	var req reasonRequest
	if err := decodeOptional(body, &req); err != nil {
		return err
	}
	// Checked before trimming, as the document's PrintableText says: a
	// reason of other spaces (U+00A0, U+2028) is refused, not trimmed away.
	if err := waitroom.CheckAuditReason(req.Reason); err != nil {
		return err
	}
	req.Reason = strings.TrimSpace(req.Reason)
	before, after, changed, err := s.change(r, name, ifMatch(r), func(cfg waitroom.RoomConfig) (waitroom.RoomConfig, error) {
		cfg.Paused = paused
		return cfg, nil
	})
	if err != nil {
		return err
	}
	if changed {
		action := waitroom.AuditResume
		if paused {
			action = waitroom.AuditPause
		}
		s.audit(r, waitroom.AuditEntry{Room: name, Action: action, Reason: req.Reason,
			Detail: auditDetail(map[string]any{"changed": configChanges(before.RoomConfig, after.RoomConfig)})})
	}
	return writeRoom(w, http.StatusOK, after)
}

// putRoomIf is PUT with If-Match: it replaces the configuration of a room
// that exists and is at a version the header names, and never creates one.
func (s *server) putRoomIf(w http.ResponseWriter, r *http.Request, name string, cfg waitroom.RoomConfig, cond condition) error {
	before, err := s.store.Room(r.Context(), name)
	if waitroom.ErrorCode(err) == waitroom.CodeRoomNotFound {
		// If-Match is false where there is nothing to match (RFC 9110).
		return preconditionFailed(name)
	}
	if err != nil {
		return err
	}
	if !cond.matches(before) {
		return preconditionFailed(name)
	}
	after, err := s.store.UpdateRoom(r.Context(), name, cfg, before.Revision, s.now())
	switch waitroom.ErrorCode(err) {
	case "":
	case waitroom.CodePreconditionFailed, waitroom.CodeRoomNotFound:
		return preconditionFailed(name) // changed or deleted since the read
	default:
		return err
	}
	s.auditConfig(r, name, before.RoomConfig, false, after.RoomConfig)
	return writeRoom(w, http.StatusOK, after)
}
