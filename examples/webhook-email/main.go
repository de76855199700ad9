// Command webhook-email receives a waitroom webhook and tells people how
// their place in line is doing, by email over SMTP or by a text message
// through an HTTP API that takes a form POST (Twilio's Messages API has
// this shape). With neither configured it logs what it would send.
//
//   - session.near: "You're nearly there: position 3 in line for sale."
//   - session.invited (a held place whose turn came): "It's your turn in
//     sale: claim your place by 18:10 UTC at https://…/claim/sale/…"
//   - session.admitted: "It is your turn in sale (ticket #42)."
//
// Whom to tell: a held place's contact (POST /v1/rooms/{room}/sessions
// {"contact":"…"} with the admin token, in a room with hold_places), else
// the session's key (the same join with {"key":"…"}, or an invite's key).
// One with an entry in CONTACTS is sent to that address; one that is an
// email address itself (it holds an "@"), or a phone number in E.164 form
// ("+" and digits), is sent to as it is.
//
// The claim link is the event's claim_url, which waitroom adds when it
// runs with --public-url; without it, WAITROOM_URL and the event's
// claim_path make it.
//
// Environment:
//
//	WEBHOOK_SECRET  the webhook's secret, whsec_… (required)
//	LISTEN          address to listen on (default :8090); the endpoint is POST /
//	CONTACTS        file of "key contact" lines (optional; # starts a comment)
//	LINK            URL put in the messages of people who keep a page open, e.g. your waiting page (optional)
//	WAITROOM_URL    waitroom's public URL, for claim links when events carry no claim_url (optional)
//	TZ              the time zone of the claim-by times, e.g. Europe/Paris (default: the system's)
//	SMTP_ADDR       host:port of an SMTP server: send email
//	SMTP_USER, SMTP_PASSWORD  PLAIN authentication (optional)
//	MAIL_FROM       the From address (required with SMTP_ADDR)
//	SMS_URL         URL of the messages API: send text messages
//	SMS_USER, SMS_TOKEN  HTTP basic authentication (e.g. account SID and auth token)
//	SMS_FROM        the From number (required with SMS_URL)
//
// Deliveries come at least once: the same event may arrive again, with
// the same webhook-id. This receiver remembers the ids it acted on for two
// days, in memory, so a person is told once as long as it runs as one
// process.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/mail"
	"net/smtp"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func main() {
	h, addr, err := setup(os.Getenv)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("webhook-email listening on %s", addr)
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

// Sender sends one message to one contact.
type Sender interface {
	Send(ctx context.Context, to, subject, text string) error
}

// setup reads the configuration and returns the receiver and the address
// to listen on.
func setup(getenv func(string) string) (http.Handler, string, error) {
	secret := getenv("WEBHOOK_SECRET")
	if !strings.HasPrefix(secret, "whsec_") {
		return nil, "", errors.New("set WEBHOOK_SECRET to the webhook's secret (whsec_…)")
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, "", fmt.Errorf("WEBHOOK_SECRET: %w", err)
	}
	contacts := map[string]string{}
	if path := getenv("CONTACTS"); path != "" {
		if contacts, err = readContacts(path); err != nil {
			return nil, "", err
		}
	}
	var send Sender
	switch {
	case getenv("SMTP_ADDR") != "":
		from, err := mail.ParseAddress(getenv("MAIL_FROM"))
		if err != nil {
			return nil, "", fmt.Errorf("MAIL_FROM: %w", err)
		}
		m := &Mailer{Addr: getenv("SMTP_ADDR"), From: from.Address}
		if user := getenv("SMTP_USER"); user != "" {
			host, _, _ := strings.Cut(m.Addr, ":")
			m.Auth = smtp.PlainAuth("", user, getenv("SMTP_PASSWORD"), host)
		}
		send = m
	case getenv("SMS_URL") != "":
		if getenv("SMS_FROM") == "" {
			return nil, "", errors.New("set SMS_FROM to the number messages come from")
		}
		send = &Texter{URL: getenv("SMS_URL"), User: getenv("SMS_USER"), Token: getenv("SMS_TOKEN"), From: getenv("SMS_FROM"),
			Client: &http.Client{Timeout: 10 * time.Second}}
	default:
		send = logSender{}
	}
	opts := Options{Link: getenv("LINK"), WaitroomURL: strings.TrimSuffix(getenv("WAITROOM_URL"), "/")}
	if opts.WaitroomURL != "" {
		if u, err := url.Parse(opts.WaitroomURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, "", fmt.Errorf("WAITROOM_URL must be http(s)://host[:port], not %q", opts.WaitroomURL)
		}
	}
	return NewReceiver(wh, contacts, send, opts), cmp.Or(getenv("LISTEN"), ":8090"), nil
}

// readContacts reads "key contact" lines.
func readContacts(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"key contact\"", path, n)
		}
		out[fields[0]] = fields[1]
	}
	return out, sc.Err()
}

// Options are what the messages say besides the event.
type Options struct {
	// Link is put in the messages of people who keep a page open (not
	// held places), e.g. your waiting page.
	Link string
	// WaitroomURL is waitroom's public URL: the claim link is it and the
	// event's claim_path when the event has no claim_url.
	WaitroomURL string
	// Location is the time zone of claim-by times (nil: time.Local).
	Location *time.Location
}

// Receiver is the webhook endpoint.
type Receiver struct {
	wh       *standardwebhooks.Webhook
	contacts map[string]string
	send     Sender
	opts     Options

	mu   sync.Mutex
	seen map[string]time.Time // webhook-ids acted on, or being acted on
}

// NewReceiver returns the endpoint: it checks each request's signature with
// wh, and on session.near, session.invited and session.admitted sends a
// message through send.
func NewReceiver(wh *standardwebhooks.Webhook, contacts map[string]string, send Sender, opts Options) *Receiver {
	if opts.Location == nil {
		opts.Location = time.Local
	}
	return &Receiver{wh: wh, contacts: contacts, send: send, opts: opts, seen: map[string]time.Time{}}
}

// event is the part of a webhook body this receiver reads.
type event struct {
	Type string `json:"type"`
	Data struct {
		Room      string    `json:"room"`
		Ticket    int64     `json:"ticket"`
		Key       string    `json:"key"`
		Contact   string    `json:"contact"`    // a held place's
		Position  int64     `json:"position"`   // session.near
		ClaimBy   time.Time `json:"claim_by"`   // session.invited
		ClaimPath string    `json:"claim_path"` // session.invited
		ClaimURL  string    `json:"claim_url"`  // session.invited, from a server with --public-url
	} `json:"data"`
}

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}
	// Verify checks the signature over the raw body and that
	// webhook-timestamp is within five minutes of now.
	if err := rc.wh.Verify(body, r.Header); err != nil {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var ev event
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return
	}
	to := rc.contact(cmp.Or(ev.Data.Contact, ev.Data.Key))
	subject, text := rc.message(ev)
	if to == "" || text == "" {
		w.WriteHeader(http.StatusNoContent) // nothing to do: a 2xx, so it is not sent again
		return
	}
	id := r.Header.Get(standardwebhooks.HeaderWebhookID)
	if !rc.claim(id) {
		w.WriteHeader(http.StatusNoContent) // told already (or being told)
		return
	}
	if err := rc.send.Send(r.Context(), to, subject, text); err != nil {
		rc.release(id)
		log.Printf("sending to %s: %v", to, err)
		// Any status but 2xx makes waitroom try again later.
		http.Error(w, "could not send", http.StatusBadGateway)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// message is what to tell the person of ev: "" for an event that tells
// nothing.
func (rc *Receiver) message(ev event) (subject, text string) {
	d := ev.Data
	switch ev.Type {
	case "session.near":
		text = fmt.Sprintf("You're nearly there: position %d in line for %s.", d.Position, d.Room)
		switch {
		case d.Contact != "":
			text += " We will send you a link when it is your turn."
		case rc.opts.Link != "":
			text += " Keep " + rc.opts.Link + " open so you do not lose your place."
		}
		return "You're nearly there", text
	case "session.invited":
		text = fmt.Sprintf("It's your turn in %s: claim your place", d.Room)
		if !d.ClaimBy.IsZero() {
			text += " by " + d.ClaimBy.In(rc.opts.Location).Format("15:04 MST")
		}
		link := d.ClaimURL
		if link == "" && rc.opts.WaitroomURL != "" && strings.HasPrefix(d.ClaimPath, "/") {
			link = rc.opts.WaitroomURL + d.ClaimPath
		}
		if link == "" {
			return "It's your turn", text + "."
		}
		// The link last, with nothing after it that a mail client could
		// take for part of it.
		return "It's your turn", text + " at " + link
	case "session.admitted":
		text = fmt.Sprintf("It is your turn in %s (ticket #%d).", d.Room, d.Ticket)
		if rc.opts.Link != "" {
			text += " Go to " + rc.opts.Link + " now."
		}
		return "Your turn has come", text
	}
	return "", ""
}

var phone = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// contact is the address for key: its entry in the contacts, or the key
// itself when it is an email address or a phone number; "" for none.
func (rc *Receiver) contact(key string) string {
	if c, ok := rc.contacts[key]; ok {
		return c
	}
	if a, err := mail.ParseAddress(key); err == nil && a.Address == key {
		return key
	}
	if phone.MatchString(key) {
		return key
	}
	return ""
}

// remember is how long an acted-on webhook-id is kept: past the 24 hours
// of retries, with room for a replay of a dead letter.
const remember = 48 * time.Hour

// claim reports whether id is new, and marks it seen.
func (rc *Receiver) claim(id string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	now := time.Now()
	for k, at := range rc.seen {
		if now.Sub(at) > remember {
			delete(rc.seen, k)
		}
	}
	if _, ok := rc.seen[id]; ok {
		return false
	}
	rc.seen[id] = now
	return true
}

// release forgets id, so a retry of it is acted on.
func (rc *Receiver) release(id string) {
	rc.mu.Lock()
	delete(rc.seen, id)
	rc.mu.Unlock()
}

// Mailer sends email through an SMTP server (STARTTLS when it offers it).
type Mailer struct {
	Addr, From string
	Auth       smtp.Auth
}

func (m *Mailer) Send(ctx context.Context, to, subject, text string) error {
	a, err := mail.ParseAddress(to)
	if err != nil {
		return fmt.Errorf("not an email address: %q", to)
	}
	msg := "From: " + m.From + "\r\nTo: " + a.Address + "\r\nSubject: " + subject +
		"\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + text + "\r\n"
	return smtp.SendMail(m.Addr, m.Auth, m.From, []string{a.Address}, []byte(msg))
}

// Texter sends a text message with a form POST of To, From and Body.
type Texter struct {
	URL, User, Token, From string
	Client                 *http.Client
}

func (t *Texter) Send(ctx context.Context, to, subject, text string) error {
	if !phone.MatchString(to) {
		return fmt.Errorf("not a phone number in E.164 form: %q", to)
	}
	form := url.Values{"To": {to}, "From": {t.From}, "Body": {text}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if t.User != "" {
		req.SetBasicAuth(t.User, t.Token)
	}
	resp, err := t.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("messages API answered %s: %s", resp.Status, b)
	}
	return nil
}

// logSender logs what it would send.
type logSender struct{}

func (logSender) Send(ctx context.Context, to, subject, text string) error {
	log.Printf("to %s: %s: %s", to, subject, text)
	return nil
}
