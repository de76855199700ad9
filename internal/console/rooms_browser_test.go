package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom"
)

// TestRoomsInBrowser drives the safe changes of a live room in a real
// browser against the real API (httpapi over a memstore): a room created
// from the list (and a name taken refused), paused and resumed with the
// routes that change nothing else, a configuration saved as a PATCH of the
// fields changed, the 412 of a room another operator changed while the
// form was open (nothing saved, the room reloaded, the operator told), and
// the room deleted with its live sessions, the dialog saying so. Each
// change is in the store, and audited by the API as the console's.
func TestRoomsInBrowser(t *testing.T) {
	store, srv := newLiveSite(t)
	ctx := context.Background()
	tb := newTab(t)
	const patience = 20 * time.Second // a hang guard on a loaded machine, never a verdict on speed
	tb.EvalTimeout = patience
	wait := func(what, cond string) {
		t.Helper()
		if !tb.WaitUntil(patience, cond) {
			tb.shot("failed")
			t.Fatalf("%s: %s did not hold within 20s (error: %q; notice: %q)", what, cond, tb.text("#error"), tb.text("#notice"))
		}
	}
	confirm := func(want string) {
		t.Helper()
		wait("the dialog for "+want, `document.querySelector("#confirm").open`)
		if got := tb.text("#confirm-title") + " " + tb.text("#confirm-text") + " " + tb.text("#confirm-changes") + " " + tb.text("#confirm-ok"); !strings.Contains(got, want) {
			t.Errorf("the dialog says %q, want it to spell out %q", got, want)
		}
		tb.must("confirming", chromedp.Click(chromedp.CSS("#confirm-ok")))
		wait("the dialog to close", `!document.querySelector("#confirm").open`)
	}
	click := func(what, sel string) {
		t.Helper()
		wait(what+": "+sel+" shown and enabled", fmt.Sprintf(`(b => b && !b.disabled && !b.hidden)(document.querySelector(%q))`, sel))
		tb.must(what, chromedp.Click(chromedp.CSS(sel)))
	}
	room := func() waitroom.Room {
		t.Helper()
		r, err := store.Room(ctx, "launch")
		if err != nil {
			t.Fatalf("Room(launch): %v", err)
		}
		return r
	}
	waitStore := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(patience)
		for !ok() {
			if time.Now().After(deadline) {
				tb.shot("failed")
				t.Fatalf("%s: not so in the store within 20s (error: %q)", what, tb.text("#error"))
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
	audited := func(action string) waitroom.AuditEntry {
		t.Helper()
		var found waitroom.AuditEntry
		waitStore("an audit entry "+action, func() bool {
			entries, _, err := store.Audit(ctx, "launch", "", waitroom.Page{})
			if err != nil || len(entries) == 0 {
				return false
			}
			found = entries[0] // newest first
			return found.Action == action
		})
		if found.Actor != waitroom.AuditActorConsole {
			t.Errorf("the %s entry's actor is %q, want console", action, found.Actor)
		}
		return found
	}

	tb.must("opening the console", chromedp.Navigate(srv.URL+"/admin/"))
	wait("the sign-in form", `!document.querySelector("#view-signin").hidden && document.activeElement.id === "token"`)
	tb.must("signing in", chromedp.SendKeys(chromedp.CSS("#token"), token+"\n"))
	wait("the rooms table", `document.querySelector('#rooms-body tr[data-room="demo"]')`)

	// Create: a name taken is refused before anything is sent.
	tb.must("the name of a room that exists", chromedp.Evaluate[chromedp.Void](`document.querySelector("#create-name").value = "demo"`))
	click("create demo", "#create")
	wait("the refusal", `!document.querySelector("#error-box").hidden`)
	if got := tb.text("#error"); !strings.Contains(got, "already") {
		t.Errorf("creating demo again: #error reads %q, want it to say the room exists", got)
	}
	if ok, _ := tb.eval(`document.querySelector("#confirm").open`); ok {
		t.Errorf("a dialog opened to create a room that exists")
	}
	tb.must("a new room, paused", chromedp.Evaluate[chromedp.Void](`(() => {
		document.querySelector("#create-name").value = "launch";
		document.querySelector("#create-capacity").value = "5";
		document.querySelector("#create-paused").checked = true;
	})()`))
	click("create launch", "#create")
	confirm("Create room launch?")
	wait("the new room's view", `location.hash === "#/rooms/launch" && document.querySelector("#live-status").textContent === "Live."`)
	wait("the creation notice", `document.querySelector("#notice").textContent.includes("launch is created")`)
	if r := room(); r.Capacity != 5 || !r.Paused || r.Mode != waitroom.ModeAuto || r.ActiveTimeout != waitroom.DefaultConfig().ActiveTimeout {
		t.Errorf("the room created: %+v, want capacity 5, paused, the rest defaults", r.RoomConfig)
	}
	audited(waitroom.AuditConfig)

	// Give it an inventory and a target from elsewhere (the API, say):
	// pause and resume keep them.
	cfg := room().RoomConfig
	inv := int64(100)
	cfg.Inventory, cfg.TargetURL = &inv, "https://shop.example/checkout"
	if _, _, err := store.PutRoom(ctx, "launch", cfg, time.Now()); err != nil {
		t.Fatal(err)
	}
	wait("the inventory shown", `!document.querySelector("#stock").hidden`)
	click("resume", "#resume")
	confirm("Resume room launch?")
	waitStore("resumed", func() bool { return !room().Paused })
	cfg.Paused = false
	if r := room(); !r.RoomConfig.Equal(cfg) {
		t.Errorf("after resume: %+v, want %+v", r.RoomConfig, cfg)
	}
	audited(waitroom.AuditResume)
	click("pause", "#pause")
	confirm("Pause room launch?")
	waitStore("paused", func() bool { return room().Paused })
	cfg.Paused = true
	if r := room(); !r.RoomConfig.Equal(cfg) {
		t.Errorf("after pause: %+v, want %+v", r.RoomConfig, cfg)
	}
	audited(waitroom.AuditPause)
	wait("the resume button", `!document.querySelector("#resume").hidden`)

	// Edit: a PATCH of the capacity alone keeps the rest.
	click("edit", "#edit")
	tb.must("capacity 6", chromedp.Evaluate[chromedp.Void](`document.querySelector("#cfg-capacity").value = "6"`))
	click("save", "#config-save")
	confirm("capacity: 5 → 6")
	waitStore("capacity 6", func() bool { return room().Capacity == 6 })
	cfg.Capacity = 6
	if r := room(); !r.RoomConfig.Equal(cfg) {
		t.Errorf("after the edit: %+v, want %+v", r.RoomConfig, cfg)
	}
	if e := audited(waitroom.AuditConfig); !strings.Contains(string(e.Detail), `"capacity":[5,6]`) {
		t.Errorf("the edit's audit detail is %s, want capacity 5 → 6", e.Detail)
	}
	wait("the form to close", `document.querySelector("#config-form").hidden`)

	// Two operators: while this one's form is open, another changes the
	// room. Saving then changes nothing, says why and shows the room anew.
	click("edit again", "#edit")
	wait("the form", `!document.querySelector("#config-form").hidden && document.querySelector("#cfg-capacity").value === "6"`)
	other := room().RoomConfig
	other.TargetURL = "https://shop.example/other-checkout"
	if _, err := store.UpdateRoom(ctx, "launch", other, room().Revision, time.Now()); err != nil {
		t.Fatal(err)
	}
	// The page hears of it (its live stream) while the form stays as it
	// was opened: the save must not take the news as its own base.
	wait("the other's change shown", `document.querySelector("#room-details").textContent.includes("other-checkout")`)
	tb.must("capacity 7", chromedp.Evaluate[chromedp.Void](`document.querySelector("#cfg-capacity").value = "7"`))
	click("save over the other's change", "#config-save")
	confirm("capacity: 6 → 7")
	wait("the 412 message", `!document.querySelector("#error-box").hidden`)
	if got := tb.text("#error"); !strings.Contains(got, "changed by someone else") || !strings.Contains(got, "nothing was saved") {
		t.Errorf("after the 412: #error reads %q, want it to say the room changed and nothing was saved", got)
	}
	if r := room(); r.Capacity != 6 || r.TargetURL != other.TargetURL {
		t.Errorf("after the 412 the room is %+v, want the other operator's change alone", r.RoomConfig)
	}
	wait("the form showing the room as it is", `!document.querySelector("#config-form").hidden && document.querySelector("#cfg-target_url").value === "https://shop.example/other-checkout" && document.querySelector("#cfg-capacity").value === "6"`)
	// Saved again from what it now shows, the change goes through and
	// keeps the other operator's.
	tb.must("capacity 7 again", chromedp.Evaluate[chromedp.Void](`document.querySelector("#cfg-capacity").value = "7"`))
	click("save again", "#config-save")
	confirm("capacity: 6 → 7")
	waitStore("capacity 7", func() bool { return room().Capacity == 7 })
	if r := room(); r.TargetURL != other.TargetURL || r.Inventory == nil || *r.Inventory != 100 {
		t.Errorf("after saving again: %+v, want the other operator's target and the inventory kept", r.RoomConfig)
	}

	// Delete, with people in the room: the dialog says how many and that
	// their sessions end.
	for range 2 {
		if _, err := store.Join(ctx, "launch", "", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// The page reads the room afresh (its stream would tell it within a
	// second or so).
	tb.must("reload the room", chromedp.Evaluate[chromedp.Void](`location.reload()`))
	wait("the live room view again", `location.hash === "#/rooms/launch" && document.querySelector("#live-status").textContent === "Live."`)
	click("delete", "#delete-room")
	wait("the delete dialog", `document.querySelector("#confirm").open`)
	if got := tb.text("#confirm-text"); !strings.Contains(got, "2 people are in this room") || !strings.Contains(got, "ends all their sessions") {
		t.Errorf("the delete dialog says %q, want the 2 people and that their sessions end", got)
	}
	confirm("Delete and end 2 sessions")
	wait("the rooms list", `location.hash === "#/rooms" && !document.querySelector("#view-rooms").hidden`)
	wait("the delete notice", `document.querySelector("#notice").textContent.includes("launch is deleted")`)
	wait("the room gone from the list", `!document.querySelector('#rooms-body tr[data-room="launch"]')`)
	if _, err := store.Room(ctx, "launch"); waitroom.ErrorCode(err) != waitroom.CodeRoomNotFound {
		t.Errorf("after the delete: Room error = %v, want room_not_found", err)
	}
	if ok, _ := tb.eval(`document.querySelector("#error-box").hidden`); !ok {
		t.Errorf("an error is shown after the delete: %q", tb.text("#error"))
	}

	for _, p := range tb.ConsoleProblems() {
		// The 412 is the point; the 401 is the check whether the page is
		// signed in, before it is.
		if strings.Contains(p, "status of 412") || (strings.Contains(p, "status of 401") && strings.Contains(p, "/admin/api/session")) {
			continue
		}
		t.Errorf("browser console: %s", p)
	}
}
