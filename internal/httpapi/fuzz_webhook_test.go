package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/webhook"
)

// FuzzWebhookBody sends any body to PUT a webhook: 200 or 201 with a
// webhook whose URL is public http(s), its events known and its secret
// usable, or a documented 4xx and the room's webhooks unchanged.
func FuzzWebhookBody(f *testing.F) {
	for _, s := range []string{"", "{}", `{"url":"https://example.com/h","events":["*"]}`, `{"url":"http://127.0.0.1/","events":["*"]}`,
		`{"url":"https://example.com/","events":["session.ended","session.ended"]}`, `{"url":"https://example.com/","events":[]}`,
		`{"url":"https://example.com/","events":["*"],"secret":"whsec_AAAA"}`, `{"url":"https://[::1]/","events":["*"]}`,
		`{"url":"https://example.com/","events":["*"],"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, `{"url":"https://a\u0000b/","events":["*"]}`,
		`{"url":"https://example.com/","events":"*"}`, `[]`, "\xff", `{"url":"https://0x7f.1/","events":["*"]}`,
		`{"url":"http://[::1%25lo]:8080/x","events":["*"]}`, `{"url":"http://[64:ff9b::7f00:1]/","events":["*"]}`} {
		f.Add([]byte(s))
	}
	e := newEnv(f)
	e.must(http.StatusCreated, withAdmin, "PUT", "/v1/rooms/f", `{}`)
	list := func(t *testing.T) string {
		t.Helper()
		rec := serve(e.checkedBy(t), "GET", "/v1/rooms/f/webhooks", authHeader(true), "")
		if rec.Code != http.StatusOK {
			t.Fatalf("list webhooks: %d %s", rec.Code, rec.Body.Bytes())
		}
		return rec.Body.String()
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h := e.checkedBy(t)
		before := list(t)
		rec := serve(h, "PUT", "/v1/rooms/f/webhooks/fz", authHeader(true), string(body))
		checkAnswer(t, "put webhook", rec)
		switch rec.Code {
		case 200, 201:
			var w waitroom.Webhook
			if err := json.Unmarshal(rec.Body.Bytes(), &w); err != nil {
				t.Fatalf("put %q: %d with %s: %v", body, rec.Code, rec.Body.Bytes(), err)
			}
			if err := webhook.CheckTarget(w.URL, false); err != nil {
				t.Fatalf("put %q: stored URL %q that is refused: %v", body, w.URL, err)
			}
			if err := w.Check(); err != nil {
				t.Fatalf("put %q: stored a webhook that fails its check: %v", body, err)
			}
			if !strings.HasPrefix(w.Secret, "whsec_") {
				t.Fatalf("put %q: answer without the secret: %s", body, rec.Body.Bytes())
			}
			if rec := serve(h, "DELETE", "/v1/rooms/f/webhooks/fz", authHeader(true), ""); rec.Code != http.StatusNoContent {
				t.Fatalf("delete: %d", rec.Code)
			}
		case 400, 413:
			if after := list(t); after != before {
				t.Fatalf("put %q refused with %d but the webhooks changed: %s then %s", body, rec.Code, before, after)
			}
		default:
			t.Fatalf("put %q: got %d, want 200, 201, 400 or 413", body, rec.Code)
		}
	})
}
