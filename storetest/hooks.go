package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// Webhooks: the outbox every change of a room with webhooks writes, and
// the claims, outcomes and dead letters of its deliveries.

func init() {
	suite = append(suite, []struct {
		name string
		fn   func(*fixture)
	}{
		{"HooksPutListDelete", testHooksPutListDelete},
		{"HooksOutbox", testHooksOutbox},
		{"HooksRoomEvents", testHooksRoomEvents},
		{"HooksClaimLease", testHooksClaimLease},
		{"HooksSettle", testHooksSettle},
		{"HooksDeleteRoom", testHooksDeleteRoom},
		{"HooksConcurrentClaims", testHooksConcurrentClaims},
		{"HooksPutDuringJoins", testHooksPutDuringJoins},
		{"HooksRoomClosed", testHooksRoomClosed},
	}...)
}

func hook(room, name string, events ...string) waitroom.Webhook {
	return waitroom.Webhook{Room: room, Name: name, URL: "https://example.com/hooks/" + name, Events: events,
		Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
}

func (f *fixture) putHook(h waitroom.Webhook, now time.Time) waitroom.Webhook {
	f.t.Helper()
	got, _, err := f.s.PutWebhook(f.ctx, h, now)
	if err != nil {
		f.t.Fatalf("PutWebhook(%s/%s) error = %v", h.Room, h.Name, err)
	}
	return got
}

// claim claims up to 1,000 deliveries due at now with a 10s lease.
func (f *fixture) claim(room string, now time.Time) []waitroom.Delivery {
	f.t.Helper()
	ds, err := f.s.ClaimDeliveries(f.ctx, room, "", now, 10*sec, 1000)
	if err != nil {
		f.t.Fatalf("ClaimDeliveries(%s, %s) error = %v", room, rel(now), err)
	}
	return ds
}

func (f *fixture) settle(room string, now time.Time, outs ...waitroom.DeliveryOutcome) {
	f.t.Helper()
	if err := f.s.SettleDeliveries(f.ctx, room, outs, now); err != nil {
		f.t.Fatalf("SettleDeliveries(%s) error = %v", room, err)
	}
}

// byHook returns, for each webhook, the deliveries' "type ticket" in the
// order claimed.
func byHook(ds []waitroom.Delivery) map[string][]string {
	out := map[string][]string{}
	for _, d := range ds {
		var s waitroom.HookSession
		_ = json.Unmarshal(d.Message.Data, &s)
		out[d.Hook] = append(out[d.Hook], fmt.Sprintf("%s %d", d.Message.Type, s.Ticket))
	}
	return out
}

func testHooksPutListDelete(f *fixture) {
	h := f.s
	_, _, err := h.PutWebhook(f.ctx, hook("nope", "a", "*"), at(0))
	wantCode(f.t, "PutWebhook on an unknown room", err, waitroom.CodeRoomNotFound)
	f.put("r", quiet(1), at(0))
	bad := hook("r", "a", "session.teleported")
	_, _, err = h.PutWebhook(f.ctx, bad, at(0))
	wantCode(f.t, "PutWebhook with an unknown event type", err, waitroom.CodeInvalidRequest)

	a, created, err := h.PutWebhook(f.ctx, hook("r", "a", "*"), at(sec))
	if err != nil || !created || !a.CreatedAt.Equal(at(sec)) || !a.UpdatedAt.Equal(at(sec)) {
		f.t.Fatalf("PutWebhook a = %+v, created %v, %v; want created at base+1s", a, created, err)
	}
	a2 := hook("r", "a", waitroom.HookSessionEnded)
	a2.URL = "http://example.org/x?y=1"
	got, created, err := h.PutWebhook(f.ctx, a2, at(2*sec))
	if err != nil || created || !got.CreatedAt.Equal(at(sec)) || !got.UpdatedAt.Equal(at(2*sec)) || got.URL != a2.URL {
		f.t.Fatalf("replacing a = %+v, created %v, %v; want replaced, created_at kept", got, created, err)
	}
	f.putHook(hook("r", "0first", waitroom.HookRoomPaused), at(2*sec))
	list, err := h.Webhooks(f.ctx, "r")
	if err != nil || len(list) != 2 || list[0].Name != "0first" || list[1].Name != "a" ||
		!slices.Equal(list[1].Events, []string{waitroom.HookSessionEnded}) || list[1].Secret != a2.Secret || list[1].Room != "r" {
		f.t.Fatalf("Webhooks = %+v, %v; want 0first then a, as stored", list, err)
	}
	rooms, err := h.HookRooms(f.ctx)
	if err != nil || !slices.Equal(rooms, []string{"r"}) {
		f.t.Fatalf("HookRooms = %v, %v; want [r]", rooms, err)
	}
	for i := range waitroom.MaxWebhooks - 2 {
		f.putHook(hook("r", fmt.Sprintf("n%02d", i), "*"), at(3*sec))
	}
	_, _, err = h.PutWebhook(f.ctx, hook("r", "onetoomany", "*"), at(3*sec))
	wantCode(f.t, fmt.Sprintf("webhook %d", waitroom.MaxWebhooks+1), err, waitroom.CodeInvalidRequest)
	if _, created, err := h.PutWebhook(f.ctx, hook("r", "a", "*"), at(3*sec)); err != nil || created {
		f.t.Fatalf("replacing a webhook at the cap: created %v, %v; want replaced", created, err)
	}

	wantCode(f.t, "DeleteWebhook unknown", h.DeleteWebhook(f.ctx, "r", "zz"), waitroom.CodeNotFound)
	if err := h.DeleteWebhook(f.ctx, "r", "a"); err != nil {
		f.t.Fatalf("DeleteWebhook(a) = %v", err)
	}
	list, _ = h.Webhooks(f.ctx, "r")
	if len(list) != waitroom.MaxWebhooks-1 || slices.ContainsFunc(list, func(w waitroom.Webhook) bool { return w.Name == "a" }) {
		f.t.Fatalf("after deleting a: %d webhooks", len(list))
	}
	for _, w := range list {
		if err := h.DeleteWebhook(f.ctx, "r", w.Name); err != nil {
			f.t.Fatalf("DeleteWebhook(%s) = %v", w.Name, err)
		}
	}
	if rooms, _ := h.HookRooms(f.ctx); len(rooms) != 0 {
		f.t.Fatalf("HookRooms after deleting every webhook = %v, want none", rooms)
	}
	_, _, err = h.DeadLetters(f.ctx, "r", waitroom.Page{After: "not a cursor"})
	wantCode(f.t, "DeadLetters with a bad cursor", err, waitroom.CodeInvalidRequest)
	if list, err := h.Webhooks(f.ctx, "unknown"); err != nil || len(list) != 0 {
		f.t.Fatalf("Webhooks of an unknown room = %v, %v; want none", list, err)
	}
}

func testHooksOutbox(f *fixture) {
	f.put("r", quiet(1), at(0))
	before := f.join("r", "", at(sec)) // before any webhook: not sent
	f.leave("r", before.ID, waitroom.ReasonLeft, at(sec))
	f.putHook(hook("r", "all", "*"), at(2*sec))
	f.putHook(hook("r", "ends", waitroom.HookSessionEnded), at(2*sec))
	if ds := f.claim("r", at(2*sec)); len(ds) != 0 {
		f.t.Fatalf("claim before any change after the webhooks: %d deliveries, want 0", len(ds))
	}
	s2 := f.join("r", "k2", at(3*sec))
	s3 := f.join("r", "", at(3*sec))
	f.leave("r", s2.ID, waitroom.ReasonLeft, at(4*sec))
	if ds := f.claim("r", at(2*sec)); len(ds) != 0 {
		f.t.Fatalf("claim at base+2s: %d deliveries of changes at 3s and 4s, want none due", len(ds))
	}
	// Claimed per webhook: the one named only.
	ends, err := f.s.ClaimDeliveries(f.ctx, "r", "ends", at(5*sec), 10*sec, 1000)
	if err != nil || len(ends) != 1 || ends[0].Hook != "ends" || ends[0].Message.Type != waitroom.HookSessionEnded {
		f.t.Fatalf("claim of webhook ends = %+v, %v; want its one session.ended", ends, err)
	}
	ds := append(f.claim("r", at(5*sec)), ends...)
	want := map[string][]string{
		"all": {
			fmt.Sprintf("session.joined %d", s2.Ticket), fmt.Sprintf("session.admitted %d", s2.Ticket),
			fmt.Sprintf("session.joined %d", s3.Ticket),
			fmt.Sprintf("session.ended %d", s2.Ticket), fmt.Sprintf("session.admitted %d", s3.Ticket),
		},
		"ends": {fmt.Sprintf("session.ended %d", s2.Ticket)},
	}
	got := byHook(ds)
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			f.t.Fatalf("deliveries to %s = %v, want %v", name, got[name], w)
		}
	}
	ids := map[string]string{}
	for _, d := range ds {
		if d.Room != "r" || d.Message.ID == "" || d.Attempts != 0 {
			f.t.Fatalf("delivery %+v: want room r, an id, no attempts", d)
		}
		key := d.Hook + " " + d.Message.ID
		if _, dup := ids[key]; dup {
			f.t.Fatalf("message id %s twice for %s", d.Message.ID, d.Hook)
		}
		ids[key] = d.Message.Type
	}
	// One message, one id, whichever endpoint it goes to.
	for _, d := range ds {
		if d.Hook == "ends" && ids["all "+d.Message.ID] != waitroom.HookSessionEnded {
			f.t.Fatalf("the ended message %s to ends is %q to all", d.Message.ID, ids["all "+d.Message.ID])
		}
	}
	var ended waitroom.HookSession
	for _, d := range ds {
		if d.Hook == "ends" {
			if err := json.Unmarshal(d.Message.Data, &ended); err != nil {
				f.t.Fatalf("ended data %s: %v", d.Message.Data, err)
			}
			if !d.Message.At.Equal(at(4 * sec)) {
				f.t.Fatalf("ended message at %s, want base+4s", rel(d.Message.At))
			}
			body := d.Message.Body()
			if !strings.Contains(string(body), `"type":"session.ended"`) {
				f.t.Fatalf("body %s", body)
			}
		}
	}
	if ended.Room != "r" || ended.Session != s2.ID || ended.Key != "k2" || ended.Status != waitroom.StatusLeft ||
		ended.Reason != waitroom.ReasonLeft || ended.From != waitroom.StatusActive || ended.EndedAt == nil || !ended.EndedAt.Equal(at(4*sec)) {
		f.t.Fatalf("session.ended data = %+v, want s2 left from active at base+4s", ended)
	}
}

func testHooksRoomEvents(f *fixture) {
	cfg := stocked(5, 1)
	f.put("r", cfg, at(0))
	f.putHook(hook("r", "room", waitroom.HookRoomPaused, waitroom.HookRoomResumed, waitroom.HookRoomSoldOut), at(0))
	cfg.Paused = true
	f.put("r", cfg, at(sec))
	f.put("r", cfg, at(2*sec)) // still paused: no second room.paused
	cfg.Paused = false
	f.put("r", cfg, at(3*sec))
	f.join("r", "", at(4*sec))
	f.join("r", "", at(4*sec))
	f.stock("r", waitroom.StockSold, 1, "", at(5*sec))
	ds := f.claim("r", at(6*sec))
	var types []string
	for _, d := range ds {
		types = append(types, d.Message.Type)
	}
	want := []string{waitroom.HookRoomPaused, waitroom.HookRoomResumed, waitroom.HookRoomSoldOut}
	if !slices.Equal(types, want) {
		f.t.Fatalf("room events = %v, want %v", types, want)
	}
	var sold waitroom.HookRoom
	_ = json.Unmarshal(ds[2].Message.Data, &sold)
	if sold.Room != "r" || sold.Sold != 1 {
		f.t.Fatalf("room.sold_out data = %+v, want room r, 1 sold", sold)
	}

	f.put("d", scheduled(10, at(20*sec)), at(10*sec))
	f.putHook(hook("d", "draw", waitroom.HookDrawCompleted, waitroom.HookSessionJoined), at(10*sec))
	f.join("d", "", at(11*sec))
	f.join("d", "", at(12*sec))
	f.sweep("d", at(21*sec))
	got := byHook(f.claim("d", at(22*sec)))["draw"]
	if len(got) != 3 || !strings.HasPrefix(got[0], "session.joined") || !strings.HasPrefix(got[1], "session.joined") || got[2] != "draw.completed 0" {
		f.t.Fatalf("scheduled room's events = %v, want two joins then draw.completed", got)
	}
}

func testHooksClaimLease(f *fixture) {
	f.put("r", quiet(1), at(0))
	f.putHook(hook("r", "a", waitroom.HookSessionJoined), at(0))
	f.joinN("r", 3, at(sec))
	h := f.s
	first, err := h.ClaimDeliveries(f.ctx, "r", "", at(2*sec), 10*sec, 2)
	if err != nil || len(first) != 2 {
		f.t.Fatalf("claim of 2 = %d, %v", len(first), err)
	}
	rest := f.claim("r", at(2*sec))
	if len(rest) != 1 || rest[0].Message.ID == first[0].Message.ID || rest[0].Message.ID == first[1].Message.ID {
		f.t.Fatalf("second claim = %d deliveries, want the third only", len(rest))
	}
	if again := f.claim("r", at(11*sec)); len(again) != 0 {
		f.t.Fatalf("claim while the leases run: %d deliveries, want 0", len(again))
	}
	// The leases lapse at base+12s: whoever claims then takes them over.
	again := f.claim("r", at(12*sec))
	if len(again) != 3 {
		f.t.Fatalf("claim after the leases lapsed = %d deliveries, want all 3 again", len(again))
	}
}

func testHooksSettle(f *fixture) {
	f.put("r", quiet(1), at(0))
	f.putHook(hook("r", "a", waitroom.HookSessionJoined), at(0))
	f.joinN("r", 3, at(sec))
	ds := f.claim("r", at(2*sec))
	if len(ds) != 3 {
		f.t.Fatalf("claimed %d, want 3", len(ds))
	}
	ok, retry, dead := ds[0], ds[1], ds[2]
	f.settle("r", at(2*sec),
		waitroom.DeliveryOutcome{Hook: "a", ID: ok.Message.ID, OK: true},
		waitroom.DeliveryOutcome{Hook: "a", ID: retry.Message.ID, Error: "503 Service Unavailable", Next: at(7 * sec)},
		waitroom.DeliveryOutcome{Hook: "a", ID: dead.Message.ID, Error: "connection refused", Dead: true},
		waitroom.DeliveryOutcome{Hook: "a", ID: "msg_unknown", OK: true},
	)
	st, err := f.s.HookStats(f.ctx, "r")
	a := st["a"]
	if err != nil || a.Delivered != 1 || a.Failed != 2 || a.Pending != 1 || a.Dead != 1 || a.LastError != "connection refused" ||
		!a.LastErrorAt.Equal(at(2*sec)) || !a.LastDelivered.Equal(at(2*sec)) {
		f.t.Fatalf("HookStats = %+v, %v; want 1 delivered, 2 failed, 1 pending, 1 dead, last error connection refused at 2s", a, err)
	}
	if got := f.claim("r", at(6*sec)); len(got) != 0 {
		f.t.Fatalf("claim before the retry is due: %d, want 0", len(got))
	}
	got := f.claim("r", at(7*sec))
	if len(got) != 1 || got[0].Message.ID != retry.Message.ID || got[0].Attempts != 1 || got[0].LastError != "503 Service Unavailable" {
		f.t.Fatalf("claim at the retry = %+v, want the retried delivery with 1 attempt and its error", got)
	}
	letters, next, err := f.s.DeadLetters(f.ctx, "r", waitroom.Page{})
	if err != nil || next != "" || len(letters) != 1 || letters[0].Message.ID != dead.Message.ID || !letters[0].DeadAt.Equal(at(2*sec)) ||
		letters[0].LastError != "connection refused" || letters[0].Attempts != 1 || letters[0].Hook != "a" || letters[0].Message.Type != waitroom.HookSessionJoined {
		f.t.Fatalf("DeadLetters = %+v, %q, %v; want the dead one", letters, next, err)
	}
	// Replay: pending again at once, attempts afresh.
	n, err := f.s.ReplayDeadLetters(f.ctx, "r", []string{dead.Message.ID}, at(8*sec))
	if err != nil || n != 1 {
		f.t.Fatalf("ReplayDeadLetters = %d, %v; want 1", n, err)
	}
	if letters, _, _ := f.s.DeadLetters(f.ctx, "r", waitroom.Page{}); len(letters) != 0 {
		f.t.Fatalf("dead letters after the replay: %d, want 0", len(letters))
	}
	got = f.claim("r", at(8*sec))
	if len(got) != 1 || got[0].Message.ID != dead.Message.ID || got[0].Attempts != 0 || string(got[0].Message.Data) != string(dead.Message.Data) ||
		!got[0].Replayed.Equal(at(8*sec)) || !got[0].RetrySince().Equal(at(8*sec)) || !got[0].Message.At.Equal(dead.Message.At) {
		f.t.Fatalf("claim after the replay = %+v, want the replayed delivery, 0 attempts, same message, replayed at base+8s", got)
	}
	// Replay all, with paging of several letters.
	f.joinN("r", 3, at(9*sec))
	more := f.claim("r", at(10*sec))
	var outs []waitroom.DeliveryOutcome
	for _, d := range append(more, got...) {
		outs = append(outs, waitroom.DeliveryOutcome{Hook: d.Hook, ID: d.Message.ID, Error: "gone", Dead: true})
	}
	f.settle("r", at(10*sec), outs...)
	var all []waitroom.Delivery
	after := ""
	for range 10 {
		page, next, err := f.s.DeadLetters(f.ctx, "r", waitroom.Page{After: after, Limit: 3})
		if err != nil {
			f.t.Fatalf("DeadLetters page: %v", err)
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		after = next
	}
	if len(all) != 4 {
		f.t.Fatalf("dead letters in pages of 3: %d, want 4", len(all))
	}
	n, err = f.s.ReplayDeadLetters(f.ctx, "r", nil, at(11*sec))
	if err != nil || n != 4 || len(f.claim("r", at(11*sec))) != 4 {
		f.t.Fatalf("replay all = %d, %v; want 4, all claimable", n, err)
	}
}

func testHooksDeleteRoom(f *fixture) {
	f.put("r", quiet(1), at(0))
	f.putHook(hook("r", "a", "*"), at(0))
	f.join("r", "", at(sec))
	if err := f.s.DeleteRoom(f.ctx, "r", true, at(2*sec)); err != nil {
		f.t.Fatalf("DeleteRoom = %v", err)
	}
	f.put("r", quiet(1), at(3*sec))
	f.join("r", "", at(3*sec))
	if list, err := f.s.Webhooks(f.ctx, "r"); err != nil || len(list) != 0 {
		f.t.Fatalf("webhooks after the room was deleted and made again: %+v, %v; want none", list, err)
	}
	if ds := f.claim("r", at(4*sec)); len(ds) != 0 {
		f.t.Fatalf("deliveries after the room was deleted: %d, want none", len(ds))
	}
	if rooms, _ := f.s.HookRooms(f.ctx); len(rooms) != 0 {
		f.t.Fatalf("HookRooms = %v, want none", rooms)
	}
	// A webhook deleted takes its deliveries with it.
	f.putHook(hook("r", "b", "*"), at(5*sec))
	f.join("r", "", at(5*sec))
	if err := f.s.DeleteWebhook(f.ctx, "r", "b"); err != nil {
		f.t.Fatalf("DeleteWebhook = %v", err)
	}
	if ds := f.claim("r", at(6*sec)); len(ds) != 0 {
		f.t.Fatalf("deliveries of a deleted webhook: %d, want none", len(ds))
	}
}

func testHooksConcurrentClaims(f *fixture) {
	f.put("r", quiet(0), at(0))
	f.putHook(hook("r", "a", waitroom.HookSessionJoined), at(0))
	const joins = 200
	f.joinN("r", joins, at(sec))
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ds, err := f.s.ClaimDeliveries(f.ctx, "r", "", at(2*sec), time.Minute, 7)
				if err != nil || len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					seen[d.Message.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != joins {
		f.t.Fatalf("concurrent claims saw %d deliveries, want %d", len(seen), joins)
	}
	for id, n := range seen {
		if n != 1 {
			f.t.Fatalf("delivery %s claimed %d times, want once", id, n)
		}
	}
}

// testHooksPutDuringJoins puts webhooks while joins stream into the room
// (a store that wrote the put in the joins' commit and waited on them
// there would hang); every join after a put's return is sent to it.
func testHooksPutDuringJoins(f *fixture) {
	f.put("r", quiet(0), at(0))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var joined sync.Map
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s, err := f.s.Join(f.ctx, "r", "", at(sec))
				if err != nil {
					f.t.Errorf("join %d of worker %d: %v", i, w, err)
					return
				}
				joined.Store(s.ID, true)
			}
		}()
	}
	done := make(chan error, 1)
	go func() {
		for i := range 40 {
			h := hook("r", fmt.Sprintf("w%d", i%4), waitroom.HookSessionJoined)
			if _, _, err := f.s.PutWebhook(f.ctx, h, at(sec)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			f.t.Errorf("PutWebhook beside joins: %v", err)
		}
	case <-time.After(30 * time.Second):
		f.t.Errorf("40 PutWebhook calls beside joins did not finish in 30s: the store hung")
	}
	close(stop)
	wg.Wait()
	// A join after the puts reaches every webhook.
	s := f.join("r", "", at(2*sec))
	got := map[string]bool{}
	for range 100 {
		ds := f.claim("r", at(3*sec))
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			var hs waitroom.HookSession
			_ = json.Unmarshal(d.Message.Data, &hs)
			if hs.Session == s.ID {
				got[d.Hook] = true
			}
		}
	}
	if len(got) != 4 {
		f.t.Fatalf("the join after the puts reached %d webhooks, want all 4: %v", len(got), got)
	}
}

// testHooksRoomClosed: the first operation at or after closes_at (here a
// presence read) tells room.closed, once; a later closes_at is told again
// when it passes.
func testHooksRoomClosed(f *fixture) {
	cfg := quiet(1)
	cfg.ClosesAt = at(10 * sec)
	f.put("c", cfg, at(0))
	f.putHook(hook("c", "closed", waitroom.HookRoomClosed), at(0))
	s := f.join("c", "", at(sec))
	f.sweep("c", at(9*sec))
	if ds := f.claim("c", at(9*sec)); len(ds) != 0 {
		f.t.Fatalf("before closes_at: %d deliveries, want none", len(ds))
	}
	f.session("c", s.ID, at(10500*msec))
	f.sweep("c", at(11*sec))
	f.session("c", s.ID, at(12*sec))
	ds := f.claim("c", at(13*sec))
	if len(ds) != 1 || ds[0].Message.Type != waitroom.HookRoomClosed || !ds[0].Message.At.Equal(at(10500*msec)) {
		f.t.Fatalf("after closes_at: %+v, want one room.closed at base+10.5s", ds)
	}
	var d waitroom.HookRoom
	if err := json.Unmarshal(ds[0].Message.Data, &d); err != nil || d.Room != "c" || d.Active != 1 {
		f.t.Fatalf("room.closed data %s: %v", ds[0].Message.Data, err)
	}
	f.settle("c", at(13*sec), waitroom.DeliveryOutcome{Hook: "closed", ID: ds[0].Message.ID, OK: true})
	cfg.ClosesAt = at(20 * sec)
	f.put("c", cfg, at(14*sec))
	f.sweep("c", at(19*sec))
	if ds := f.claim("c", at(19*sec)); len(ds) != 0 {
		f.t.Fatalf("before the new closes_at: %d deliveries, want none", len(ds))
	}
	f.sweep("c", at(21*sec))
	f.sweep("c", at(22*sec))
	if ds := f.claim("c", at(23*sec)); len(ds) != 1 || ds[0].Message.Type != waitroom.HookRoomClosed || !ds[0].Message.At.Equal(at(21*sec)) {
		f.t.Fatalf("after the new closes_at: %+v, want one room.closed at base+21s", ds)
	}
}
