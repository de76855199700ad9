package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
)

func TestWebhookRoutes(t *testing.T) {
	e := newEnv(t)
	e.must(201, withAdmin, "PUT", "/v1/rooms/r", `{"capacity":1}`)
	put := e.must(201, withAdmin, "PUT", "/v1/rooms/r/webhooks/crm", `{"url":"https://hooks.example.com/w","events":["session.ended","room.paused"]}`)
	var made struct {
		waitroom.Webhook
		Stats waitroom.HookStats `json:"stats"`
	}
	if err := json.Unmarshal(put.body, &made); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(made.Secret, "whsec_") || made.Name != "crm" || made.Room != "r" || len(made.Events) != 2 {
		t.Fatalf("PUT answer %s: want the webhook with a made secret", put.body)
	}
	// Replacing keeps created_at; the answer shows the secret given.
	again := e.must(200, withAdmin, "PUT", "/v1/rooms/r/webhooks/crm", `{"url":"https://hooks.example.com/w2","events":["*"],"secret":"`+made.Secret+`"}`)
	if !strings.Contains(string(again.body), made.Secret) {
		t.Fatalf("replace answer %s lacks its secret", again.body)
	}
	got := e.must(200, withAdmin, "GET", "/v1/rooms/r/webhooks/crm", "")
	if strings.Contains(string(got.body), "whsec_") || !strings.Contains(string(got.body), `"url":"https://hooks.example.com/w2"`) ||
		!strings.Contains(string(got.body), `"stats":{`) {
		t.Fatalf("GET %s: want the webhook and its stats, never its secret", got.body)
	}
	list := e.must(200, withAdmin, "GET", "/v1/rooms/r/webhooks", "")
	if strings.Contains(string(list.body), "whsec_") || !strings.Contains(string(list.body), `"name":"crm"`) {
		t.Fatalf("list %s", list.body)
	}
	// A change makes a delivery; failing it for good makes a dead letter
	// the API lists and replays.
	e.must(201, noAuth, "POST", "/v1/rooms/r/sessions", "")
	ds, err := e.store.ClaimDeliveries(t.Context(), "r", "", e.clock.Now(), 0, 10)
	if err != nil || len(ds) != 2 {
		t.Fatalf("claimed %d, %v; want joined and admitted", len(ds), err)
	}
	var outs []waitroom.DeliveryOutcome
	for _, d := range ds {
		outs = append(outs, waitroom.DeliveryOutcome{Hook: d.Hook, ID: d.Message.ID, Dead: true, Error: "HTTP 500"})
	}
	if err := e.store.SettleDeliveries(t.Context(), "r", outs, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	dl := e.must(200, withAdmin, "GET", "/v1/rooms/r/dead-letters?limit=1", "")
	var page struct {
		DeadLetters []waitroom.Delivery `json:"dead_letters"`
		Next        string              `json:"next"`
	}
	if err := json.Unmarshal(dl.body, &page); err != nil || len(page.DeadLetters) != 1 || page.Next == "" || page.DeadLetters[0].LastError != "HTTP 500" {
		t.Fatalf("dead letters %s: want one of two, with a next cursor", dl.body)
	}
	one := e.must(200, withAdmin, "POST", "/v1/rooms/r/dead-letters/replay", `{"ids":["`+page.DeadLetters[0].Message.ID+`"]}`)
	if !strings.Contains(string(one.body), `"replayed":1`) {
		t.Fatalf("replay one: %s", one.body)
	}
	all := e.must(200, withAdmin, "POST", "/v1/rooms/r/dead-letters/replay", "")
	if !strings.Contains(string(all.body), `"replayed":1`) {
		t.Fatalf("replay all: %s", all.body)
	}
	audit := e.must(200, withAdmin, "GET", "/v1/rooms/r/audit", "")
	if strings.Count(string(audit.body), `"action":"webhook"`) != 2 || strings.Count(string(audit.body), `"action":"replay"`) != 2 {
		t.Fatalf("audit %s: want 2 webhook and 2 replay entries", audit.body)
	}
	e.must(204, withAdmin, "DELETE", "/v1/rooms/r/webhooks/crm", "")
	e.must(404, withAdmin, "GET", "/v1/rooms/r/webhooks/crm", "")
	e.must(404, withAdmin, "DELETE", "/v1/rooms/r/webhooks/crm", "")
}

func TestWebhookBadInput(t *testing.T) {
	e := newEnv(t)
	e.must(201, withAdmin, "PUT", "/v1/rooms/r", `{}`)
	long := strings.Repeat("a", 3000)
	for _, tc := range []struct {
		name, path, body string
		status           int
		code             waitroom.Code
		says             string
	}{
		{"ftp URL", "/v1/rooms/r/webhooks/a", `{"url":"ftp://example.com/","events":["*"]}`, 400, waitroom.CodeInvalidRequest, "http"},
		{"file URL", "/v1/rooms/r/webhooks/a", `{"url":"file:///etc/passwd","events":["*"]}`, 400, waitroom.CodeInvalidRequest, "http"},
		{"loopback", "/v1/rooms/r/webhooks/a", `{"url":"http://127.0.0.1:8080/","events":["*"]}`, 400, waitroom.CodeInvalidRequest, "--webhook-allow-private"},
		{"localhost", "/v1/rooms/r/webhooks/a", `{"url":"http://localhost/","events":["*"]}`, 400, waitroom.CodeInvalidRequest, "private"},
		{"metadata", "/v1/rooms/r/webhooks/a", `{"url":"http://169.254.169.254/latest/","events":["*"]}`, 400, waitroom.CodeInvalidRequest, "private"},
		{"private v6", "/v1/rooms/r/webhooks/a", `{"url":"http://[fd12::1]/","events":["*"]}`, 400, waitroom.CodeInvalidRequest, "private"},
		{"zoned loopback", "/v1/rooms/r/webhooks/a", `{"url":"http://[::1%25lo]:8080/x","events":["*"]}`, 400, waitroom.CodeInvalidRequest, "zone"},
		{"zoned metadata", "/v1/rooms/r/webhooks/a", `{"url":"http://[fd00:ec2::254%25eth0]/latest/","events":["*"]}`, 400, waitroom.CodeInvalidRequest, "zone"},
		{"zoned link-local", "/v1/rooms/r/webhooks/a", `{"url":"http://[fe80::1%25eth0]/","events":["*"]}`, 400, waitroom.CodeInvalidRequest, "zone"},
		{"NAT64 loopback", "/v1/rooms/r/webhooks/a", `{"url":"http://[64:ff9b::7f00:1]/","events":["*"]}`, 400, waitroom.CodeInvalidRequest, "private"},
		{"IPv4-compatible loopback", "/v1/rooms/r/webhooks/a", `{"url":"http://[::127.0.0.1]/","events":["*"]}`, 400, waitroom.CodeInvalidRequest, "private"},
		{"no events", "/v1/rooms/r/webhooks/a", `{"url":"https://example.com/"}`, 400, waitroom.CodeInvalidRequest, "events"},
		{"unknown event", "/v1/rooms/r/webhooks/a", `{"url":"https://example.com/","events":["session.vanished"]}`, 400, waitroom.CodeInvalidRequest, "Unknown event"},
		{"bad secret", "/v1/rooms/r/webhooks/a", `{"url":"https://example.com/","events":["*"],"secret":"hunter2"}`, 400, waitroom.CodeInvalidRequest, "whsec_"},
		{"short secret", "/v1/rooms/r/webhooks/a", `{"url":"https://example.com/","events":["*"],"secret":"whsec_c2hvcnQ="}`, 400, waitroom.CodeInvalidRequest, "24"},
		{"unknown field", "/v1/rooms/r/webhooks/a", `{"url":"https://example.com/","events":["*"],"retries":9}`, 400, waitroom.CodeInvalidJSON, ""},
		{"not JSON", "/v1/rooms/r/webhooks/a", `url=https://example.com/`, 400, waitroom.CodeInvalidJSON, ""},
		{"no body", "/v1/rooms/r/webhooks/a", ``, 400, waitroom.CodeInvalidRequest, "body"},
		{"long URL", "/v1/rooms/r/webhooks/a", `{"url":"https://example.com/` + long + `","events":["*"]}`, 400, waitroom.CodeInvalidRequest, "2048"},
		{"oversized", "/v1/rooms/r/webhooks/a", `{"url":"https://example.com/","events":["*"],"secret":"` + strings.Repeat("x", 20000) + `"}`, 400, waitroom.CodeInvalidRequest, "at most"},
		{"bad name", "/v1/rooms/r/webhooks/Not%20Ok", `{"url":"https://example.com/","events":["*"]}`, 400, waitroom.CodeInvalidRequest, "name"},
		{"unknown room", "/v1/rooms/nope/webhooks/a", `{"url":"https://example.com/","events":["*"]}`, 404, waitroom.CodeRoomNotFound, ""},
		{"replay junk", "/v1/rooms/r/dead-letters/replay", `{"ids":"all"}`, 400, waitroom.CodeInvalidJSON, ""},
	} {
		method := "PUT"
		if strings.HasSuffix(tc.path, "replay") {
			method = "POST"
		}
		ans := e.do(withAdmin, method, tc.path, tc.body)
		ae, err := errorShape(ans.header, ans.body)
		if ans.status != tc.status || err != nil || ae.Error.Code != tc.code || !strings.Contains(ae.Error.Message, tc.says) {
			t.Errorf("%s: %d %s (%v); want %d %s saying %q", tc.name, ans.status, ans.body, err, tc.status, tc.code, tc.says)
		}
	}
	e.must(401, noAuth, "GET", "/v1/rooms/r/webhooks", "")
	e.must(401, wrongToken, "PUT", "/v1/rooms/r/webhooks/a", `{"url":"https://example.com/","events":["*"]}`)
	e.must(400, withAdmin, "GET", "/v1/rooms/r/dead-letters?after=x", "")
	if list := e.must(200, withAdmin, "GET", "/v1/rooms/r/webhooks", ""); !strings.Contains(string(list.body), `"webhooks":[]`) {
		t.Fatalf("after refused PUTs: %s, want no webhook", list.body)
	}
	if ans := e.do(withAdmin, "PUT", "/v1/rooms/r/webhooks/a", strings.Repeat(" ", 2<<20)); ans.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("2 MiB body: %d, want 413", ans.status)
	}
}
