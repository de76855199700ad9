package webhook

import (
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// TestWithClaimURL: claim_url is added as the data's last member, every
// other member kept; data it does not fit is left as it is.
func TestWithClaimURL(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	d := waitroom.HookSession{Room: "shop", Session: "AAAAAAAAAAEsecretsecretsecretse", Ticket: 1, Status: waitroom.StatusInvited,
		From: waitroom.StatusWaiting, JoinedAt: at, Contact: `a"<b>&c`, ClaimBy: &at, ClaimPath: waitroom.ClaimPath("shop", "AAAAAAAAAAEsecretsecretsecretse")}
	data := d.AppendJSON(nil)
	got := withClaimURL(data, "https://wait.example.com/")
	var before, after map[string]any
	if err := json.Unmarshal(data, &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &after); err != nil {
		t.Fatalf("withClaimURL made %s: %v", got, err)
	}
	want := "https://wait.example.com/claim/shop/AAAAAAAAAAEsecretsecretsecretse"
	if after["claim_url"] != want {
		t.Fatalf("claim_url %v, want %s", after["claim_url"], want)
	}
	delete(after, "claim_url")
	if !maps.Equal(before, after) {
		t.Fatalf("the other members changed:\n%v\nwant\n%v", after, before)
	}
	if string(got[:len(data)-1]) != string(data[:len(data)-1]) {
		t.Fatalf("the data is not kept byte for byte before the new member:\n%s\n%s", got, data)
	}

	// The message's body is valid JSON with the link in its data.
	m := waitroom.HookMessage{ID: "msg_1", Type: waitroom.HookSessionInvited, At: at, Data: data}
	dl := &Deliverer{o: Options{PublicURL: "https://wait.example.com"}}
	var body struct {
		Type string `json:"type"`
		Data struct {
			ClaimURL string `json:"claim_url"`
		} `json:"data"`
	}
	if err := json.Unmarshal(dl.body(m), &body); err != nil || body.Type != waitroom.HookSessionInvited || body.Data.ClaimURL != want {
		t.Fatalf("body %s (%v), want session.invited with claim_url %s", dl.body(m), err, want)
	}
	// Data without a claim path (a waiting session's) is sent as it is.
	d.Status, d.ClaimBy, d.ClaimPath = waitroom.StatusWaiting, nil, ""
	m = waitroom.HookMessage{ID: "msg_2", Type: waitroom.HookSessionJoined, At: at, Data: d.AppendJSON(nil)}
	if string(dl.body(m)) != string(m.Body()) {
		t.Fatalf("a body without a claim path changed: %s", dl.body(m))
	}

	for _, tc := range []struct{ name, data string }{
		{"no claim_path", `{"room":"r","session":"s"}`},
		{"a relative claim_path", `{"claim_path":"claim/r/s"}`},
		{"a claim_path of the wrong type", `{"claim_path":5}`},
		{"a claim_url already", `{"claim_path":"/claim/r/s","claim_url":"https://other.example/x"}`},
		{"not an object", `["claim_path"]`},
		{"not JSON", `{"claim_path":"/claim/r/s"`},
		{"empty", ``},
	} {
		if got := withClaimURL(json.RawMessage(tc.data), "https://wait.example.com"); string(got) != tc.data {
			t.Errorf("%s: got %s, want it unchanged", tc.name, got)
		}
	}
	// Space around the object is fine.
	got = withClaimURL(json.RawMessage(" {\"claim_path\":\"/claim/r/s\"} \n"), "https://w.example")
	if string(got) != `{"claim_path":"/claim/r/s","claim_url":"https://w.example/claim/r/s"}` {
		t.Errorf("data with space around it: got %s", got)
	}
}
