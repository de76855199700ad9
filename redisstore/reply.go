package redisstore

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
)

// This file turns the script's replies into the contract's values and the
// contract's values into script arguments.

// result is a script's reply past its status and event.
type result struct {
	status  string
	rest    []any
	expired int // sessions expired by earlier runs that used up their batch
}

// num returns v[i] as an integer, 0 if it is missing or not one.
func num(v []any, i int) int64 {
	if i >= len(v) {
		return 0
	}
	switch x := v[i].(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

func str(v []any, i int) string {
	if i >= len(v) {
		return ""
	}
	x, _ := v[i].(string)
	return x
}

func tm(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// decodeSession turns a script's session array into a Session of room
// (room.lua describes the array).
func decodeSession(room string, x any) (waitroom.Session, bool) {
	v, ok := x.([]any)
	if !ok || len(v) < 12 {
		return waitroom.Session{}, false
	}
	var id waitroom.SessionID
	id.Ticket = num(v, 0)
	if _, err := hex.Decode(id.Secret[:], []byte(str(v, 1))); err != nil {
		return waitroom.Session{}, false
	}
	s := waitroom.Session{
		Room:       room,
		Status:     waitroom.Status(str(v, 2)),
		Ticket:     id.Ticket,
		Key:        str(v, 3),
		JoinedAt:   tm(num(v, 4)),
		AdmittedAt: tm(num(v, 5)),
		EndedAt:    tm(num(v, 6)),
		EndReason:  waitroom.Reason(str(v, 7)),
		Position:   num(v, 8),
		Waiting:    int(num(v, 9)),
		Active:     int(num(v, 10)),
		Capacity:   int(num(v, 11)),
	}
	entrant(&s, &id, num(v, 12), num(v, 13), num(v, 14))
	stockFields(&s, v, 15)
	if len(v) >= 20 {
		s.Place = num(v, 17)
		s.Extended = extended(num(v, 18), num(v, 19))
	}
	if len(v) >= 21 {
		s.Tier = str(v, 20)
	}
	holdFields(&s, v)
	s.ID = id.String()
	return s, true
}

// entrant completes a session that entered a pre-queue as entry number en
// (0 for any other): its id keeps the entry form and its public entry is
// derived, as the draw names it. opens and entrants are set while it is
// still in the pre-queue.
func entrant(s *waitroom.Session, id *waitroom.SessionID, en, opens, entrants int64) {
	if en == 0 {
		return
	}
	id.Entry = en
	s.Entry = waitroom.EntryFor(s.Room, s.Key, id.Secret)
	if opens != 0 {
		s.OpensAt = tm(opens)
		s.Entrants = int(entrants)
	}
}

func malformed(op string, v any) error {
	return waitroom.Unavailable(fmt.Errorf("unexpected reply %v", v), "redisstore: "+op)
}

// errorFor maps a script's error status to the contract's error.
func errorFor(room string, r result) error {
	switch r.status {
	case "ok":
		return nil
	case "room_not_found":
		return waitroom.RoomNotFound(room)
	case "session_not_found":
		return waitroom.SessionNotFound()
	case "invalid_session_id":
		// The domain's own error for a malformed id: parse one.
		_, err := waitroom.ParseSessionID("")
		return err
	case "queue_empty":
		return waitroom.Errorf(waitroom.CodeQueueEmpty, "Nobody is waiting in room %q.", room)
	case "precondition_failed":
		return waitroom.RevisionChanged(room, num(r.rest, 0), num(r.rest, 1))
	case "tiers_changed":
		return waitroom.TiersChangedError(room)
	case "room_not_empty":
		return waitroom.Errorf(waitroom.CodeRoomNotEmpty, "Room %q has %d live sessions; delete it with force to end them.", room, num(r.rest, 0))
	case "room_closed":
		return waitroom.Errorf(waitroom.CodeRoomClosed, "Room %q closed to new arrivals at %s.", room, tm(num(r.rest, 0)).Format(time.RFC3339))
	case "draw_done":
		return waitroom.Errorf(waitroom.CodeDrawDone, "Room %q held its draw at %s; its opens_at cannot move now. Keep opens_at at %s, remove it, or create a new room for a new drop.",
			room, tm(num(r.rest, 0)).Format(time.RFC3339), tm(num(r.rest, 1)).Format(time.RFC3339))
	case "not_scheduled":
		return waitroom.Errorf(waitroom.CodeNotFound, "Room %q has no draw: it was never given an opens_at.", room)
	case "stock_conflict", "stock_not_found", "sold_out":
		return stockError(room, r)
	case "not_waiting":
		return waitroom.Errorf(waitroom.CodeInvalidRequest, "Only a waiting session can move to the front of the line; this one is %s.", stateName(str(r.rest, 0)))
	case "not_active":
		return waitroom.Errorf(waitroom.CodeInvalidRequest, "Only an active session can be extended; this one is %s.", stateName(str(r.rest, 0)))
	case "not_invited":
		return notInvited(room, r)
	case "already_joined":
		live, ok := decodeSession(room, first(r.rest))
		if !ok {
			return malformed("join", r.rest)
		}
		return &waitroom.Error{
			Code:    waitroom.CodeAlreadyJoined,
			Message: "This key already holds a live session in this room.",
			Session: &live,
		}
	}
	return waitroom.Unavailable(fmt.Errorf("status %q", r.status), "redisstore: unexpected script status")
}

func first(v []any) any {
	if len(v) == 0 {
		return nil
	}
	return v[0]
}

// decodeRoom turns a script's room info array into a Room.
func decodeRoom(name string, x any) (waitroom.Room, int64, error) {
	v, ok := x.([]any)
	if !ok || len(v) < 5 {
		return waitroom.Room{}, 0, malformed("room", x)
	}
	var cfg waitroom.RoomConfig
	if err := json.Unmarshal([]byte(str(v, 0)), &cfg); err != nil {
		return waitroom.Room{}, 0, waitroom.Unavailable(err, "redisstore: decoding the configuration of room "+name)
	}
	room := waitroom.Room{
		Name:       name,
		RoomConfig: cfg,
		Waiting:    int(num(v, 1)),
		Active:     int(num(v, 2)),
		LastTicket: num(v, 3),
		Entrants:   int(num(v, 5)),
		Admissions: num(v, 6),
		Inversions: num(v, 7),
		Revision:   num(v, 11),
	}
	decodeRoomStock(&room, v)
	return room, num(v, 4), nil
}

// configArgs is a normalized configuration as the script takes it: the
// numbers it computes with, the exact JSON it stores and hands back (but
// for the inventory, which the script keeps apart: see stock.lua), the
// schedule in unix milliseconds (0 for none), a fresh seed, which the
// script keeps only for a room scheduled for the first time, the
// inventory ("" for none), the tiers (tierArgs) and the holding of places
// (holdArgs).
func configArgs(cfg waitroom.RoomConfig) ([]any, error) {
	inventory := ""
	if cfg.Inventory != nil {
		inventory = strconv.FormatInt(*cfg.Inventory, 10)
	}
	cfg.Inventory = nil
	blob, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("redisstore: encoding the configuration: %w", err)
	}
	paused := "0"
	if cfg.Paused {
		paused = "1"
	}
	// The timeouts' signature, exact to the nanosecond as memstore compares
	// them, tells the script when deadlines must be planned afresh; the
	// claim window (holdArgs) counts only where places are, or were, held,
	// so other rooms keep the signature they had.
	tsig := fmt.Sprintf("%d,%d,%d,%d", cfg.ActiveTimeout, cfg.MaxSession, cfg.WaitingTimeout, cfg.Grace)
	if cfg.HoldPlaces || cfg.ClaimWindow != 0 {
		tsig += fmt.Sprintf(",%d", cfg.HeldWindow())
	}
	var opens, closes int64
	seed := ""
	if !cfg.OpensAt.IsZero() {
		opens = cfg.OpensAt.UnixMilli()
		seed = waitroom.NewDrawSeed().String()
	}
	if !cfg.ClosesAt.IsZero() {
		closes = cfg.ClosesAt.UnixMilli()
	}
	args := append([]any{
		string(cfg.Mode), cfg.Capacity, cfg.RatePerMinute,
		cfg.ActiveTimeout.D().Milliseconds(), cfg.MaxSession.D().Milliseconds(),
		cfg.WaitingTimeout.D().Milliseconds(), cfg.Grace.D().Milliseconds(),
		paused, string(blob), tsig, opens, closes, seed, inventory,
	}, tierArgs(cfg)...)
	return append(args, holdArgs(cfg)...), nil
}

// idArgs returns the script arguments naming session id: ticket, secret
// and entry number; ticket and entry 0 for a malformed id, so the script
// settles and then refuses it, as memstore.
func idArgs(id string) []any {
	sid, err := waitroom.ParseSessionID(id)
	if err != nil {
		return []any{0, "", 0}
	}
	return []any{sid.Ticket, hex.EncodeToString(sid.Secret[:]), sid.Entry}
}

// decodeList decodes the list of sessions at v[i].
func decodeList(room, op string, v []any, i int) ([]waitroom.Session, error) {
	var list []any
	if i < len(v) {
		list, _ = v[i].([]any)
	}
	out := make([]waitroom.Session, 0, len(list))
	for _, x := range list {
		sess, ok := decodeSession(room, x)
		if !ok {
			return nil, malformed(op, x)
		}
		out = append(out, sess)
	}
	return out, nil
}

// validStreamID reports whether c has the form of a stream id, ms-seq.
func validStreamID(c string) bool {
	ms, seq, ok := strings.Cut(c, "-")
	if !ok || ms == "" || seq == "" || len(c) > 41 {
		return false
	}
	for _, r := range ms + seq {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
