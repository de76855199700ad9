package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"net/textproto"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/webhook"
	"github.com/waitroom/waitroom/memstore"
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

// endpoint serves a Receiver for secret with the fake sender, the link
// https://shop.example/r/sale and times in UTC.
func endpoint(t *testing.T, secret string, contacts map[string]string) (*httptest.Server, *fakeSender) {
	t.Helper()
	f := &fakeSender{}
	return endpointWith(t, secret, contacts, f, Options{Link: "https://shop.example/r/sale", Location: time.UTC}), f
}

// endpointWith serves a Receiver for secret with send and opts.
func endpointWith(t *testing.T, secret string, contacts map[string]string, send Sender, opts Options) *httptest.Server {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewReceiver(wh, contacts, send, opts))
	t.Cleanup(srv.Close)
	return srv
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

// A held place's events, as waitroom sends them (docs/WEBHOOKS.md).
const (
	near = `{"type":"session.near","timestamp":"2030-06-01T17:58:00Z","data":{"room":"sale","session":"s9","ticket":9,` +
		`"status":"waiting","joined_at":"2030-06-01T17:50:00Z","waiting":40,"active":50,"position":3,"contact":"ana@example.com"}}`
	invited = `{"type":"session.invited","timestamp":"2030-06-01T18:00:00Z","data":{"room":"sale","session":"s9","ticket":9,` +
		`"status":"invited","from":"waiting","joined_at":"2030-06-01T17:50:00Z","admitted_at":"2030-06-01T18:00:00Z",` +
		`"waiting":39,"active":50,"contact":"ana@example.com","claim_by":"2030-06-01T18:10:00Z","claim_path":"/claim/sale/s9",` +
		`"claim_url":"https://queue.shop.example/claim/sale/s9"}}`
)

func TestNearAndInvited(t *testing.T) {
	secret := newSecret(t)
	f := &fakeSender{}
	contacts := map[string]string{"user-7": "+15551234567"}
	srv := endpointWith(t, secret, contacts, f, Options{Link: "https://shop.example/r/sale", WaitroomURL: "https://waitroom.example",
		Location: time.FixedZone("CEST", 2*3600)})
	for i, c := range []struct {
		what, body, want string
	}{
		{"near, held", near,
			"ana@example.com|You're nearly there|You're nearly there: position 3 in line for sale. We will send you a link when it is your turn."},
		{"near, a keyed session that keeps its page open (no contact)", strings.Replace(near, `"contact":"ana@example.com"`, `"key":"user-7"`, 1),
			"+15551234567|You're nearly there|You're nearly there: position 3 in line for sale. Keep https://shop.example/r/sale open so you do not lose your place."},
		{"invited, with the claim_url of a server with --public-url", invited,
			"ana@example.com|It's your turn|It's your turn in sale: claim your place by 20:10 CEST at https://queue.shop.example/claim/sale/s9"},
		{"invited, without claim_url: WAITROOM_URL and claim_path", strings.Replace(invited, `,"claim_url":"https://queue.shop.example/claim/sale/s9"`, ``, 1),
			"ana@example.com|It's your turn|It's your turn in sale: claim your place by 20:10 CEST at https://waitroom.example/claim/sale/s9"},
		{"invited, the contact looked up, rather than the key", strings.Replace(invited, `"contact":"ana@example.com"`, `"key":"bob@example.com","contact":"user-7"`, 1),
			"+15551234567|It's your turn|It's your turn in sale: claim your place by 20:10 CEST at https://queue.shop.example/claim/sale/s9"},
	} {
		before := len(f.messages())
		if got := post(t, srv.URL, secret, "msg_"+strconv.Itoa(i), time.Now(), c.body); got != http.StatusNoContent {
			t.Errorf("%s: %d, want 204", c.what, got)
			continue
		}
		if got := f.messages(); len(got) != before+1 || got[before] != c.want {
			t.Errorf("%s: sent %q, want %q", c.what, got[before:], c.want)
		}
	}

	// Without WAITROOM_URL nor claim_url there is no link to give: the
	// time to claim by, still.
	g := &fakeSender{}
	bare := endpointWith(t, secret, nil, g, Options{Location: time.UTC})
	if got := post(t, bare.URL, secret, "msg_1", time.Now(), strings.Replace(invited, `,"claim_url":"https://queue.shop.example/claim/sale/s9"`, ``, 1)); got != http.StatusNoContent {
		t.Fatalf("invited without a link: %d", got)
	}
	if got, want := g.messages(), "ana@example.com|It's your turn|It's your turn in sale: claim your place by 18:10 UTC."; len(got) != 1 || got[0] != want {
		t.Errorf("invited without a link: sent %q, want %q", got, want)
	}

	// The other events of a held place tell nothing.
	n := len(f.messages())
	for i, body := range []string{
		strings.Replace(strings.Replace(invited, "session.invited", "session.claimed", 1), `"status":"invited","from":"waiting"`, `"status":"active","from":"invited"`, 1),
		strings.Replace(strings.Replace(invited, "session.invited", "session.ended", 1), `"status":"invited","from":"waiting"`, `"status":"expired","from":"invited","reason":"unclaimed"`, 1),
		strings.Replace(near, "session.near", "session.joined", 1),
		strings.Replace(near, `"contact":"ana@example.com"`, `"contact":"desk 4"`, 1), // no address for it
	} {
		if got := post(t, srv.URL, secret, "msg_other_"+strconv.Itoa(i), time.Now(), body); got != http.StatusNoContent {
			t.Errorf("body %d: %d, want 204", i, got)
		}
	}
	if got := f.messages(); len(got) != n {
		t.Errorf("sent %q for events that tell nothing", got[n:])
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
	if _, _, err := setup(env("WEBHOOK_SECRET", secret, "WAITROOM_URL", "queue.example")); err == nil {
		t.Errorf("WAITROOM_URL without a scheme: no error")
	}
	if h, _, err := setup(env("WEBHOOK_SECRET", secret, "WAITROOM_URL", "https://queue.example/", "LINK", "https://shop.example/r/sale")); err != nil {
		t.Error(err)
	} else if o := h.(*Receiver).opts; o.WaitroomURL != "https://queue.example" || o.Link != "https://shop.example/r/sale" || o.Location != time.Local {
		t.Errorf("options %+v, want WAITROOM_URL without its slash, LINK, local time", o)
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

// smtpServer is an SMTP server on a local port that keeps every message
// it is given: enough of RFC 5321 for net/smtp (no STARTTLS, no AUTH).
type smtpServer struct {
	addr string
	mu   sync.Mutex
	mail []*mail.Message // each with its envelope recipients in the header Envelope-To
}

func newSMTPServer(t *testing.T) *smtpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &smtpServer{addr: ln.Addr().String()}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *smtpServer) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := textproto.NewReader(bufio.NewReader(c))
	w := textproto.NewWriter(bufio.NewWriter(c))
	_ = w.PrintfLine("220 localhost ESMTP test")
	var rcpt []string
	for {
		line, err := r.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO":
			_ = w.PrintfLine("250-localhost")
			_ = w.PrintfLine("250 8BITMIME")
		case "HELO", "NOOP", "RSET":
			rcpt = nil
			_ = w.PrintfLine("250 OK")
		case "MAIL":
			_ = w.PrintfLine("250 OK")
		case "RCPT":
			if len(arg) > 3 && strings.EqualFold(arg[:3], "TO:") {
				rcpt = append(rcpt, strings.Trim(arg[3:], "<> "))
			}
			_ = w.PrintfLine("250 OK")
		case "DATA":
			_ = w.PrintfLine("354 go ahead")
			b, err := io.ReadAll(r.DotReader())
			if err != nil {
				return
			}
			m, err := mail.ReadMessage(strings.NewReader(string(b)))
			if err != nil {
				_ = w.PrintfLine("554 %v", err)
				continue
			}
			m.Header["Envelope-To"] = rcpt
			s.mu.Lock()
			s.mail = append(s.mail, m)
			s.mu.Unlock()
			_ = w.PrintfLine("250 OK")
		case "QUIT":
			_ = w.PrintfLine("221 bye")
			return
		default:
			_ = w.PrintfLine("502 not here")
		}
	}
}

// got returns "to|subject|text" of each message received so far.
func (s *smtpServer) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.mail))
	for _, m := range s.mail {
		body, _ := io.ReadAll(m.Body)
		m.Body = strings.NewReader(string(body))
		out = append(out, strings.Join(m.Header["Envelope-To"], ",")+"|"+m.Header.Get("Subject")+"|"+strings.TrimSpace(string(body)))
	}
	return out
}

// TestHeldWithWaitroom: a room that holds places, and waitroom's own
// deliverer (which knows the server's public URL, as serve --public-url
// tells it), reach the receiver, which emails through a real SMTP
// conversation: each held place is told it is near when it joins within
// notify_at, and the first is told its turn came, with the time to claim
// by and the event's claim_url, once a slot frees.
func TestHeldWithWaitroom(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := memstore.New()
	defer store.Close()
	now := time.Now()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity, cfg.HoldPlaces, cfg.ClaimWindow, cfg.NotifyAt = 1, true, waitroom.Duration(10*time.Minute), 2
	if _, _, err := store.PutRoom(ctx, "sale", cfg, now); err != nil {
		t.Fatal(err)
	}
	mta := newSMTPServer(t)
	secret := newSecret(t)
	srv := endpointWith(t, secret, nil, &Mailer{Addr: mta.addr, From: "queue@shop.example"},
		Options{WaitroomURL: "https://not-this.example", Location: time.UTC})
	if _, _, err := store.PutWebhook(ctx, waitroom.Webhook{Room: "sale", Name: "notify", URL: srv.URL,
		Events: []string{"*"}, Secret: secret}, now); err != nil {
		t.Fatal(err)
	}
	d := webhook.New(webhook.Options{Store: store, AllowPrivate: true, Poll: 20 * time.Millisecond,
		PublicURL: "https://queue.shop.example"})
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	// A walk-in holds the one slot; two held places wait behind it.
	walkIn, err := store.Join(ctx, "sale", "", time.Now())
	if err != nil || walkIn.Status != waitroom.StatusActive {
		t.Fatalf("the walk-in: %+v %v", walkIn, err)
	}
	var held []waitroom.Session
	for _, contact := range []string{"ana@example.com", "bob@example.com"} {
		s, err := store.JoinWith(ctx, "sale", waitroom.JoinRequest{Contact: contact}, time.Now())
		if err != nil || s.Status != waitroom.StatusWaiting {
			t.Fatalf("the held join of %s: %+v %v", contact, s, err)
		}
		held = append(held, s)
	}
	if _, err := store.Leave(ctx, "sale", walkIn.ID, waitroom.ReasonLeft, time.Now()); err != nil {
		t.Fatal(err)
	}
	ana, err := store.Lookup(ctx, "sale", held[0].Ticket, "")
	if err != nil || ana.Status != waitroom.StatusInvited {
		t.Fatalf("ana after the walk-in left: %+v %v, want invited", ana, err)
	}

	want := []string{
		"ana@example.com|You're nearly there|You're nearly there: position 1 in line for sale. We will send you a link when it is your turn.",
		"bob@example.com|You're nearly there|You're nearly there: position 2 in line for sale. We will send you a link when it is your turn.",
		"ana@example.com|It's your turn|It's your turn in sale: claim your place by " + ana.ClaimBy.UTC().Format("15:04") +
			" UTC at https://queue.shop.example/claim/sale/" + ana.ID,
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(mta.got()) < len(want) {
		if time.Now().After(deadline) {
			t.Fatalf("received %q within 30s, want %d messages (deliveries %+v)", mta.got(), len(want), d.Counts())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Deliveries are not ordered: compare as sets, and nothing else came.
	got := mta.got()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("received\n%q\nwant\n%q", got, want)
	}
	// Claimed: session.claimed tells nothing more. Every event is
	// delivered: joined and admitted for the walk-in, joined and near for
	// each held place, the walk-in's ended, ana's invited and claimed.
	if _, err := store.Claim(ctx, "sale", ana.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	for d.Counts().Delivered < 9 {
		if time.Now().After(deadline) {
			t.Fatalf("not every event delivered within 30s: %+v, want 9 delivered", d.Counts())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(mta.got()); n != len(want) {
		t.Errorf("after the claim %d messages, want %d: %q", n, len(want), mta.got())
	}
}
