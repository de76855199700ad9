package gatekeeper

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// TestProxyRefusesJoinsLikeTheAPI checks that the reverse proxy, joining a
// visitor on their behalf, answers the room's refusals with the API's
// status, code and content type: a closed room is 409 room_closed and a
// sold-out one 409 sold_out on both doors, never a 400 on one of them.
func TestProxyRefusesJoinsLikeTheAPI(t *testing.T) {
	closed := waitroom.DefaultConfig()
	closed.ClosesAt = t0.Add(-time.Minute)
	soldOut := waitroom.DefaultConfig()
	none := int64(0)
	soldOut.Inventory = &none
	for _, tc := range []struct {
		name string
		room waitroom.RoomConfig
		code waitroom.Code
	}{
		{"closed", closed, waitroom.CodeRoomClosed},
		{"sold out", soldOut, waitroom.CodeSoldOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envConfig{room: tc.room})
			up := upstream(t, make(chan struct{}))
			srv := e.serve(&ProxyConfig{Upstream: mustURL(t, up.URL), Room: waitroom.DefaultRoom})
			api, apiBody := post(t, srv.URL+"/v1/rooms/"+waitroom.DefaultRoom+"/sessions")
			resp, body := get(t, srv.URL+"/page", func(r *http.Request) { r.Header.Set("Accept", "application/json") })
			for _, a := range []struct {
				door string
				resp *http.Response
				body string
			}{{"API join", api, apiBody}, {"proxy", resp, body}} {
				var v struct {
					Error struct {
						Code waitroom.Code `json:"code"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(a.body), &v); err != nil {
					t.Fatalf("%s: body %q: %v", a.door, a.body, err)
				}
				if a.resp.StatusCode != http.StatusConflict || v.Error.Code != tc.code {
					t.Errorf("%s: answered %d %s, want 409 %s", a.door, a.resp.StatusCode, v.Error.Code, tc.code)
				}
				if ct := a.resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
					t.Errorf("%s: Content-Type %q, want application/json; charset=utf-8", a.door, ct)
				}
			}
		})
	}
}

func post(t *testing.T, rawURL string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(rawURL, "application/json", strings.NewReader(""))
	if err != nil {
		t.Fatalf("POST %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: %v", rawURL, err)
	}
	return resp, string(b)
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
