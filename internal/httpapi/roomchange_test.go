package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/memstore"
	"github.com/waitroom/waitroom/redisstore"
	"github.com/waitroom/waitroom/sqlitestore"
)

// Safe changes to a live room (roomchange.go): PATCH, pause, resume, the
// room's ETag and If-Match, on every store.

// newEnvOn is newEnv over st, which t's cleanup closes.
func newEnvOn(t *testing.T, st waitroom.Store) *env {
	t.Helper()
	e := &env{t: t, clock: waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)), reg: prometheus.NewRegistry()}
	e.raw = httpapi.NewHandler(withParts(t, httpapi.Config{Store: st, AdminToken: adminToken, Clock: e.clock, Registry: e.reg}))
	e.handler = checked(t, e.raw)
	e.srv = httptest.NewServer(e.handler)
	t.Cleanup(func() {
		e.srv.Close()
		_ = st.Close()
	})
	return e
}

// stores are the three backends, each a fresh store for t.
var stores = map[string]func(t *testing.T) waitroom.Store{
	"memstore": func(t *testing.T) waitroom.Store { return memstore.New() },
	"sqlite": func(t *testing.T) waitroom.Store {
		s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "waitroom.db"))
		if err != nil {
			t.Fatalf("sqlitestore.Open: %v", err)
		}
		return s
	},
	"redis": func(t *testing.T) waitroom.Store {
		return redisStore(t, redisClient(t, redistest.Server(t)))
	},
}

func redisClient(t *testing.T, addr string) redis.UniversalClient {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func redisStore(t *testing.T, c redis.UniversalClient) waitroom.Store {
	t.Helper()
	s, err := redisstore.New(t.Context(), c, redisstore.WithPrefix("roomchange"))
	if err != nil {
		t.Fatalf("redisstore.New: %v", err)
	}
	return s
}

// send is one admin request with headers (name, value pairs).
func (e *env) send2(method, path, body string, headers ...string) answer {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	withAdmin.set(req.Header)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: reading answer: %v", method, path, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// roomOf decodes a Room answer and checks its ETag is its revision.
func roomOf(t *testing.T, ans answer) waitroom.Room {
	t.Helper()
	var r waitroom.Room
	if err := json.Unmarshal(ans.body, &r); err != nil {
		t.Fatalf("decoding room %s: %v", ans.body, err)
	}
	if got := ans.header.Get("ETag"); got != r.ETag() || r.Revision < 1 {
		t.Fatalf("room answer: ETag %q, revision %d; want the revision quoted", got, r.Revision)
	}
	return r
}

// listed reads room name from the admin list.
func (e *env) listed(t *testing.T, name string) waitroom.Room {
	t.Helper()
	var v struct {
		Rooms []waitroom.Room `json:"rooms"`
	}
	ans := e.send2("GET", "/v1/rooms", "")
	if err := json.Unmarshal(ans.body, &v); err != nil {
		t.Fatalf("decoding rooms %s: %v", ans.body, err)
	}
	for _, r := range v.Rooms {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("room %s is not listed: %s", name, ans.body)
	return waitroom.Room{}
}

func wantCodeAns(t *testing.T, what string, ans answer, status int, code waitroom.Code) {
	t.Helper()
	e, err := errorShape(ans.header, ans.body)
	if err != nil || ans.status != status || e.Error.Code != code {
		t.Fatalf("%s: %d %s (%v); want %d %s", what, ans.status, ans.body, err, status, code)
	}
}

// shopConfig is the acceptance's room: capacity 5, inventory 100 and a
// target, with more fields set than their defaults.
const shopConfig = `{"capacity":5,"inventory":100,"target_url":"https://shop.example/checkout","rate_per_minute":600,` +
	`"grace":"45s","return_origins":["https://shop.example"],"notify_at":3}`

// TestPauseResumeKeepEveryField: a room paused and resumed by each route,
// and by PATCH {"paused":…}, keeps every other field of its configuration,
// on every store; resuming admits the waiting at once; each change is
// audited as pause or resume, with the reason given.
func TestPauseResumeKeepEveryField(t *testing.T) {
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			e := newEnvOn(t, newStore(t))
			created := roomOf(t, e.must(201, withAdmin, "PUT", "/v1/rooms/shop", shopConfig))
			want := created.RoomConfig
			if want.Capacity != 5 || want.Inventory == nil || *want.Inventory != 100 || want.TargetURL == "" {
				t.Fatalf("room as made: %+v", want)
			}
			rev := created.Revision
			for _, way := range []struct {
				name          string
				pause, resume func() answer
			}{
				{"routes",
					func() answer { return e.send2("POST", "/v1/rooms/shop/pause", `{"reason":"stock count"}`) },
					func() answer { return e.send2("POST", "/v1/rooms/shop/resume", "") }},
				{"patch",
					func() answer {
						return e.send2("PATCH", "/v1/rooms/shop", `{"paused":true}`, "Content-Type", "application/merge-patch+json")
					},
					func() answer {
						return e.send2("PATCH", "/v1/rooms/shop", `{"paused":false}`, "Content-Type", "application/json")
					}},
			} {
				for _, step := range []struct {
					do     func() answer
					paused bool
				}{{way.pause, true}, {way.resume, false}} {
					ans := step.do()
					if ans.status != 200 {
						t.Fatalf("%s paused=%v: %d %s", way.name, step.paused, ans.status, ans.body)
					}
					got := roomOf(t, ans)
					rev++
					w := want
					w.Paused = step.paused
					if !got.RoomConfig.Equal(w) || got.Revision != rev {
						t.Fatalf("%s paused=%v answered %+v (revision %d), want %+v (revision %d)", way.name, step.paused, got.RoomConfig, got.Revision, w, rev)
					}
					if l := e.listed(t, "shop"); !l.RoomConfig.Equal(w) || l.Revision != rev {
						t.Fatalf("%s paused=%v: the list shows %+v (revision %d), want %+v", way.name, step.paused, l.RoomConfig, l.Revision, w)
					}
					if g := e.send2("GET", "/v1/rooms/shop", ""); g.header.Get("ETag") != got.ETag() {
						t.Fatalf("GET ETag %q, want %q", g.header.Get("ETag"), got.ETag())
					}
				}
			}
			// A pause of a paused room changes nothing: no new revision.
			e.must(200, withAdmin, "POST", "/v1/rooms/shop/pause", "")
			again := roomOf(t, e.must(200, withAdmin, "POST", "/v1/rooms/shop/pause", `{"reason":"again"}`))
			if again.Revision != rev+1 {
				t.Errorf("a second pause moved the revision to %d, want %d", again.Revision, rev+1)
			}
			// Resuming admits those who waited.
			for range 7 {
				e.must(201, noAuth, "POST", "/v1/rooms/shop/sessions", "")
			}
			resumed := roomOf(t, e.must(200, withAdmin, "POST", "/v1/rooms/shop/resume", `{"reason":"back"}`))
			if resumed.Active != 5 || resumed.Waiting != 2 || resumed.Reserved != 5 {
				t.Errorf("after resume: active %d, waiting %d, reserved %d; want 5, 2, 5", resumed.Active, resumed.Waiting, resumed.Reserved)
			}
			var log struct {
				Entries []waitroom.AuditEntry `json:"entries"`
			}
			_ = json.Unmarshal(e.must(200, withAdmin, "GET", "/v1/rooms/shop/audit", "").body, &log)
			var actions []string
			for _, a := range log.Entries {
				actions = append(actions, a.Action+":"+a.Reason)
			}
			wantLog := "resume:back pause: resume: pause: resume: pause:stock count config:"
			if got := strings.Join(actions, " "); got != wantLog {
				t.Errorf("audit log (newest first) = %q, want %q", got, wantLog)
			}
		})
	}
}

// TestIfMatch: PUT and PATCH with a stale If-Match answer 412
// precondition_failed and change nothing; with the current ETag (or *)
// they go through; If-Match on a room that does not exist is 412 and
// creates nothing.
func TestIfMatch(t *testing.T) {
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			e := newEnvOn(t, newStore(t))
			first := roomOf(t, e.must(201, withAdmin, "PUT", "/v1/rooms/shop", shopConfig))
			second := roomOf(t, e.must(200, withAdmin, "PATCH", "/v1/rooms/shop", `{"capacity":6}`))
			stale := first.ETag()
			for _, c := range []struct{ method, body, tag string }{
				{"PUT", `{"capacity":1}`, stale},
				{"PUT", `{"capacity":1}`, "W/" + second.ETag()},
				{"PUT", `{"capacity":1}`, `"nonsense"`},
				{"PATCH", `{"capacity":1}`, stale},
				{"PATCH", `{"capacity":1}`, stale + ", " + `"999"`},
				{"POST pause", ``, stale},
			} {
				method, path := c.method, "/v1/rooms/shop"
				if method == "POST pause" {
					method, path = "POST", "/v1/rooms/shop/pause"
				}
				ans := e.send2(method, path, c.body, "If-Match", c.tag)
				wantCodeAns(t, c.method+" with If-Match "+c.tag, ans, 412, waitroom.CodePreconditionFailed)
				now := e.listed(t, "shop")
				if !now.RoomConfig.Equal(second.RoomConfig) || now.Revision != second.Revision {
					t.Fatalf("%s with a stale If-Match changed the room: %+v (revision %d)", c.method, now.RoomConfig, now.Revision)
				}
			}
			third := roomOf(t, e.must200(e.send2("PUT", "/v1/rooms/shop", shopConfig, "If-Match", `"1", `+second.ETag())))
			if third.Revision != second.Revision+1 || third.Capacity != 5 {
				t.Fatalf("PUT with the current ETag: %+v", third)
			}
			fourth := roomOf(t, e.must200(e.send2("PATCH", "/v1/rooms/shop", `{"capacity":9,"target_url":null}`, "If-Match", third.ETag())))
			if fourth.Capacity != 9 || fourth.TargetURL != "" || fourth.Inventory == nil || *fourth.Inventory != 100 {
				t.Fatalf("PATCH with the current ETag: %+v", fourth.RoomConfig)
			}
			roomOf(t, e.must200(e.send2("PUT", "/v1/rooms/shop", shopConfig, "If-Match", "*")))

			wantCodeAns(t, "PUT If-Match * of a new room", e.send2("PUT", "/v1/rooms/new", `{}`, "If-Match", "*"), 412, waitroom.CodePreconditionFailed)
			wantCodeAns(t, "PUT If-Match of a new room", e.send2("PUT", "/v1/rooms/new", `{}`, "If-Match", `"1"`), 412, waitroom.CodePreconditionFailed)
			wantCodeAns(t, "GET of the room If-Match did not create", e.do(noAuth, "GET", "/v1/rooms/new", ""), 404, waitroom.CodeRoomNotFound)

			// Deleted and made again: the old ETag does not match.
			e.must(204, withAdmin, "DELETE", "/v1/rooms/shop?force=true", "")
			remade := roomOf(t, e.must(201, withAdmin, "PUT", "/v1/rooms/shop", shopConfig))
			if remade.ETag() == first.ETag() || remade.Revision <= fourth.Revision {
				t.Fatalf("room made again has ETag %s, the first had %s and the last %s", remade.ETag(), first.ETag(), fourth.ETag())
			}
			wantCodeAns(t, "PATCH with an ETag of the deleted room", e.send2("PATCH", "/v1/rooms/shop", `{"capacity":1}`, "If-Match", first.ETag()), 412, waitroom.CodePreconditionFailed)
		})
	}
}

func (e *env) must200(ans answer) answer {
	e.t.Helper()
	if ans.status != 200 {
		e.t.Fatalf("got %d %s, want 200", ans.status, ans.body)
	}
	return ans
}

// TestPatchRoom: a merge patch changes only what it names; null is the
// default; the result is checked as a PUT body is; what is not a patch,
// or not for a room that exists, is refused with the documented error.
func TestPatchRoom(t *testing.T) {
	e := newEnv(t)
	e.must(201, withAdmin, "PUT", "/v1/rooms/shop", shopConfig)
	r := roomOf(t, e.must(200, withAdmin, "PATCH", "/v1/rooms/shop", `{"capacity":null,"rate_per_minute":60,"return_origins":null}`))
	if r.Capacity != 100 || r.RatePerMinute != 60 || len(r.ReturnOrigins) != 0 || r.TargetURL == "" || r.NotifyAt != 3 {
		t.Fatalf("after PATCH: %+v", r.RoomConfig)
	}
	same := roomOf(t, e.must(200, withAdmin, "PATCH", "/v1/rooms/shop", `{"rate_per_minute":60}`))
	if same.Revision != r.Revision {
		t.Errorf("a PATCH that changes nothing moved the revision from %d to %d", r.Revision, same.Revision)
	}
	for _, c := range []struct {
		name, ct, body string
		status         int
		code           waitroom.Code
	}{
		{"unknown field", "", `{"capacityy":1}`, 400, waitroom.CodeInvalidJSON},
		{"invalid value", "", `{"capacity":-1}`, 400, waitroom.CodeInvalidConfig},
		{"wrong type", "", `{"paused":"yes"}`, 400, waitroom.CodeInvalidJSON},
		{"an array", "", `[{"capacity":1}]`, 400, waitroom.CodeInvalidJSON},
		{"null", "", `null`, 400, waitroom.CodeInvalidJSON},
		{"no body", "", ``, 400, waitroom.CodeInvalidJSON},
		{"not JSON", "", `{capacity:1}`, 400, waitroom.CodeInvalidJSON},
		{"a JSON Patch", "application/json-patch+json", `[{"op":"replace","path":"/capacity","value":1}]`, 400, waitroom.CodeInvalidRequest},
		{"curl's form type is read as JSON, as PUT reads it", "application/x-www-form-urlencoded", `{"capacity":100}`, 200, ""},
		{"held places without a window are given one", "", `{"hold_places":true}`, 200, ""},
	} {
		hs := []string{}
		if c.ct != "" {
			hs = append(hs, "Content-Type", c.ct)
		}
		ans := e.send2("PATCH", "/v1/rooms/shop", c.body, hs...)
		if c.status == 200 {
			got := roomOf(t, e.must200(ans))
			if c.body == `{"hold_places":true}` && got.ClaimWindow != waitroom.DefaultClaimWindow {
				t.Errorf("%s: claim_window %s", c.name, got.ClaimWindow)
			}
			continue
		}
		wantCodeAns(t, "PATCH "+c.name, ans, c.status, c.code)
	}
	wantCodeAns(t, "PATCH of an unknown room", e.send2("PATCH", "/v1/rooms/nowhere", `{"capacity":1}`), 404, waitroom.CodeRoomNotFound)
	wantCodeAns(t, "GET after PATCH of an unknown room", e.do(noAuth, "GET", "/v1/rooms/nowhere", ""), 404, waitroom.CodeRoomNotFound)
	wantCodeAns(t, "PATCH without a token", e.do(noAuth, "PATCH", "/v1/rooms/shop", `{"capacity":1}`), 401, waitroom.CodeUnauthorized)
	wantCodeAns(t, "pause without a token", e.do(noAuth, "POST", "/v1/rooms/shop/pause", ``), 401, waitroom.CodeUnauthorized)
	wantCodeAns(t, "pause of an unknown room", e.send2("POST", "/v1/rooms/nowhere/pause", ``), 404, waitroom.CodeRoomNotFound)
	for _, body := range []string{
		`{"reason":"` + strings.Repeat("x", waitroom.MaxAuditReason+1) + `"}`,
		`{"reason":"a\u0007bell"}`,
		`{"reason":"bidi \u202e"}`,
		`{"why":"no"}`,
		`{"reason":5}`,
	} {
		wantCodeAns(t, "resume with body "+body[:min(len(body), 30)], e.send2("POST", "/v1/rooms/shop/resume", body), 400, map[bool]waitroom.Code{true: waitroom.CodeInvalidJSON, false: waitroom.CodeInvalidRequest}[strings.Contains(body, "why") || strings.Contains(body, ":5")])
	}
	// The config entry of a PATCH says what changed, before and after.
	var log struct {
		Entries []waitroom.AuditEntry `json:"entries"`
	}
	_ = json.Unmarshal(e.must(200, withAdmin, "GET", "/v1/rooms/shop/audit", "").body, &log)
	found := false
	for _, a := range log.Entries {
		found = found || (a.Action == waitroom.AuditConfig && strings.Contains(string(a.Detail), `"rate_per_minute":[600,60]`))
	}
	if !found {
		t.Errorf("no config entry of the PATCH with rate_per_minute before and after: %+v", log.Entries)
	}
}

// TestPatchTwoProcessesOneRedis: two API processes on one Redis PATCH
// different fields of one room at once, without If-Match: every change
// lands (none overwrites the other's field), and with If-Match exactly
// one of two racing changes does.
func TestPatchTwoProcessesOneRedis(t *testing.T) {
	addr := redistest.Server(t)
	a := newEnvOn(t, redisStore(t, redisClient(t, addr)))
	b := newEnvOn(t, redisStore(t, redisClient(t, addr)))
	a.must(201, withAdmin, "PUT", "/v1/rooms/shop", shopConfig)
	const rounds = 40
	var wg sync.WaitGroup
	errs := make(chan string, 2*rounds)
	for i := 1; i <= rounds; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if ans := a.send2("PATCH", "/v1/rooms/shop", fmt.Sprintf(`{"capacity":%d}`, i)); ans.status != 200 {
				errs <- fmt.Sprintf("process a: %d %s", ans.status, ans.body)
			}
		}()
		go func() {
			defer wg.Done()
			if ans := b.send2("PATCH", "/v1/rooms/shop", fmt.Sprintf(`{"target_url":"/p%d"}`, i)); ans.status != 200 {
				errs <- fmt.Sprintf("process b: %d %s", ans.status, ans.body)
			}
		}()
		wg.Wait()
		r := a.listed(t, "shop")
		if r.Capacity != i || r.TargetURL != fmt.Sprintf("/p%d", i) || r.Inventory == nil || *r.Inventory != 100 {
			t.Fatalf("round %d: capacity %d, target %q, inventory %v; want both changes and the rest kept", i, r.Capacity, r.TargetURL, r.Inventory)
		}
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// With If-Match, of two changes from the same read exactly one lands.
	tag := a.send2("GET", "/v1/rooms/shop", "").header.Get("ETag")
	var ok, refused int
	var mu sync.Mutex
	for _, e := range []*env{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ans := e.send2("PATCH", "/v1/rooms/shop", `{"grace":"1m"}`, "If-Match", tag)
			mu.Lock()
			defer mu.Unlock()
			switch ans.status {
			case 200:
				ok++
			case 412:
				refused++
			}
		}()
	}
	wg.Wait()
	if ok != 1 || refused != 1 {
		t.Errorf("two PATCHes with one If-Match: %d went through, %d refused; want 1 and 1", ok, refused)
	}
}
