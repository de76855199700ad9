package webhook_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/webhook"
	"github.com/waitroom/waitroom/memstore"
)

// heldRoom makes a store with room "h" of two slots that holds places, and
// a webhook to url for events.
func heldRoom(t *testing.T, url string, events ...string) *memstore.Store {
	t.Helper()
	ctx := t.Context()
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 2
	cfg.HoldPlaces, cfg.ClaimWindow = true, waitroom.Duration(10*time.Minute)
	if _, _, err := st.PutRoom(ctx, "h", cfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.PutWebhook(ctx, waitroom.Webhook{Room: "h", Name: "a", URL: url, Events: events, Secret: secret}, time.Now()); err != nil {
		t.Fatal(err)
	}
	return st
}

// hookData is what the tests read of a delivered session event.
type hookData struct {
	Type string `json:"type"`
	Data struct {
		Session   string     `json:"session"`
		Status    string     `json:"status"`
		Contact   string     `json:"contact"`
		ClaimBy   *time.Time `json:"claim_by"`
		ClaimPath string     `json:"claim_path"`
		ClaimURL  *string    `json:"claim_url"`
	} `json:"data"`
}

// TestInvitedCarriesClaimURL: with a PublicURL, the data of a
// session.invited delivery carries claim_url, the public URL and the
// claim path, and the body sent is the body signed (the receiver checks
// every signature with the Standard Webhooks library). Data without a
// claim path (a waiting or active session's) carries none, and neither
// does any delivery of a deliverer without a PublicURL.
func TestInvitedCarriesClaimURL(t *testing.T) {
	for _, tc := range []struct {
		name, publicURL, want string
	}{
		{"with a public URL", "https://wait.example.com", "https://wait.example.com"},
		{"with a trailing slash", "https://wait.example.com:8443/", "https://wait.example.com:8443"},
		{"without a public URL", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := newReceiver(t)
			st := heldRoom(t, rc.srv.URL, waitroom.HookSessionJoined, waitroom.HookSessionInvited)
			run(t, webhook.Options{Store: st, AllowPrivate: true, Poll: 10 * time.Millisecond, PublicURL: tc.publicURL})
			ctx, now := t.Context(), time.Now()
			// A is invited as it joins (a free slot), B takes the other
			// slot, C waits until B leaves.
			a, err := st.JoinWith(ctx, "h", waitroom.JoinRequest{Contact: "contact-a"}, now)
			if err != nil || a.Status != waitroom.StatusInvited {
				t.Fatalf("held join into a free slot = %+v, %v; want invited", a, err)
			}
			b, _ := st.Join(ctx, "h", "", now)
			c, err := st.JoinWith(ctx, "h", waitroom.JoinRequest{Contact: "contact-c"}, now)
			if err != nil || c.Status != waitroom.StatusWaiting {
				t.Fatalf("held join into a full room = %+v, %v; want waiting", c, err)
			}
			if _, err := st.Leave(ctx, "h", b.ID, waitroom.ReasonLeft, now); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "5 deliveries", func() bool { got, _, _ := rc.snapshot(); return len(got) == 5 })
			_, _, bad := rc.snapshot()
			if len(bad) > 0 {
				t.Fatalf("the receiver refused a signature or body: %v", bad)
			}
			rc.mu.Lock()
			bodies := append([][]byte(nil), rc.bodies...)
			rc.mu.Unlock()
			claimBy := map[string]time.Time{a.ID: a.ClaimBy, c.ID: c.JoinedAt.Add(10 * time.Minute)}
			invited := map[string]int{}
			for _, body := range bodies {
				var m hookData
				if err := json.Unmarshal(body, &m); err != nil {
					t.Fatalf("body %s: %v", body, err)
				}
				if m.Data.Status != string(waitroom.StatusInvited) {
					if m.Data.ClaimURL != nil || m.Data.ClaimPath != "" {
						t.Errorf("%s of a %s session carries claim_url %v / claim_path %q, want neither: %s", m.Type, m.Data.Status, m.Data.ClaimURL, m.Data.ClaimPath, body)
					}
					continue
				}
				// A joined into a free slot: its session.joined shares the
				// data of its session.invited, claim path and all.
				if m.Type == waitroom.HookSessionInvited {
					invited[m.Data.Session]++
				}
				if m.Data.ClaimPath != waitroom.ClaimPath("h", m.Data.Session) || m.Data.ClaimBy == nil || !m.Data.ClaimBy.Equal(claimBy[m.Data.Session]) {
					t.Errorf("%s: claim_path %q claim_by %v, want %q and %v", m.Type, m.Data.ClaimPath, m.Data.ClaimBy, waitroom.ClaimPath("h", m.Data.Session), claimBy[m.Data.Session])
				}
				switch {
				case tc.want == "" && m.Data.ClaimURL != nil:
					t.Errorf("%s without a public URL carries claim_url %q", m.Type, *m.Data.ClaimURL)
				case tc.want != "" && (m.Data.ClaimURL == nil || *m.Data.ClaimURL != tc.want+m.Data.ClaimPath):
					t.Errorf("%s: claim_url %v, want %q: %s", m.Type, m.Data.ClaimURL, tc.want+m.Data.ClaimPath, body)
				}
			}
			if invited[a.ID] != 1 || invited[c.ID] != 1 {
				t.Fatalf("session.invited deliveries %v, want one for A and one for C", invited)
			}
		})
	}
}
