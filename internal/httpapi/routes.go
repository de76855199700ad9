package httpapi

import "net/http"

// routes registers every endpoint. This is the one place that lists the API.
func (s *server) routes() {
	m := s.mux

	// Public: the session id is the secret.
	m.Handle("POST /v1/rooms/{room}/sessions", s.api(s.join))
	m.Handle("GET /v1/rooms/{room}/sessions/{id}", s.api(s.session))
	m.Handle("POST /v1/rooms/{room}/sessions/{id}/heartbeat", s.api(s.heartbeat))
	m.Handle("POST /v1/rooms/{room}/sessions/{id}/away", s.api(s.away))
	// A held place's claim: the invited session becomes active.
	m.Handle("POST /v1/rooms/{room}/sessions/{id}/claim", s.api(s.claim))
	// Leave, or revoke with the admin token.
	m.Handle("DELETE /v1/rooms/{room}/sessions/{id}", s.api(s.leave))
	m.Handle("GET /v1/rooms/{room}", s.api(s.roomStatus))
	m.Handle("GET /v1/rooms/{room}/draw", s.api(s.draw))
	m.Handle("GET /v1/rooms/{room}/fairness", s.api(s.fairness))
	m.Handle("GET /v1/rooms/{room}/challenge", s.api(s.challenge))
	// Live updates: Server-Sent Events, and the same over WebSocket.
	m.Handle("GET /v1/rooms/{room}/sessions/{id}/events", s.api(s.events))
	m.Handle("GET /v1/rooms/{room}/sessions/{id}/ws", s.api(s.websocket))

	// Admin: Authorization: Bearer <admin token>.
	m.Handle("PUT /v1/rooms/{room}", s.adminOnly(s.putRoom))
	m.Handle("PATCH /v1/rooms/{room}", s.adminOnly(s.patchRoom))
	m.Handle("POST /v1/rooms/{room}/pause", s.adminOnly(s.pauseRoom))
	m.Handle("POST /v1/rooms/{room}/resume", s.adminOnly(s.resumeRoom))
	m.Handle("GET /v1/rooms", s.adminOnly(s.listRooms))
	m.Handle("DELETE /v1/rooms/{room}", s.adminOnly(s.deleteRoom))
	m.Handle("POST /v1/rooms/{room}/advance", s.adminOnly(s.advance))
	m.Handle("POST /v1/rooms/{room}/inventory", s.adminOnly(s.inventory))
	m.Handle("GET /v1/rooms/{room}/waiting", s.adminOnly(s.waiting))
	m.Handle("GET /v1/rooms/{room}/history", s.adminOnly(s.history))
	m.Handle("POST /v1/rooms/{room}/queue-all", s.adminOnly(s.queueAll))
	m.Handle("POST /v1/rooms/{room}/sessions/{id}/front", s.adminOnly(s.front))
	m.Handle("POST /v1/rooms/{room}/sessions/{id}/extend", s.adminOnly(s.extend))
	m.Handle("GET /v1/rooms/{room}/find", s.adminOnly(s.find))
	m.Handle("POST /v1/rooms/{room}/invites", s.adminOnly(s.invites))
	m.Handle("GET /v1/rooms/{room}/audit", s.adminOnly(s.auditLog))
	m.Handle("GET /v1/stats", s.adminOnly(s.overview))
	m.Handle("GET /v1/rooms/{room}/stats", s.adminOnly(s.roomStats))
	m.Handle("GET /v1/rooms/{room}/admin-events", s.adminOnly(s.adminEvents))
	m.Handle("PUT /v1/rooms/{room}/webhooks/{name}", s.adminOnly(s.putWebhook))
	m.Handle("GET /v1/rooms/{room}/webhooks", s.adminOnly(s.listWebhooks))
	m.Handle("GET /v1/rooms/{room}/webhooks/{name}", s.adminOnly(s.getWebhook))
	m.Handle("DELETE /v1/rooms/{room}/webhooks/{name}", s.adminOnly(s.deleteWebhook))
	m.Handle("GET /v1/rooms/{room}/dead-letters", s.adminOnly(s.deadLetters))
	m.Handle("POST /v1/rooms/{room}/dead-letters/replay", s.adminOnly(s.replay))

	// Operations.
	m.Handle("GET /healthz", s.api(s.healthz))
	m.Handle("GET /readyz", s.api(s.readyz))
	// The metrics name every room, invite-only and unannounced ones
	// included, with live counts: admin only. A scraper without the token
	// uses serve --metrics-addr, a listener of its own.
	m.Handle("GET /metrics", s.adminOnly(func(w http.ResponseWriter, r *http.Request) error {
		s.metrics.ServeHTTP(w, r)
		return nil
	}))
	m.HandleFunc("GET /v1/openapi.json", s.openapiJSON)
}
