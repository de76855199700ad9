package httpapi

import (
	"net/http"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/webhook"
)

// maxWebhookBody is the largest webhook configuration accepted: far more
// than a URL of waitroom.MaxWebhookURL bytes, every event type and a
// secret need.
const maxWebhookBody = 16 << 10

// webhookRequest is the body of PUT /v1/rooms/{room}/webhooks/{name}.
type webhookRequest struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
	// Secret is "whsec_…"; absent, one is made (and answered once). A
	// pointer, so that "" is refused as the document says, not taken as
	// absent.
	Secret *string `json:"secret"`
}

// webhookAnswer is a webhook as the API shows it: the secret only in the
// answer to the PUT that set it, and how its deliveries fare.
type webhookAnswer struct {
	waitroom.Webhook
	Stats waitroom.HookStats `json:"stats"`
}

// webhookPath reads {room} and {name}.
func webhookPath(r *http.Request) (room, name string, err error) {
	if room, err = roomName(r); err != nil {
		return "", "", err
	}
	name = r.PathValue("name")
	if !waitroom.ValidRoomName(name) {
		return "", "", waitroom.Errorf(waitroom.CodeInvalidRequest, "A webhook name is 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit.")
	}
	return room, name, nil
}

// putWebhook: PUT /v1/rooms/{room}/webhooks/{name}, admin.
func (s *server) putWebhook(w http.ResponseWriter, r *http.Request) error {
	room, name, err := webhookPath(r)
	if err != nil {
		return err
	}
	hooks := s.store
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	if len(body) > maxWebhookBody {
		return waitroom.Errorf(waitroom.CodeInvalidRequest, "A webhook configuration is at most %d bytes, not %d.", maxWebhookBody, len(body))
	}
	var req webhookRequest
	if len(body) == 0 {
		return waitroom.Errorf(waitroom.CodeInvalidRequest, `A webhook needs a body: {"url":"https://…","events":["session.ended"]}.`)
	}
	if err := waitroom.DecodeJSON(body, &req); err != nil {
		return err
	}
	if err := webhook.CheckTarget(req.URL, s.allowPrivateHooks); err != nil {
		return err
	}
	secret := waitroom.NewWebhookSecret()
	if req.Secret != nil {
		secret = *req.Secret
	}
	h := waitroom.Webhook{Room: room, Name: name, URL: req.URL, Events: req.Events, Secret: secret}
	if err := h.Check(); err != nil {
		return err
	}
	stored, created, err := hooks.PutWebhook(r.Context(), h, s.now())
	if err != nil {
		return err
	}
	s.audit(r, waitroom.AuditEntry{Room: room, Action: waitroom.AuditWebhook,
		Detail: auditDetail(map[string]any{"webhook": name, "url": stored.URL, "events": stored.Events, "created": created})})
	if s.onHooks != nil {
		s.onHooks()
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return writeJSON(w, status, webhookAnswer{Webhook: stored})
}

// shownWebhooks returns room's webhooks as the API shows them: without
// secrets, with their stats.
func (s *server) shownWebhooks(r *http.Request, room string) ([]webhookAnswer, error) {
	hooks := s.store
	if _, err := s.store.Room(r.Context(), room); err != nil {
		return nil, err
	}
	list, err := hooks.Webhooks(r.Context(), room)
	if err != nil {
		return nil, err
	}
	stats, err := hooks.HookStats(r.Context(), room)
	if err != nil {
		return nil, err
	}
	out := make([]webhookAnswer, 0, len(list))
	for _, h := range list {
		h.Secret = ""
		out = append(out, webhookAnswer{Webhook: h, Stats: stats[h.Name]})
	}
	return out, nil
}

// listWebhooks: GET /v1/rooms/{room}/webhooks, admin.
func (s *server) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	room, err := roomName(r)
	if err != nil {
		return err
	}
	out, err := s.shownWebhooks(r, room)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, struct {
		Webhooks []webhookAnswer `json:"webhooks"`
	}{out})
}

// getWebhook: GET /v1/rooms/{room}/webhooks/{name}, admin.
func (s *server) getWebhook(w http.ResponseWriter, r *http.Request) error {
	room, name, err := webhookPath(r)
	if err != nil {
		return err
	}
	out, err := s.shownWebhooks(r, room)
	if err != nil {
		return err
	}
	for _, h := range out {
		if h.Name == name {
			return writeJSON(w, http.StatusOK, h)
		}
	}
	return waitroom.Errorf(waitroom.CodeNotFound, "Room %q has no webhook %q.", room, name)
}

// deleteWebhook: DELETE /v1/rooms/{room}/webhooks/{name}, admin. What it
// had not delivered goes with it.
func (s *server) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	room, name, err := webhookPath(r)
	if err != nil {
		return err
	}
	hooks := s.store
	if err := hooks.DeleteWebhook(r.Context(), room, name); err != nil {
		return err
	}
	s.audit(r, waitroom.AuditEntry{Room: room, Action: waitroom.AuditWebhook,
		Detail: auditDetail(map[string]any{"webhook": name, "deleted": true})})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deadLetters: GET /v1/rooms/{room}/dead-letters?limit=&after=, admin.
func (s *server) deadLetters(w http.ResponseWriter, r *http.Request) error {
	room, err := roomName(r)
	if err != nil {
		return err
	}
	page, err := pageParams(r.URL.Query())
	if err != nil {
		return err
	}
	hooks := s.store
	if _, err := s.store.Room(r.Context(), room); err != nil {
		return err
	}
	letters, next, err := hooks.DeadLetters(r.Context(), room, page)
	if err != nil {
		return err
	}
	if letters == nil {
		letters = []waitroom.Delivery{}
	}
	return writeJSON(w, http.StatusOK, struct {
		DeadLetters []waitroom.Delivery `json:"dead_letters"`
		Next        string              `json:"next"`
	}{letters, next})
}

// maxReplayIDs bounds the ids of one replay.
const maxReplayIDs = 1000

// replay: POST /v1/rooms/{room}/dead-letters/replay, admin. Body
// {"ids":["msg_…"]} sends those again; no body (or no ids) sends all.
func (s *server) replay(w http.ResponseWriter, r *http.Request) error {
	room, err := roomName(r)
	if err != nil {
		return err
	}
	hooks := s.store
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	var req struct {
		IDs []string `json:"ids"`
	}
	if err := decodeOptional(body, &req); err != nil {
		return err
	}
	if len(req.IDs) > maxReplayIDs {
		return waitroom.Errorf(waitroom.CodeInvalidRequest, "Replay at most %d ids at once, or none for all.", maxReplayIDs)
	}
	for _, id := range req.IDs {
		if len(id) == 0 || len(id) > 200 {
			return waitroom.Errorf(waitroom.CodeInvalidRequest, "ids are the message ids of dead letters (msg_…).")
		}
	}
	if _, err := s.store.Room(r.Context(), room); err != nil {
		return err
	}
	n, err := hooks.ReplayDeadLetters(r.Context(), room, req.IDs, s.now())
	if err != nil {
		return err
	}
	s.audit(r, waitroom.AuditEntry{Room: room, Action: waitroom.AuditReplay, Detail: auditDetail(map[string]any{"replayed": n, "all": len(req.IDs) == 0})})
	if s.onHooks != nil && n > 0 {
		s.onHooks()
	}
	return writeJSON(w, http.StatusOK, struct {
		Replayed int       `json:"replayed"`
		At       time.Time `json:"at"`
	}{n, s.now().UTC()})
}
