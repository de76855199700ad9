package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestResponseWriterUnwrap checks that http.ResponseController reaches the
// real writer through the metrics wrapper: streams depend on it to flush.
func TestResponseWriterUnwrap(t *testing.T) {
	rec := httptest.NewRecorder()
	rw := &responseWriter{ResponseWriter: rec}
	if err := http.NewResponseController(rw).Flush(); err != nil {
		t.Fatalf("Flush through the wrapper: got %v, want nil", err)
	}
	if !rec.Flushed {
		t.Errorf("Flush through the wrapper did not reach the recorder")
	}
	if rw.status != http.StatusOK {
		t.Errorf("status after a flush: got %d, want 200", rw.status)
	}
}

// TestResponseWriterStatus checks that informational answers do not count
// as the final status.
func TestResponseWriterStatus(t *testing.T) {
	rw := &responseWriter{ResponseWriter: httptest.NewRecorder()}
	rw.WriteHeader(http.StatusEarlyHints)
	rw.WriteHeader(http.StatusTeapot)
	rw.WriteHeader(http.StatusOK)
	if rw.status != http.StatusTeapot {
		t.Errorf("got status %d, want %d", rw.status, http.StatusTeapot)
	}
}
