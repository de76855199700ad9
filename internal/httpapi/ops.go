package httpapi

import (
	"net/http"

	"github.com/waitroom/waitroom"
)

// healthz: GET /healthz. The process is up and serving.
func (s *server) healthz(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, statusAnswer{Status: "ok"})
}

// readyz: GET /readyz. The store is reachable; any failure is 503, so a load
// balancer takes this instance out rather than retrying a bad request.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.Ping(r.Context()); err != nil {
		if waitroom.ErrorCode(err) != waitroom.CodeUnavailable {
			err = waitroom.Unavailable(err, "ping")
		}
		return err
	}
	return writeJSON(w, http.StatusOK, statusAnswer{Status: "ok"})
}
