package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/client"
	"github.com/waitroom/waitroom/internal/browsertest"
)

// TestConsoleInBrowser drives the operator console (/admin/) in Chromium
// against a real `waitroom serve` (embedded SQLite store, its own admin
// token) while a real crowd (`waitroom load`) moves through a room of
// capacity 3: sign-in, the rooms list, the live numbers and charts, pause,
// queue-all and resume, find, move to the front, revoke, and the CSRF
// check, each verified through the admin API.
//
// With WAITROOM_ARTIFACTS set it saves screenshots console-*.png: to
// testdata/artifacts/ at the module root when the variable is 1, else to
// the folder it names.
func TestConsoleInBrowser(t *testing.T) {
	browsertest.Require(t)
	bin := buildBinary(t)
	data := filepath.Join(t.TempDir(), "data")
	srv, token := startCrashServer(t, bin, data, append(noJoinLimitFlags(bin), "--push-refresh", "300ms"))
	adm := &consoleAdmin{t: t, base: srv.url, token: token, c: newCrashClient(srv.url, token)}

	// shop is where the crowd goes: three at a time, sessions capped at
	// 3 s, and a waiting session that loses its connection keeps its place
	// for half an hour (the crowd is stopped halfway, its line kept).
	shop := waitroom.DefaultConfig()
	shop.Capacity = 3
	shop.MaxSession = waitroom.Duration(3 * time.Second)
	shop.ActiveTimeout = 0
	shop.WaitingTimeout = 0
	shop.Grace = waitroom.Duration(30 * time.Minute)
	adm.put("shop", shop)
	// vip is paused with three people waiting: the rooms list shows both.
	vip := waitroom.DefaultConfig()
	vip.Capacity = 2
	vip.Paused = true
	vip.WaitingTimeout = 0
	adm.put("vip", vip)
	for i := range 3 {
		if _, err := adm.c.Join(ctx(t), "vip", fmt.Sprintf("vip-%d", i)); err != nil {
			t.Fatalf("joining vip: %v", err)
		}
	}

	tb := newConsoleTab(t)
	start := time.Now()
	step := func(what string) { t.Logf("%5.1fs %s", time.Since(start).Seconds(), what) }

	step("sign-in")
	// 1. Sign-in: a wrong token is refused in words; the right one signs in
	// with an HttpOnly, SameSite=Strict cookie and leaves no trace of the
	// token in the URL or the page.
	tb.navigate(srv.url + "/admin/")
	tb.waitFor(10*time.Second, "the sign-in form", `!document.querySelector("#view-signin").hidden && document.activeElement.id === "token"`)
	tb.must("a wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token"), chromedp.Click(chromedp.CSS("#signin")))
	tb.waitFor(10*time.Second, "the wrong-token message", `!document.querySelector("#signin-error").hidden && !document.querySelector("#signin").disabled`)
	if got := tb.text("#signin-error"); !strings.Contains(got, "admin token is wrong") {
		t.Errorf("after a wrong token the page says %q, want that the admin token is wrong", got)
	}
	if !tb.eval(`!document.querySelector("#view-signin").hidden && document.querySelector("#view-rooms").hidden`) {
		t.Errorf("a wrong token left the sign-in form")
	}
	tb.shot("signin")
	tb.must("the right token", chromedp.Evaluate[chromedp.Void](`document.querySelector("#token").value = ""`),
		chromedp.SendKeys(chromedp.CSS("#token"), token+"\n"))
	tb.waitFor(10*time.Second, "the rooms view", `!document.querySelector("#view-rooms").hidden && !document.querySelector("#signout").hidden`)
	tb.checkCookie(srv.url)
	if tb.eval(fmt.Sprintf(`[location.href, document.documentElement.outerHTML, JSON.stringify(localStorage), JSON.stringify(sessionStorage), document.cookie].some(s => s.includes(%q))`, token)) {
		t.Errorf("the admin token is in the URL, the page, the browser's storage or a script-readable cookie")
	}

	step("rooms list")
	// 2. The rooms list: each room with its state and numbers, as the API
	// counts them.
	tb.waitFor(15*time.Second, "the vip row", `document.querySelector('#rooms-body tr[data-room="vip"]')`)
	if got := tb.rowCells("vip"); len(got) < 4 || got[0] != "vip" || got[1] != "Paused" || got[2] != "3" || got[3] != "0 / 2" {
		t.Errorf("the vip row reads %q, want vip|Paused|3|0 / 2|…", got)
	}
	if got := tb.rowCells("shop"); len(got) < 4 || got[0] != "shop" || got[1] != "Open" || got[2] != "0" || got[3] != "0 / 3" {
		t.Errorf("the shop row reads %q, want shop|Open|0|0 / 3|…", got)
	}
	tb.rowsMatchAPI(adm, 15*time.Second)
	tb.shot("rooms")

	step("live room view with a crowd")
	// 3. The live room view while a crowd moves through the line.
	tb.must("opening shop", chromedp.Click(chromedp.CSS(`tr[data-room="shop"] a`)))
	tb.waitFor(15*time.Second, "the live room view", `location.hash === "#/rooms/shop" && document.querySelector("#live-status").textContent === "Live."`)
	before := tb.snapshot()
	crowd := startCrowd(t, bin, srv.url)
	var seenWaiting []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		now := tb.snapshot()
		if !slices.Contains(seenWaiting, now.stats["stat-waiting"]) {
			seenWaiting = append(seenWaiting, now.stats["stat-waiting"])
		}
		changed := now.changedFrom(before)
		if len(seenWaiting) >= 3 && changed["stat-joins"] && changed["stat-admissions"] && changed["stat-active"] &&
			changed["waiting"] && changed["joins"] && changed["admissions"] && changed["active"] {
			break
		}
		if time.Now().After(deadline) {
			tb.shot("failed")
			t.Fatalf("the room view did not follow the crowd within 30s: waiting read %q; before %+v; now %+v; crowd:\n%s",
				seenWaiting, before, now, crowd.out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, v := range seenWaiting {
		if strings.Trim(v, "0123456789,") != "" {
			t.Errorf("#stat-waiting read %q, want a count", v)
		}
	}
	// Enough people wait for what follows.
	adm.waitRoom(30*time.Second, "eight people waiting in shop", func(r waitroom.Room) bool { return r.Waiting >= 8 })
	tb.shot("room-live")

	step("pause")
	// 4. Pause: nobody is admitted while people wait, even as every active
	// session ends and frees its slot.
	tb.click("pause", "#pause")
	tb.confirm("Pause room shop?", true)
	tb.waitFor(10*time.Second, "the resume button", `!document.querySelector("#resume").hidden && document.querySelector("#pause").hidden`)
	room := adm.room("shop")
	if !room.Paused {
		t.Fatalf("after the console's pause the API says shop is not paused: %+v", room)
	}
	admissions := room.Admissions
	freed := false
	for deadline := time.Now().Add(20 * time.Second); ; {
		room = adm.room("shop")
		if room.Admissions != admissions {
			t.Fatalf("paused shop admitted %d more (admissions %d → %d)", room.Admissions-admissions, admissions, room.Admissions)
		}
		if room.Waiting == 0 {
			t.Fatalf("nobody waits in paused shop any more: the check proves nothing (%+v)", room)
		}
		if room.Active == 0 && !freed {
			// Every slot is free: watch two seconds more.
			freed = true
			deadline = time.Now().Add(2 * time.Second)
		}
		if time.Now().After(deadline) {
			if !freed {
				t.Fatalf("the active sessions of paused shop did not end within 20s: %+v", room)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.waitFor(15*time.Second, "the Paused badge", `document.querySelector("#room-state").textContent === "Paused"`)
	crowd.stop(t)

	step("crowd stopped; configuration form")
	// The crowd is gone; its line stays. Let sessions stay active as long
	// as they like from now on (no more churn while the test looks), with
	// the configuration form: only max_session changes.
	tb.click("edit", "#edit")
	tb.must("max_session 0s", chromedp.Evaluate[chromedp.Void](`document.querySelector("#cfg-max_session").value = "0s"`),
		chromedp.Click(chromedp.CSS("#config-save")))
	tb.confirm(`max_session: "3s" → "0s"`, true)
	tb.waitFor(10*time.Second, "the form to close", `document.querySelector("#config-form").hidden`)
	room = adm.room("shop")
	want := shop
	want.MaxSession, want.Paused = 0, true
	if !room.RoomConfig.Equal(want) {
		t.Errorf("after the form the configuration is %+v, want %+v", room.RoomConfig, want)
	}
	line := adm.waiting("shop")
	if len(line) < 6 {
		t.Fatalf("only %d wait in shop, want at least 6", len(line))
	}
	// The page's numbers are the API's.
	tb.waitFor(15*time.Second, "the headline to match the API", fmt.Sprintf(
		`document.querySelector("#stat-waiting").textContent === %q && document.querySelector("#stat-active").textContent === "0 of 3"`,
		fmt.Sprint(len(line))))

	step("resume, queue-all, resume")
	// 5. Resume admits the first three; queue-all sends them back to the
	// front in ticket order; resume admits them again before anyone else.
	tb.click("resume", "#resume")
	tb.confirm("Resume room shop?", true)
	adm.waitRoom(15*time.Second, "three active after resuming", func(r waitroom.Room) bool { return r.Active == 3 })
	first := line[:3]
	adm.wantStatus(first, waitroom.StatusActive, "admitted at the resume")
	tb.waitFor(15*time.Second, "the page to show the resume", `document.querySelector("#stat-active").textContent === "3 of 3" && !document.querySelector("#pause").hidden`)

	tb.click("queue everyone", "#queue-all")
	tb.confirm("back to the front of the line", true)
	tb.waitFor(10*time.Second, "queue-all to finish", `document.querySelector("#notice").textContent.includes("back in line")`)
	room = adm.room("shop")
	if !room.Paused || room.Active != 0 || room.Waiting != len(line) {
		t.Errorf("after queue-all: paused %v, active %d, waiting %d; want paused, 0 active, %d waiting", room.Paused, room.Active, room.Waiting, len(line))
	}
	requeued := adm.waiting("shop")
	if len(requeued) != len(line) {
		t.Fatalf("after queue-all %d wait, want %d", len(requeued), len(line))
	}
	for i, s := range requeued {
		if s.ID != line[i].ID || s.Position != int64(i+1) {
			t.Errorf("after queue-all position %d holds #%d (position %d), want #%d", i+1, s.Ticket, s.Position, line[i].Ticket)
		}
		if moved := s.Place < 0; moved != (i < 3) {
			t.Errorf("after queue-all #%d at %d has place %d: want the three moved ones (and only them) with a place", s.Ticket, i+1, s.Place)
		}
		if i > 0 && i < 3 && s.Ticket <= requeued[i-1].Ticket {
			t.Errorf("the queued-again sessions are not in ticket order: #%d after #%d", s.Ticket, requeued[i-1].Ticket)
		}
	}
	if e := adm.audit("shop")[0]; e.Action != waitroom.AuditQueueAll || e.Actor != waitroom.AuditActorConsole || !strings.Contains(string(e.Detail), `"moved":3`) {
		t.Errorf("the newest audit entry is %+v, want queue_all by console, 3 moved", e)
	}
	tb.waitFor(10*time.Second, "queue-all in the audit panel", `document.querySelector("#audit-list").textContent.includes("queue_all by console")`)

	tb.click("resume again", "#resume")
	tb.confirm("Resume room shop?", true)
	adm.waitRoom(15*time.Second, "three active after resuming again", func(r waitroom.Room) bool { return r.Active == 3 })
	adm.wantStatus(first, waitroom.StatusActive, "admitted first after the queue-all")
	if s := adm.session(line[3].ID); s.Status != waitroom.StatusWaiting || s.Position != 1 {
		t.Errorf("#%d, behind the three queued again, is %s at position %d; want waiting at 1", s.Ticket, s.Status, s.Position)
	}

	step("find, move to front, revoke")
	// 6. Find the last in line by ticket, move them to the front with a
	// reason, then revoke them.
	target := line[len(line)-1]
	ticket := fmt.Sprint(target.Ticket)
	tb.must("find by ticket", chromedp.SendKeys(chromedp.CSS("#find-q"), ticket+"\n"))
	tb.waitFor(10*time.Second, "the found session", fmt.Sprintf(`document.querySelector('#found article[data-session=%q]')`, target.ID))
	if rec := tb.record(target.ID); rec["id"] != target.ID || rec["ticket"] != ticket || rec["status"] != "waiting" ||
		rec["position"] != fmt.Sprint(len(line)-3) || !strings.Contains(tb.text("#found"), "session #"+ticket+" (waiting)") {
		t.Errorf("the found record reads %q (%q), want session #%s, waiting at position %d", rec, tb.text("#found"), ticket, len(line)-3)
	}
	const reason = "lost their place to a bug"
	tb.must("the reason", chromedp.SendKeys(chromedp.CSS("#front-reason"), reason))
	tb.click("move to front", "#front")
	tb.confirm(reason, true)
	tb.waitFor(10*time.Second, "the move to finish", `document.querySelector("#notice").textContent.includes("first in line")`)
	if s := adm.session(target.ID); s.Status != waitroom.StatusWaiting || s.Position != 1 || s.Place >= 0 {
		t.Errorf("after the move #%d is %s at position %d (place %d); want waiting at 1", s.Ticket, s.Status, s.Position, s.Place)
	}
	if e := adm.audit("shop")[0]; e.Action != waitroom.AuditFront || e.Session != target.ID || e.Reason != reason || e.Actor != waitroom.AuditActorConsole {
		t.Errorf("the newest audit entry is %+v, want front of %s by console with the reason", e, target.ID)
	}
	tb.waitFor(10*time.Second, "the reason in the audit panel", fmt.Sprintf(
		`[...document.querySelectorAll("#audit-list li")].some(li => li.textContent.includes("front by console") && li.textContent.includes(%q))`, "reason: “"+reason+"”"))
	tb.waitFor(10*time.Second, "the record to show position 1", recordJS(target.ID, "position", "1"))
	tb.shot("find")

	tb.click("revoke", "#revoke")
	tb.confirm("Revoke session #"+ticket, true)
	tb.waitFor(10*time.Second, "the revoke to finish", `document.querySelector("#notice").textContent.includes("revoked")`)
	if s := adm.session(target.ID); s.Status != waitroom.StatusLeft || s.EndReason != waitroom.ReasonRevoked {
		t.Errorf("after the revoke #%d is %s (%s), want left (revoked)", s.Ticket, s.Status, s.EndReason)
	}
	tb.waitFor(10*time.Second, "the record to show it ended", recordJS(target.ID, "status", "left")+" && "+recordJS(target.ID, "end_reason", "revoked (by an operator)"))
	tb.waitFor(10*time.Second, "the revoke in the audit panel", `document.querySelector("#audit-list").textContent.includes("revoke by console")`)

	step("CSRF")
	// 7. A change without the CSRF token is refused, and changes nothing:
	// the cookie alone is not enough.
	room = adm.room("shop")
	line = adm.waiting("shop")
	newest := adm.audit("shop")[0].ID
	for _, header := range []string{"", `, headers: {"X-CSRF-Token": "not-the-csrf-token"}`} {
		got := tb.evalString(`fetch("/v1/rooms/shop/queue-all", {method: "POST", credentials: "same-origin"` + header + `})
			.then(async r => r.status + " " + ((await r.json()).error || {}).code)`)
		if got != "403 forbidden" {
			t.Errorf("POST queue-all with the cookie and CSRF header %q: %s, want 403 forbidden", header, got)
		}
	}
	after := adm.room("shop")
	if after.Paused || after.Active != room.Active || after.Admissions != room.Admissions || after.Waiting != room.Waiting {
		t.Errorf("a refused queue-all changed the room: %+v, was %+v", after, room)
	}
	if now := adm.waiting("shop"); !sameSessions(now, line) {
		t.Errorf("a refused queue-all changed the line")
	}
	if e := adm.audit("shop")[0]; e.ID != newest {
		t.Errorf("a refused queue-all left an audit entry: %+v", e)
	}

	step("phone")
	// 8. A phone: nothing wider than the screen.
	if _, err := chromedp.Call(tb.Ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: 375, Height: 812, DeviceScaleFactor: 2, Mobile: true}); err != nil {
		t.Fatal(err)
	}
	tb.waitFor(10*time.Second, "a phone-sized layout", `document.documentElement.scrollWidth <= window.innerWidth`)
	tb.must("scrolling to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	tb.viewportShot("phone")
	if _, err := chromedp.Call(tb.Ctx, emulation.ClearDeviceMetricsOverride, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}

	step("rooms list again")
	// Back to the list: it follows what happened.
	tb.must("back to the rooms", chromedp.Click(chromedp.CSS("#back")))
	tb.waitFor(10*time.Second, "the rooms view", `!document.querySelector("#view-rooms").hidden`)
	tb.rowsMatchAPI(adm, 15*time.Second)

	step("room deleted")
	// A room deleted while its view is open: the page says so and stops.
	tb.must("opening shop again", chromedp.Click(chromedp.CSS(`tr[data-room="shop"] a`)))
	tb.waitFor(15*time.Second, "the live room view", `location.hash === "#/rooms/shop" && !document.querySelector("#view-room").hidden && document.querySelector("#live-status").textContent === "Live."`)
	if err := adm.c.DeleteRoom(ctx(t), "shop", true); err != nil {
		t.Fatalf("deleting shop: %v", err)
	}
	tb.waitFor(10*time.Second, "the page to say the room is gone", `document.querySelector("#live-status").textContent.includes("deleted") && document.querySelector("#error").textContent.includes("was deleted")`)

	step("done")
	for _, p := range tb.ConsoleProblems() {
		// The wrong token's 401 (and the signed-out page's first look at
		// its session), and the refused queue-alls' 403, are expected.
		if strings.Contains(p, "status of 401") || strings.Contains(p, "status of 403") {
			continue
		}
		t.Errorf("browser console: %s", p)
	}
}

// consoleAdmin reads and changes rooms through the admin API with the
// bearer token, failing the test on an error.
type consoleAdmin struct {
	t     *testing.T
	base  string
	token string
	c     *client.Client
}

func (a *consoleAdmin) put(name string, cfg waitroom.RoomConfig) {
	a.t.Helper()
	if _, _, err := a.c.PutRoom(ctx(a.t), name, cfg); err != nil {
		a.t.Fatalf("PUT room %s: %v", name, err)
	}
}

func (a *consoleAdmin) room(name string) waitroom.Room {
	a.t.Helper()
	rooms, err := a.c.Rooms(ctx(a.t))
	if err != nil {
		a.t.Fatalf("GET /v1/rooms: %v", err)
	}
	for _, r := range rooms {
		if r.Name == name {
			return r
		}
	}
	a.t.Fatalf("GET /v1/rooms lists no room %s", name)
	return waitroom.Room{}
}

// waitRoom polls the room until cond holds.
func (a *consoleAdmin) waitRoom(d time.Duration, what string, cond func(waitroom.Room) bool) waitroom.Room {
	a.t.Helper()
	deadline := time.Now().Add(d)
	for {
		r := a.room("shop") // the room the crowd plays in
		if cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("%s: not within %v (%+v)", what, d, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (a *consoleAdmin) waiting(name string) []waitroom.Session {
	a.t.Helper()
	return listAll(a.t, func(p waitroom.Page) ([]waitroom.Session, string, error) { return a.c.Waiting(ctx(a.t), name, p) })
}

func (a *consoleAdmin) session(id string) waitroom.Session {
	a.t.Helper()
	s, err := a.c.Session(ctx(a.t), "shop", id)
	if err != nil {
		a.t.Fatalf("GET session %s: %v", id, err)
	}
	return s
}

func (a *consoleAdmin) wantStatus(ss []waitroom.Session, want waitroom.Status, why string) {
	a.t.Helper()
	for _, s := range ss {
		if got := a.session(s.ID); got.Status != want {
			a.t.Errorf("#%d is %s, want %s (%s)", got.Ticket, got.Status, want, why)
		}
	}
}

// audit returns the room's newest audit entries, newest first (at least
// one).
func (a *consoleAdmin) audit(name string) []waitroom.AuditEntry {
	a.t.Helper()
	var out struct {
		Entries []waitroom.AuditEntry `json:"entries"`
	}
	a.getJSON("/v1/rooms/"+name+"/audit?limit=20", &out)
	if len(out.Entries) == 0 {
		a.t.Fatalf("the audit log of %s is empty", name)
	}
	return out.Entries
}

func (a *consoleAdmin) getJSON(path string, v any) {
	a.t.Helper()
	req, _ := http.NewRequestWithContext(ctx(a.t), "GET", a.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+a.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		a.t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		a.t.Fatalf("GET %s: %v", path, err)
	}
}

func sameSessions(a, b []waitroom.Session) bool {
	return slices.EqualFunc(a, b, func(x, y waitroom.Session) bool {
		return x.ID == y.ID && x.Status == y.Status && x.Position == y.Position
	})
}

// consoleCrowd is a `waitroom load` child process.
type consoleCrowd struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

// startCrowd plays a crowd on room shop: 80 people arriving 8 a second,
// each staying about 1.5 s once admitted, a few giving up while they wait.
// It runs until stop (at most a minute).
func startCrowd(t *testing.T, bin, url string) *consoleCrowd {
	t.Helper()
	c := &consoleCrowd{out: new(syncBuffer), exited: make(chan struct{})}
	c.cmd = exec.Command(bin, "load", "--target", url, "--room", "shop", "--users", "80", "--rate", "8",
		"--hold", "1500ms", "--quit", "0.02", "--duration", "60s", "--workers", "1", "--chart", "none")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WAITROOM_") {
			c.cmd.Env = append(c.cmd.Env, kv)
		}
	}
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start waitroom load: %v", err)
	}
	go func() {
		_ = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.exited
	})
	return c
}

// stop interrupts the crowd, as Ctrl-C would, and waits for it to end.
func (c *consoleCrowd) stop(t *testing.T) {
	t.Helper()
	_ = c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("waitroom load did not end within 30s of an interrupt:\n%s", c.out.String())
	}
}

// consoleTab is a headless Chromium tab on the console.
type consoleTab struct {
	*browsertest.Tab
	t *testing.T
}

func newConsoleTab(t *testing.T) *consoleTab {
	t.Helper()
	tab := browsertest.New(t, browsertest.Options{Width: 1100, Height: 900, Quiet: true, StartTimeout: 30 * time.Second})
	tab.EvalTimeout = 5 * time.Second
	tab.Poll = 50 * time.Millisecond
	return &consoleTab{Tab: tab, t: t}
}

func (tb *consoleTab) navigate(url string) {
	tb.t.Helper()
	if err := tb.Do(20*time.Second, chromedp.Navigate(url)); err != nil {
		tb.t.Fatalf("navigate to %s: %v", url, err)
	}
}

// must runs actions, failing the test with what it was doing.
func (tb *consoleTab) must(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := tb.Do(10*time.Second, actions...); err != nil {
		tb.shot("failed")
		tb.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript condition, failing the test if it cannot.
func (tb *consoleTab) eval(expr string) bool {
	tb.t.Helper()
	ok, err := tb.Holds(expr)
	if err != nil {
		tb.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return ok
}

func (tb *consoleTab) evalString(expr string) string {
	tb.t.Helper()
	return browsertest.MustEval[string](tb.Tab, 10*time.Second, expr, chromedp.EvalAwaitPromise)
}

// waitFor evaluates a JavaScript condition until it holds, failing the
// test after d.
func (tb *consoleTab) waitFor(d time.Duration, what, cond string) {
	tb.t.Helper()
	if !tb.WaitUntil(d, cond) {
		tb.shot("failed")
		tb.t.Fatalf("%s: %s did not hold within %v (page: %q; error: %q)", what, cond, d, tb.text("main"), tb.text("#error"))
	}
}

func (tb *consoleTab) text(selector string) string { return tb.Text(selector) }

// click clicks a button once it is enabled: a control is disabled while
// its action runs.
func (tb *consoleTab) click(what, sel string) {
	tb.t.Helper()
	tb.waitFor(10*time.Second, what+": "+sel+" enabled", fmt.Sprintf(`!document.querySelector(%q).disabled && !document.querySelector(%[1]q).hidden`, sel))
	tb.must(what, chromedp.Click(chromedp.CSS(sel)))
}

// confirm waits for the confirmation dialog, checks it spells out want,
// and answers it.
func (tb *consoleTab) confirm(want string, ok bool) {
	tb.t.Helper()
	tb.waitFor(10*time.Second, "the confirmation dialog for "+want, `document.querySelector("#confirm").open`)
	if got := tb.text("#confirm-title") + " " + tb.text("#confirm-text") + " " + tb.text("#confirm-changes"); !strings.Contains(got, want) {
		tb.t.Errorf("the dialog says %q, want it to spell out %q", got, want)
	}
	button := "#confirm-cancel"
	if ok {
		button = "#confirm-ok"
	}
	tb.must("answering the dialog", chromedp.Click(chromedp.CSS(button)))
	tb.waitFor(10*time.Second, "the dialog to close", `!document.querySelector("#confirm").open`)
}

// checkCookie checks the console's cookie: set, HttpOnly, SameSite=Strict.
func (tb *consoleTab) checkCookie(base string) {
	tb.t.Helper()
	res, err := chromedp.Call(tb.Ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/admin/"}})
	if err != nil {
		tb.t.Fatalf("reading cookies: %v", err)
	}
	for _, c := range res.Cookies {
		if c.Name == "waitroom_console" {
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Value == "" {
				tb.t.Errorf("cookie %s: HttpOnly %v, SameSite %q; want HttpOnly, Strict", c.Name, c.HTTPOnly, c.SameSite)
			}
			return
		}
	}
	tb.t.Errorf("no waitroom_console cookie after signing in (cookies: %+v)", res.Cookies)
}

// recordJS is a JavaScript condition: the found session id's record shows
// field with value.
func recordJS(id, field, value string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('#found article[data-session=%q] dl > div')].some(d => d.children[0].textContent === %q && d.children[1].textContent === %q)`, id, field, value)
}

// record returns the fields of the found session id's record.
func (tb *consoleTab) record(id string) map[string]string {
	tb.t.Helper()
	v := tb.evalString(fmt.Sprintf(`JSON.stringify(Object.fromEntries([...document.querySelectorAll('#found article[data-session=%q] dl > div')].map(d => [d.children[0].textContent, d.children[1].textContent])))`, id))
	out := map[string]string{}
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		tb.t.Fatalf("reading the found record: %v", err)
	}
	return out
}

// rowCells returns the cells of a room's row in the rooms table.
func (tb *consoleTab) rowCells(name string) []string {
	tb.t.Helper()
	v := tb.evalString(fmt.Sprintf(`[...(document.querySelector('#rooms-body tr[data-room=%q]') || {children: []}).children].map(c => c.textContent.trim()).join("|")`, name))
	if v == "" {
		return nil
	}
	return strings.Split(v, "|")
}

// rowsMatchAPI waits until every row of the rooms table reads what GET
// /v1/stats answers (the page refreshes every 2 s).
func (tb *consoleTab) rowsMatchAPI(a *consoleAdmin, d time.Duration) {
	tb.t.Helper()
	labels := map[string]string{"open": "Open", "paused": "Paused"} // the states of these rooms
	var want, got []string
	for deadline := time.Now().Add(d); ; {
		var stats struct {
			Rooms []struct {
				Name                string `json:"name"`
				State               string `json:"state"`
				Waiting             int    `json:"waiting"`
				Active              int    `json:"active"`
				Capacity            int    `json:"capacity"`
				JoinsPerMinute      int64  `json:"joins_per_minute"`
				AdmissionsPerMinute int64  `json:"admissions_per_minute"`
			} `json:"rooms"`
		}
		a.getJSON("/v1/stats", &stats)
		want, got = want[:0], got[:0]
		for _, r := range stats.Rooms {
			want = append(want, fmt.Sprintf("%s|%s|%d|%d / %d|%d|%d", r.Name, labels[r.State], r.Waiting, r.Active, r.Capacity, r.JoinsPerMinute, r.AdmissionsPerMinute))
			got = append(got, strings.Join(tb.rowCells(r.Name), "|"))
		}
		if slices.Equal(want, got) && tb.eval(fmt.Sprintf(`document.querySelectorAll("#rooms-body tr").length === %d`, len(want))) {
			return
		}
		if time.Now().After(deadline) {
			tb.shot("failed")
			tb.t.Fatalf("the rooms table reads %q, the API %q", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// consoleSnapshot is what the room view shows: the headline numbers and
// each chart's line.
type consoleSnapshot struct {
	stats  map[string]string
	charts map[string]string
}

func (tb *consoleTab) snapshot() consoleSnapshot {
	tb.t.Helper()
	v := tb.evalString(`JSON.stringify({
		stats: Object.fromEntries(["stat-waiting", "stat-active", "stat-joins", "stat-admissions", "stat-abandons"]
			.map(id => [id, document.getElementById(id).textContent])),
		charts: Object.fromEntries([...document.querySelectorAll("svg[data-series]")]
			.map(s => [s.dataset.series, (s.querySelector("path.line") || {getAttribute: () => ""}).getAttribute("d")])),
	})`)
	var raw struct {
		Stats  map[string]string `json:"stats"`
		Charts map[string]string `json:"charts"`
	}
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		tb.t.Fatalf("reading the room view: %v", err)
	}
	return consoleSnapshot{stats: raw.Stats, charts: raw.Charts}
}

// changedFrom names what differs from an earlier snapshot (a chart
// counts when it has a line that differs).
func (s consoleSnapshot) changedFrom(old consoleSnapshot) map[string]bool {
	out := map[string]bool{}
	for k, v := range s.stats {
		out[k] = v != old.stats[k]
	}
	for k, v := range s.charts {
		out[k] = v != "" && v != old.charts[k]
	}
	return out
}

func (s consoleSnapshot) String() string {
	return fmt.Sprintf("%v %v", s.stats, s.charts)
}

// artifactDir is where screenshots go: "" (none) unless WAITROOM_ARTIFACTS
// is set; testdata/artifacts at the module root when it is 1.
func (tb *consoleTab) artifactDir() string {
	dir := os.Getenv("WAITROOM_ARTIFACTS")
	switch dir {
	case "":
		return ""
	case "1":
		wd, err := os.Getwd()
		if err != nil {
			return ""
		}
		dir = filepath.Join(wd, "..", "..", "testdata", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Errorf("artifacts: %v", err)
		return ""
	}
	return dir
}

// shot saves a screenshot of the whole page as console-<step>.png.
func (tb *consoleTab) shot(step string) {
	tb.save(step, chromedp.FullScreenshot(100))
}

// viewportShot saves what the screen shows as console-<step>.png.
func (tb *consoleTab) viewportShot(step string) {
	tb.save(step, chromedp.CaptureScreenshot())
}

func (tb *consoleTab) save(step string, capture chromedp.Action[[]byte]) {
	dir := tb.artifactDir()
	if dir == "" {
		return
	}
	png, err := tb.Screenshot(10*time.Second, capture)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		tb.t.Errorf("screenshot %s: %v", step, err)
		return
	}
	path := filepath.Join(dir, "console-"+step+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Errorf("screenshot %s: %v", step, err)
		return
	}
	tb.t.Logf("screenshot: %s", path)
}
