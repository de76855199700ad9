package storetest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
)

func testPutRoomCreateReplace(f *fixture) {
	cfg := quiet(7)
	r, created, err := f.s.PutRoom(f.ctx, "lobby", cfg, at(0))
	if err != nil {
		f.t.Fatalf("PutRoom(new) error = %v", err)
	}
	if !created {
		f.t.Errorf("PutRoom(new) created = false, want true")
	}
	want := waitroom.Room{Name: "lobby", RoomConfig: cfg}
	if !r.Equal(want) {
		f.t.Errorf("PutRoom(new) = %+v, want %+v", r, want)
	}
	if got := f.room("lobby"); !got.Equal(want) {
		f.t.Errorf("Room after create = %+v, want %+v", got, want)
	}

	f.join("lobby", "", at(sec))
	cfg2 := waitroom.RoomConfig{
		Mode: waitroom.ModeManual, Capacity: 3, RatePerMinute: 60,
		ActiveTimeout: dur(90 * sec), MaxSession: dur(time.Hour), WaitingTimeout: dur(20 * sec),
		Grace: 0, Paused: true,
	}
	r, created, err = f.s.PutRoom(f.ctx, "lobby", cfg2, at(2*sec))
	if err != nil {
		f.t.Fatalf("PutRoom(existing) error = %v", err)
	}
	if created {
		f.t.Errorf("PutRoom(existing) created = true, want false")
	}
	want = waitroom.Room{Name: "lobby", RoomConfig: cfg2, Active: 1, LastTicket: 1, Admissions: 1}
	if !r.Equal(want) {
		f.t.Errorf("PutRoom(existing) = %+v, want %+v (config replaced, sessions kept)", r, want)
	}
	if got := f.room("lobby"); !got.Equal(want) {
		f.t.Errorf("Room after replace = %+v, want %+v", got, want)
	}
}

func testPutRoomDefaults(f *fixture) {
	r, created, err := f.s.PutRoom(f.ctx, waitroom.DefaultRoom, waitroom.DefaultConfig(), at(0))
	if err != nil || !created {
		f.t.Fatalf("PutRoom(default config) = %v, %v; want created", created, err)
	}
	want := waitroom.Room{Name: waitroom.DefaultRoom, RoomConfig: waitroom.DefaultConfig()}
	if !r.Equal(want) {
		f.t.Errorf("PutRoom = %+v, want %+v", r, want)
	}
	if got := f.room(waitroom.DefaultRoom); !got.Equal(want) {
		f.t.Errorf("Room = %+v, want %+v", got, want)
	}
	// A session joins at once under the defaults and reports the default capacity.
	s := f.join(waitroom.DefaultRoom, "", at(sec))
	if s.Status != waitroom.StatusActive || s.Capacity != 100 || s.Active != 1 || s.Waiting != 0 {
		f.t.Errorf("Join in a default room = %s, capacity %d, active %d, waiting %d; want active, 100, 1, 0",
			s.Status, s.Capacity, s.Active, s.Waiting)
	}
}

func testPutRoomInvalidConfig(f *fixture) {
	bad := map[string]func(*waitroom.RoomConfig){
		"empty mode":         func(c *waitroom.RoomConfig) { c.Mode = "" },
		"unknown mode":       func(c *waitroom.RoomConfig) { c.Mode = "fifo" },
		"negative capacity":  func(c *waitroom.RoomConfig) { c.Capacity = -1 },
		"huge capacity":      func(c *waitroom.RoomConfig) { c.Capacity = waitroom.MaxCapacity + 1 },
		"negative rate":      func(c *waitroom.RoomConfig) { c.RatePerMinute = -1 },
		"negative timeout":   func(c *waitroom.RoomConfig) { c.ActiveTimeout = -1 },
		"sub-ms grace":       func(c *waitroom.RoomConfig) { c.Grace = dur(time.Microsecond) },
		"too long max":       func(c *waitroom.RoomConfig) { c.MaxSession = waitroom.MaxDuration + 1 },
		"negative wait time": func(c *waitroom.RoomConfig) { c.WaitingTimeout = dur(-sec) },
	}
	good := quiet(5)
	f.put("kept", good, at(0))
	for name, mod := range bad {
		cfg := quiet(5)
		mod(&cfg)
		_, _, err := f.s.PutRoom(f.ctx, "fresh", cfg, at(sec))
		wantCode(f.t, "PutRoom(new, "+name+")", err, waitroom.CodeInvalidConfig)
		_, err = f.s.Room(f.ctx, "fresh")
		wantCode(f.t, "Room after a refused create ("+name+")", err, waitroom.CodeRoomNotFound)

		_, _, err = f.s.PutRoom(f.ctx, "kept", cfg, at(sec))
		wantCode(f.t, "PutRoom(existing, "+name+")", err, waitroom.CodeInvalidConfig)
		if got := f.room("kept"); !got.RoomConfig.Equal(good) {
			f.t.Fatalf("after a refused replace (%s) the config is %+v, want %+v unchanged", name, got.RoomConfig, good)
		}
	}
}

// badNames are room names outside ^[a-z0-9][a-z0-9._-]{0,63}$.
var badNames = []string{"", "Lobby", "-a", ".a", "a b", "a/b", "é", strings.Repeat("a", 65)}

func testInvalidRoomName(f *fixture) {
	id := unknownID(1)
	for _, name := range badNames {
		for _, c := range roomCalls(f, name, id) {
			wantCode(f.t, fmt.Sprintf("%s with room %q", c.name, name), c.call(), waitroom.CodeInvalidRoomName)
		}
	}
	if rooms, err := f.s.Rooms(f.ctx); err != nil || len(rooms) != 0 {
		f.t.Errorf("Rooms after only invalid names = %v, %v; want none", rooms, err)
	}
}

func testRoomNotFound(f *fixture) {
	f.put("other", quiet(1), at(0))
	s := f.join("other", "", at(0))
	for _, c := range roomCalls(f, "nosuch", s.ID) {
		if c.name == "PutRoom" {
			continue
		}
		wantCode(f.t, c.name+" on an unknown room", c.call(), waitroom.CodeRoomNotFound)
	}
}

// roomCalls returns one call of every method that names a room.
func roomCalls(f *fixture, room, id string) []struct {
	name string
	call func() error
} {
	now := at(sec)
	return []struct {
		name string
		call func() error
	}{
		{"PutRoom", func() error { _, _, err := f.s.PutRoom(f.ctx, room, quiet(1), now); return err }},
		{"Room", func() error { _, err := f.s.Room(f.ctx, room); return err }},
		{"DeleteRoom", func() error { return f.s.DeleteRoom(f.ctx, room, false, now) }},
		{"DeleteRoom(force)", func() error { return f.s.DeleteRoom(f.ctx, room, true, now) }},
		{"Join", func() error { _, err := f.s.Join(f.ctx, room, "", now); return err }},
		{"Join(key)", func() error { _, err := f.s.Join(f.ctx, room, "k", now); return err }},
		{"Session", func() error { _, err := f.s.Session(f.ctx, room, id, now); return err }},
		{"Heartbeat", func() error { _, err := f.s.Heartbeat(f.ctx, room, id, now); return err }},
		{"Away", func() error { return f.s.Away(f.ctx, room, id, now) }},
		{"Leave", func() error { _, err := f.s.Leave(f.ctx, room, id, waitroom.ReasonLeft, now); return err }},
		{"Advance", func() error { _, err := f.s.Advance(f.ctx, room, 1, now); return err }},
		{"Sweep", func() error { _, err := f.s.Sweep(f.ctx, room, now); return err }},
		{"Waiting", func() error { _, _, err := f.s.Waiting(f.ctx, room, waitroom.Page{}); return err }},
		{"History", func() error { _, _, err := f.s.History(f.ctx, room, "", waitroom.Page{}); return err }},
		{"Sessions", func() error { _, err := f.s.Sessions(f.ctx, room, []string{id}); return err }},
	}
}

func testRoomsOrder(f *fixture) {
	if rooms, err := f.s.Rooms(f.ctx); err != nil || len(rooms) != 0 {
		f.t.Fatalf("Rooms of an empty store = %v, %v; want none", rooms, err)
	}
	for i, name := range []string{"b", "a-1", "a", "c.d", "0", "a_b"} {
		f.put(name, quiet(i+1), at(0))
	}
	f.join("b", "", at(sec))
	f.join("b", "", at(sec))
	f.join("a", "", at(sec))
	rooms, err := f.s.Rooms(f.ctx)
	if err != nil {
		f.t.Fatalf("Rooms error = %v", err)
	}
	var names []string
	for _, r := range rooms {
		names = append(names, r.Name)
	}
	if want := []string{"0", "a", "a-1", "a_b", "b", "c.d"}; !slices.Equal(names, want) {
		f.t.Fatalf("Rooms names = %v, want %v (ordered by name)", names, want)
	}
	for _, r := range rooms {
		if !r.Equal(f.room(r.Name)) {
			f.t.Errorf("Rooms entry %+v differs from Room(%q) = %+v", r, r.Name, f.room(r.Name))
		}
	}
	// b has capacity 1: one active, one waiting.
	if b := rooms[4]; b.Active != 1 || b.Waiting != 1 || b.LastTicket != 2 || b.Capacity != 1 {
		f.t.Errorf("Rooms entry b = %+v, want active 1, waiting 1, last ticket 2, capacity 1", b)
	}
}

func testDeleteRoom(f *fixture) {
	f.put("r", quiet(1), at(0))
	a := f.join("r", "", at(0))
	err := f.s.DeleteRoom(f.ctx, "r", false, at(sec))
	wantCode(f.t, "DeleteRoom with a live session", err, waitroom.CodeRoomNotEmpty)
	f.wantPeek("r", a, waitroom.StatusActive, 0, "")
	f.wantCounts("r", 0, 1)

	f.leave("r", a.ID, waitroom.ReasonLeft, at(2*sec))
	if err := f.s.DeleteRoom(f.ctx, "r", false, at(3*sec)); err != nil {
		f.t.Fatalf("DeleteRoom of a room with only ended sessions = %v, want nil", err)
	}
	_, err = f.s.Room(f.ctx, "r")
	wantCode(f.t, "Room after DeleteRoom", err, waitroom.CodeRoomNotFound)
	_, _, err = f.s.History(f.ctx, "r", "", waitroom.Page{})
	wantCode(f.t, "History after DeleteRoom", err, waitroom.CodeRoomNotFound)
	_, err = f.s.Session(f.ctx, "r", a.ID, at(4*sec))
	wantCode(f.t, "Session after DeleteRoom", err, waitroom.CodeRoomNotFound)
	if rooms, err := f.s.Rooms(f.ctx); err != nil || len(rooms) != 0 {
		f.t.Errorf("Rooms after DeleteRoom = %v, %v; want none", rooms, err)
	}
	err = f.s.DeleteRoom(f.ctx, "r", true, at(5*sec))
	wantCode(f.t, "DeleteRoom of a deleted room", err, waitroom.CodeRoomNotFound)
}

func testDeleteRoomForce(f *fixture) {
	f.put("r", quiet(1), at(0))
	f.put("keep", quiet(1), at(0))
	a := f.join("r", "", at(0))
	b := f.join("r", "", at(0))
	k := f.join("keep", "", at(0))
	ev := record(f)
	if err := f.s.DeleteRoom(f.ctx, "r", true, at(sec)); err != nil {
		f.t.Fatalf("DeleteRoom(force) error = %v", err)
	}
	_, err := f.s.Room(f.ctx, "r")
	wantCode(f.t, "Room after DeleteRoom(force)", err, waitroom.CodeRoomNotFound)
	f.wantPeek("keep", k, waitroom.StatusActive, 0, "")

	events := ev.take("r")
	if len(events) == 0 || events[len(events)-1].Kind != waitroom.EventDeleted {
		f.t.Fatalf("events of DeleteRoom(force) = %s, want the last of kind %q", describeEvents(events), waitroom.EventDeleted)
	}
	ended := map[int64]waitroom.Change{}
	for _, e := range events {
		for _, c := range e.Changes {
			ended[c.Session.Ticket] = c
		}
	}
	for _, s := range []waitroom.Session{a, b} {
		c, ok := ended[s.Ticket]
		if !ok || c.Session.Status != waitroom.StatusExpired || c.Session.EndReason != waitroom.ReasonRoomDeleted {
			f.t.Errorf("change for ticket %d = %+v (present %v), want it expired with reason %q", s.Ticket, c, ok, waitroom.ReasonRoomDeleted)
		}
	}
	if c := ended[a.Ticket]; c.From != waitroom.StatusActive {
		f.t.Errorf("change for the active session: from %q, want %q", c.From, waitroom.StatusActive)
	}
	if c := ended[b.Ticket]; c.From != waitroom.StatusWaiting {
		f.t.Errorf("change for the waiting session: from %q, want %q", c.From, waitroom.StatusWaiting)
	}
}

func testTicketsNeverReused(f *fixture) {
	f.put("r", quiet(1), at(0))
	a := f.join("r", "", at(0))
	f.leave("r", a.ID, waitroom.ReasonLeft, at(sec))
	b := f.join("r", "", at(2*sec))
	if b.Ticket <= a.Ticket {
		f.t.Fatalf("ticket after the last session left = %d, want more than %d", b.Ticket, a.Ticket)
	}
	c := f.join("r", "", at(2*sec))
	if err := f.s.DeleteRoom(f.ctx, "r", true, at(3*sec)); err != nil {
		f.t.Fatalf("DeleteRoom(force) error = %v", err)
	}
	_, created, err := f.s.PutRoom(f.ctx, "r", quiet(1), at(4*sec))
	if err != nil || !created {
		f.t.Fatalf("PutRoom after delete = created %v, %v; want created", created, err)
	}
	d := f.join("r", "", at(5*sec))
	if d.Ticket <= c.Ticket {
		f.t.Fatalf("ticket after DeleteRoom and re-create = %d, want more than %d (never reused)", d.Ticket, c.Ticket)
	}
	if r := f.room("r"); r.LastTicket != d.Ticket {
		f.t.Errorf("LastTicket = %d, want %d", r.LastTicket, d.Ticket)
	}
	for _, old := range []waitroom.Session{a, b, c} {
		_, err := f.s.Session(f.ctx, "r", old.ID, at(6*sec))
		wantCode(f.t, fmt.Sprintf("Session of ticket %d from before the delete", old.Ticket), err, waitroom.CodeSessionNotFound)
		if got := f.peek("r", old.ID); got.ID != "" {
			f.t.Errorf("Sessions of ticket %d from before the delete = %+v, want the zero Session", old.Ticket, got)
		}
	}
	if h := f.historyAll("r", "", 0); len(h) != 0 {
		f.t.Errorf("History after re-create = %s, want empty (deleted with the room)", describe(h))
	}
}
