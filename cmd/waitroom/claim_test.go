package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
)

// TestServeHeldPlaceClaimLink runs serve with --public-url: a held place
// invited as it joins makes a session.invited delivery whose data carries
// claim_url (the public URL and the claim path), signed over the body
// sent; the claim page is served at the claim path, and its button claims
// the place and sends the browser to the room's page.
func TestServeHeldPlaceClaimLink(t *testing.T) {
	const token = "test-admin-token-claim"
	var mu sync.Mutex
	var got []json.RawMessage
	var bad []string
	wh, err := standardwebhooks.NewWebhook(hookSecret)
	if err != nil {
		t.Fatal(err)
	}
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if err := wh.Verify(body, r.Header); err != nil {
			bad = append(bad, err.Error())
		}
		got = append(got, body)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)

	s := startServe(t, []string{"--addr", "127.0.0.1:0", "--data", t.TempDir(), "--admin-token", token,
		"--public-url", "https://wait.example.com", "--webhook-allow-private"}, nil)
	adm := client.New(s.url, client.WithAdminToken(token))
	cfg := waitroom.DefaultConfig()
	cfg.Capacity, cfg.TargetURL = 1, "/app/"
	cfg.HoldPlaces, cfg.ClaimWindow = true, waitroom.Duration(5*time.Minute)
	if _, _, err := adm.PutRoom(ctx(t), "held", cfg); err != nil {
		t.Fatal(err)
	}
	if _, _, err := adm.PutWebhook(ctx(t), "held", "backend", client.WebhookRequest{URL: rc.URL, Events: []string{waitroom.HookSessionInvited}, Secret: hookSecret}); err != nil {
		t.Fatal(err)
	}
	held, err := adm.JoinWith(ctx(t), "held", client.JoinOptions{Contact: "mailto:ada@example.com"})
	if err != nil || held.Status != waitroom.StatusInvited {
		t.Fatalf("held join into a free slot = %+v, %v; want invited", held, err)
	}

	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no session.invited delivery within 20s; stderr:\n%s", s.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	var ev struct {
		Type string `json:"type"`
		Data struct {
			Session   string `json:"session"`
			Contact   string `json:"contact"`
			ClaimPath string `json:"claim_path"`
			ClaimURL  string `json:"claim_url"`
		} `json:"data"`
	}
	err = json.Unmarshal(got[0], &ev)
	body, verifyErrs := string(got[0]), bad
	mu.Unlock()
	if len(verifyErrs) > 0 {
		t.Fatalf("the delivery's signature does not verify over its body: %v", verifyErrs)
	}
	path := waitroom.ClaimPath("held", held.ID)
	if err != nil || ev.Type != waitroom.HookSessionInvited || ev.Data.Session != held.ID || ev.Data.Contact != "mailto:ada@example.com" ||
		ev.Data.ClaimPath != path || ev.Data.ClaimURL != "https://wait.example.com"+path {
		t.Fatalf("delivery %s (%v): want session.invited of the held place with claim_url https://wait.example.com%s", body, err, path)
	}

	// The link's page, on this server: reading it claims nothing.
	c := browserless(t)
	status, _, page := fetch(t, c, s.url+path)
	if status != http.StatusOK || !strings.Contains(page, `<form method="post" action="`+path+`"`) {
		t.Fatalf("GET %s: %d, want 200 with the claim button:\n%s", path, status, page)
	}
	if got, err := adm.Session(ctx(t), "held", held.ID); err != nil || got.Status != waitroom.StatusInvited {
		t.Fatalf("after reading the claim page: %+v, %v; want invited", got, err)
	}
	res, err := c.Post(s.url+path, "application/x-www-form-urlencoded", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/r/held" {
		t.Fatalf("POST %s: %d Location %q, want 303 to /r/held", path, res.StatusCode, res.Header.Get("Location"))
	}
	if status, h, _ := fetch(t, c, s.url+"/r/held"); status != http.StatusSeeOther || h.Get("Location") != "/app/" {
		t.Fatalf("the room's page after the claim: %d Location %q, want 303 to the target /app/", status, h.Get("Location"))
	}
	if got, err := adm.Session(ctx(t), "held", held.ID); err != nil || got.Status != waitroom.StatusActive {
		t.Fatalf("after the claim: %+v, %v; want active", got, err)
	}
}
