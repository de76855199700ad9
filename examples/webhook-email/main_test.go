package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/memstore"
	"github.com/waitroom/waitroom/webhook"
)

// fakeSender records what it is asked to send, failing while fail is set.
type fakeSender struct {
	mu   sync.Mutex
	sent []string // "to|subject|text"
	fail bool
}

func (f *fakeSender) Send(ctx context.Context, to, subject, text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errors.New("the mail server is down")
	}
	f.sent = append(f.sent, to+"|"+subject+"|"+text)
	return nil
}

func (f *fakeSender) messages() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent...)
}

func newSecret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// endpoint serves a Receiver for secret with the fake sender.
func endpoint(t *testing.T, secret string, contacts map[string]string) (*httptest.Server, *fakeSender) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeSender{}
	srv := httptest.NewServer(NewReceiver(wh, contacts, f, "https://shop.example/r/sale"))
	t.Cleanup(srv.Close)
	return srv, f
}

// post sends body to url as waitroom does: signed with secret at ts under
// webhook-id id. It returns the status.
func post(t *testing.T, url, secret, id string, ts time.Time, body string) int {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := wh.Sign(id, ts, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return postSigned(t, url, id, strconv.FormatInt(ts.Unix(), 10), sig, body)
}

func postSigned(t *testing.T, url, id, ts, sig, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

const admitted = `{"type":"session.admitted","timestamp":"2030-06-01T18:00:00Z","data":{"room":"sale","session":"s1","ticket":42,` +
	`"key":"ana@example.com","status":"active","from":"waiting","joined_at":"2030-06-01T17:50:00Z","admitted_at":"2030-06-01T18:00:00Z","waiting":3,"active":1}}`

func TestSignedAdmissionSendsOnce(t *testing.T) {
	secret := newSecret(t)
	srv, f := endpoint(t, secret, map[string]string{"user-7": "+15551234567"})
	if got := post(t, srv.URL, secret, "msg_1", time.Now(), admitted); got != http.StatusNoContent {
		t.Fatalf("a signed admission: %d, want 204", got)
	}
	want := "ana@example.com|Your turn has come|It is your turn in sale (ticket #42). Go to https://shop.example/r/sale now."
	if got := f.messages(); len(got) != 1 || got[0] != want {
		t.Fatalf("sent %q, want [%q]", got, want)
	}
	// The same event again (a retry): acknowledged, not sent twice.
	if got := post(t, srv.URL, secret, "msg_1", time.Now(), admitted); got != http.StatusNoContent {
		t.Fatalf("the same webhook-id again: %d, want 204", got)
	}
	if got := f.messages(); len(got) != 1 {
		t.Fatalf("a retry sent again: %q", got)
	}
	// A key found in the contacts.
	body := strings.Replace(admitted, `"key":"ana@example.com"`, `"key":"user-7"`, 1)
	if got := post(t, srv.URL, secret, "msg_2", time.Now(), body); got != http.StatusNoContent {
		t.Fatalf("a second admission: %d, want 204", got)
	}
	if got := f.messages(); len(got) != 2 || !strings.HasPrefix(got[1], "+15551234567|") {
		t.Fatalf("sent %q, want the second to +15551234567", got)
	}
}

func TestRefusesWhatIsNotSigned(t *testing.T) {
	secret := newSecret(t)
	srv, f := endpoint(t, secret, nil)
	now := time.Now()
	wh, _ := standardwebhooks.NewWebhook(secret)
	sig, _ := wh.Sign("msg_1", now, []byte(admitted))
	ts := strconv.FormatInt(now.Unix(), 10)
	for _, c := range []struct {
		what, id, ts, sig, body string
	}{
		{"a tampered body", "msg_1", ts, sig, strings.Replace(admitted, "#42", "#1", 1) + " "},
		{"another key in the body", "msg_1", ts, sig, strings.Replace(admitted, "ana@", "eve@", 1)},
		{"another webhook-id", "msg_9", ts, sig, admitted},
		{"another timestamp", "msg_1", strconv.FormatInt(now.Unix()+1, 10), sig, admitted},
		{"no signature", "msg_1", ts, "", admitted},
		{"a signature of another secret", "msg_1", ts, signWith(t, newSecret(t), "msg_1", now, admitted), admitted},
	} {
		if got := postSigned(t, srv.URL, c.id, c.ts, c.sig, c.body); got != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", c.what, got)
		}
	}
	// Signed, but ten minutes old: a replay of a captured request.
	if got := post(t, srv.URL, secret, "msg_1", now.Add(-10*time.Minute), admitted); got != http.StatusUnauthorized {
		t.Errorf("a stale timestamp: %d, want 401", got)
	}
	if got := f.messages(); len(got) != 0 {
		t.Errorf("sent %q for requests that were refused", got)
	}
}

func signWith(t *testing.T, secret, id string, ts time.Time, body string) string {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := wh.Sign(id, ts, []byte(body))
	return sig
}

func TestOtherEventsAndUnknownKeys(t *testing.T) {
	secret := newSecret(t)
	srv, f := endpoint(t, secret, nil)
	for i, body := range []string{
		strings.Replace(admitted, "session.admitted", "session.joined", 1),
		strings.Replace(admitted, `"key":"ana@example.com"`, `"key":"user-7"`, 1), // no contact for it
		strings.Replace(admitted, `"key":"ana@example.com",`, ``, 1),              // no key
	} {
		if got := post(t, srv.URL, secret, "msg_"+strconv.Itoa(i), time.Now(), body); got != http.StatusNoContent {
			t.Errorf("body %d: %d, want 204 (nothing to do, not to be retried)", i, got)
		}
	}
	if got := f.messages(); len(got) != 0 {
		t.Errorf("sent %q, want nothing", got)
	}
}

func TestFailedSendIsRetried(t *testing.T) {
	secret := newSecret(t)
	srv, f := endpoint(t, secret, nil)
	f.fail = true
	if got := post(t, srv.URL, secret, "msg_1", time.Now(), admitted); got/100 == 2 {
		t.Fatalf("a send that failed answered %d, want an error for waitroom to retry", got)
	}
	f.mu.Lock()
	f.fail = false
	f.mu.Unlock()
	if got := post(t, srv.URL, secret, "msg_1", time.Now(), admitted); got != http.StatusNoContent {
		t.Fatalf("the retry: %d, want 204", got)
	}
	if got := f.messages(); len(got) != 1 {
		t.Fatalf("after the retry sent %q, want one message", got)
	}
}

func TestTexter(t *testing.T) {
	var got http.Request
	var form map[string][]string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		got, form = *r, r.PostForm
		if r.PostForm.Get("To") == "+15550000000" {
			http.Error(w, `{"message":"unreachable"}`, http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer api.Close()
	tx := &Texter{URL: api.URL, User: "AC123", Token: "tok", From: "+15557654321", Client: api.Client()}
	if err := tx.Send(context.Background(), "+15551234567", "ignored", "It is your turn."); err != nil {
		t.Fatal(err)
	}
	user, pass, ok := got.BasicAuth()
	if !ok || user != "AC123" || pass != "tok" || got.Method != http.MethodPost {
		t.Errorf("the request: %s with basic auth %q %q %v", got.Method, user, pass, ok)
	}
	if form["To"][0] != "+15551234567" || form["From"][0] != "+15557654321" || form["Body"][0] != "It is your turn." {
		t.Errorf("the form: %v", form)
	}
	if err := tx.Send(context.Background(), "+15550000000", "", "x"); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("a refused message: %v, want the API's answer", err)
	}
	if err := tx.Send(context.Background(), "ana@example.com", "", "x"); err == nil {
		t.Errorf("an email address sent as a text message")
	}
}

func TestSetup(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	secret := newSecret(t)
	if _, _, err := setup(env()); err == nil {
		t.Errorf("no WEBHOOK_SECRET: no error")
	}
	if _, _, err := setup(env("WEBHOOK_SECRET", secret, "SMTP_ADDR", "localhost:25")); err == nil {
		t.Errorf("SMTP_ADDR without MAIL_FROM: no error")
	}
	if _, _, err := setup(env("WEBHOOK_SECRET", secret, "SMS_URL", "https://api.example/messages")); err == nil {
		t.Errorf("SMS_URL without SMS_FROM: no error")
	}
	contacts := filepath.Join(t.TempDir(), "contacts")
	if err := os.WriteFile(contacts, []byte("# key contact\nuser-7 ana@example.com\n\nuser-8 +15551234567\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, addr, err := setup(env("WEBHOOK_SECRET", secret, "CONTACTS", contacts, "SMTP_ADDR", "mail.example:587",
		"SMTP_USER", "u", "SMTP_PASSWORD", "p", "MAIL_FROM", "Queue <queue@shop.example>"))
	if err != nil {
		t.Fatal(err)
	}
	rc := h.(*Receiver)
	if addr != ":8090" || rc.contact("user-7") != "ana@example.com" || rc.contact("user-8") != "+15551234567" || rc.contact("user-9") != "" {
		t.Errorf("listen %q, contacts %v", addr, rc.contacts)
	}
	if m, ok := rc.send.(*Mailer); !ok || m.Addr != "mail.example:587" || m.From != "queue@shop.example" || m.Auth == nil {
		t.Errorf("the sender is %#v, want a Mailer with PLAIN auth", rc.send)
	}
	if err := os.WriteFile(contacts, []byte("user-7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := setup(env("WEBHOOK_SECRET", secret, "CONTACTS", contacts)); err == nil {
		t.Errorf("a contacts line without a contact: no error")
	}
}

// TestWithWaitroom: waitroom's own deliverer, over a store, reaches the
// receiver, which verifies what it signed and tells a keyed session
// admitted, once.
func TestWithWaitroom(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := memstore.New()
	defer store.Close()
	now := time.Now()
	if _, _, err := store.PutRoom(ctx, "sale", waitroom.DefaultConfig(), now); err != nil {
		t.Fatal(err)
	}
	secret := newSecret(t)
	srv, f := endpoint(t, secret, nil)
	if _, _, err := store.PutWebhook(ctx, waitroom.Webhook{Room: "sale", Name: "notify", URL: srv.URL,
		Events: []string{"*"}, Secret: secret}, now); err != nil {
		t.Fatal(err)
	}
	d := webhook.New(webhook.Options{Store: store, AllowPrivate: true, Poll: 20 * time.Millisecond})
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	s, err := store.Join(ctx, "sale", "ana@example.com", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != waitroom.StatusActive {
		t.Fatalf("the join is %s, want active at once", s.Status)
	}
	// session.joined and session.admitted are both delivered (and
	// acknowledged); only the admission sends a message.
	deadline := time.Now().Add(30 * time.Second)
	for d.Counts().Delivered < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("not delivered within 30s: %+v", d.Counts())
		}
		time.Sleep(10 * time.Millisecond)
	}
	want := "ana@example.com|Your turn has come|It is your turn in sale (ticket #" + strconv.FormatInt(s.Ticket, 10) + ")."
	if got := f.messages(); len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Fatalf("sent %q, want one message starting %q", got, want)
	}
}
