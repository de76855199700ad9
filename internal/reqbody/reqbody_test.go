package reqbody_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/reqbody"
)

func TestRead(t *testing.T) {
	read := func(body string) ([]byte, error) {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		if body == "" {
			r.Body = http.NoBody
		}
		return reqbody.Read(httptest.NewRecorder(), r, 4, time.Second)
	}
	if b, err := read(""); b != nil || err != nil {
		t.Errorf("no body: %q %v, want nil, nil", b, err)
	}
	if b, err := read("1234"); string(b) != "1234" || err != nil {
		t.Errorf("4 bytes: %q %v, want them", b, err)
	}
	_, err := read("12345")
	if waitroom.ErrorCode(err) != waitroom.CodeBodyTooLarge || waitroom.ErrorMessage(err) != "The body is larger than 4 bytes." {
		t.Errorf("5 bytes: %v, want body_too_large", err)
	}
}
