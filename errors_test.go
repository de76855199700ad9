package waitroom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
)

func TestErrorCode(t *testing.T) {
	e := waitroom.Errorf(waitroom.CodeQueueEmpty, "Nobody is waiting in %q.", "r")
	tests := []struct {
		name string
		err  error
		want waitroom.Code
	}{
		{"nil", nil, ""},
		{"*Error", e, waitroom.CodeQueueEmpty},
		{"wrapped *Error", fmt.Errorf("advance: %w", e), waitroom.CodeQueueEmpty},
		{"joined *Error", errors.Join(errors.New("other"), e), waitroom.CodeQueueEmpty},
		{"canceled", context.Canceled, waitroom.CodeUnavailable},
		{"wrapped deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), waitroom.CodeUnavailable},
		{"plain error", errors.New("disk on fire"), waitroom.CodeInternal},
		{"unavailable", waitroom.Unavailable(errors.New("dial tcp"), "ping"), waitroom.CodeUnavailable},
		{"room not found", waitroom.RoomNotFound("x"), waitroom.CodeRoomNotFound},
		{"session not found", waitroom.SessionNotFound(), waitroom.CodeSessionNotFound},
	}
	for _, tt := range tests {
		if got := waitroom.ErrorCode(tt.err); got != tt.want {
			t.Errorf("%s: ErrorCode(%v) = %q, want %q", tt.name, tt.err, got, tt.want)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	e := waitroom.Errorf(waitroom.CodeQueueEmpty, "Nobody is waiting in %q.", "r")
	if got, want := waitroom.ErrorMessage(e), `Nobody is waiting in "r".`; got != want {
		t.Errorf("ErrorMessage(*Error) = %q, want %q", got, want)
	}
	if got, want := waitroom.ErrorMessage(fmt.Errorf("ctx: %w", e)), `Nobody is waiting in "r".`; got != want {
		t.Errorf("ErrorMessage(wrapped) = %q, want %q", got, want)
	}
	secret := errors.New("password=hunter2 at 10.0.0.1")
	if got := waitroom.ErrorMessage(secret); got != "An internal error occurred." || strings.Contains(got, "hunter2") {
		t.Errorf("ErrorMessage(plain) = %q, want the generic message", got)
	}
	u := waitroom.Unavailable(secret, "query rooms")
	if msg := waitroom.ErrorMessage(u); strings.Contains(msg, "hunter2") || strings.Contains(msg, "query rooms") || msg == "" {
		t.Errorf("ErrorMessage(Unavailable) = %q, want a generic sentence without the cause", msg)
	}
	if !errors.Is(u, secret) {
		t.Errorf("errors.Is(Unavailable(cause), cause) = false, want true")
	}
	if s := u.Error(); !strings.Contains(s, "query rooms") || !strings.Contains(s, "hunter2") || !strings.Contains(s, string(waitroom.CodeUnavailable)) {
		t.Errorf("Unavailable(...).Error() = %q, want the code, what and cause for the log", s)
	}
	if s := e.Error(); s != `queue_empty: Nobody is waiting in "r".` {
		t.Errorf("Error() = %q, want code and message", s)
	}
	if e.Unwrap() != nil {
		t.Errorf("Unwrap() of an error without a cause = %v, want nil", e.Unwrap())
	}
	if msg := waitroom.ErrorMessage(waitroom.RoomNotFound("lobby")); !strings.Contains(msg, `"lobby"`) {
		t.Errorf("RoomNotFound message = %q, want it to name the room", msg)
	}
}
