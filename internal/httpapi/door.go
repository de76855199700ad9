package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/waitroom/waitroom"
)

// challenge: GET /v1/rooms/{room}/challenge. A fresh proof-of-work
// challenge in the ALTCHA format, for the ALTCHA widget's challengeurl and
// for clients that fetch one before joining (a join without one answers
// 428 with a challenge too). 404 not_found when the room asks none.
func (s *server) challenge(w http.ResponseWriter, r *http.Request) error {
	room, err := roomName(r)
	if err != nil {
		return err
	}
	ch, err := s.door.Challenge(r.Context(), room, s.admit.Client(r), s.now())
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, ch)
	return nil
}

// inviteRequest is the body of POST /v1/rooms/{room}/invites.
type inviteRequest struct {
	// Count and Uses are pointers, and Key too, so that an absent field
	// (its default) is told from 0 or "", which are refused as the
	// document says.
	Count  *int            `json:"count"`
	Tier   string          `json:"tier"`
	Key    *string         `json:"key"`
	Uses   *int            `json:"uses"`
	Expiry json.RawMessage `json:"expiry"`
}

// inviteAnswer is one invite made.
type inviteAnswer struct {
	Token     string    `json:"token"`
	Link      string    `json:"link"`
	Tier      string    `json:"tier,omitempty"`
	Uses      int       `json:"uses"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Invite limits.
const (
	maxInvitesPerCall = 1000
	defaultInviteTTL  = 7 * 24 * time.Hour
)

// invites: POST /v1/rooms/{room}/invites. Makes count invites (1 by
// default, at most 1000) for tier ("" for the room's lowest), each good for
// uses joins (1 by default) until expiry: a duration from now ("72h") or
// an RFC 3339 time; 7 days by default, at most 366 days. key, with count 1,
// is the identity the invite joins with. Each answer has the token and the
// waiting-page link that joins with it (the token in the URL fragment,
// which browsers never send to a server or put in a Referer).
func (s *server) invites(w http.ResponseWriter, r *http.Request) error {
	room, err := roomName(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	var req inviteRequest
	if err := decodeOptional(body, &req); err != nil {
		return err
	}
	now := s.now()
	count, uses, key := 1, 1, ""
	if req.Count != nil {
		count = *req.Count
	}
	if req.Uses != nil {
		uses = *req.Uses
	}
	switch {
	case count < 1 || count > maxInvitesPerCall:
		return waitroom.Errorf(waitroom.CodeInvalidRequest, "count is between 1 and %d.", maxInvitesPerCall)
	case uses < 1 || uses > waitroom.MaxTokenUses:
		return waitroom.Errorf(waitroom.CodeInvalidRequest, "uses is between 1 and %d.", waitroom.MaxTokenUses)
	case req.Key != nil && count != 1:
		return waitroom.Errorf(waitroom.CodeInvalidRequest, "An invite with a key is made one at a time (count 1): one key has one live session.")
	}
	if req.Key != nil {
		if err := waitroom.CheckKey(*req.Key); err != nil {
			return err
		}
		key = *req.Key
	}
	expires, err := inviteExpiry(req.Expiry, now)
	if err != nil {
		return err
	}
	tokens, err := s.door.Issue(r.Context(), room, count, req.Tier, key, uses, expires, now)
	if err != nil {
		return err
	}
	out := struct {
		Invites []inviteAnswer `json:"invites"`
	}{}
	for _, t := range tokens {
		out.Invites = append(out.Invites, inviteAnswer{Token: t, Link: "/r/" + url.PathEscape(room) + "#invite=" + t,
			Tier: req.Tier, Uses: uses, ExpiresAt: expires.Truncate(time.Second).UTC()})
	}
	s.audit(r, waitroom.AuditEntry{Room: room, Action: waitroom.AuditInvites,
		Detail: auditDetail(map[string]any{"count": count, "tier": req.Tier, "uses": uses, "expires_at": expires.UTC().Format(time.RFC3339)})})
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// inviteExpiry reads expiry: absent (the default), a duration string or an
// RFC 3339 time, in (now, now+366 days].
func inviteExpiry(raw json.RawMessage, now time.Time) (time.Time, error) {
	bad := waitroom.Errorf(waitroom.CodeInvalidRequest, `expiry is a duration such as "72h" or an RFC 3339 time such as "2030-06-01T18:00:00Z", within 366 days.`)
	if len(raw) == 0 { // absent; a null was refused with the body
		return now.Add(defaultInviteTTL), nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return time.Time{}, bad
	}
	var at time.Time
	if d, err := waitroom.ParseDuration(v); err == nil {
		at = now.Add(d.D())
	} else if t, err := time.Parse(time.RFC3339, v); err == nil {
		at = t
	} else {
		return time.Time{}, bad
	}
	if !at.After(now.Add(time.Second)) || at.After(now.Add(waitroom.MaxDuration.D())) {
		return time.Time{}, bad
	}
	return at, nil
}
