package redisstore

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
)

// This file is the webhook outbox (waitroom.Hooks); hooks.lua holds the
// keys and the scripts, room.lua and machinery.lua the outbox's writing.
//
// A message's ID is msg_<room>_<outbox entry id>_<index in the entry>.
// Outbox ids are the room's stream ids: Redis gives each one larger than any
// the stream gave before, and the stream is never deleted (DeleteRoom and
// the last webhook's deletion empty it with XTRIM, which keeps its last id),
// so a room, even deleted and made again, never names two messages alike.

//go:embed hooks.lua
var hooksLua string

// hookScript runs every webhook operation but the outbox's writing.
var hookScript = newScript(hooksLua)

// outboxBatch bounds the outbox entries one ClaimDeliveries takes in, and
// outboxBytes the arguments of one script run that takes them in (a run
// takes at least one entry, however large).
const (
	outboxBatch = 1000
	outboxBytes = 4 << 20
)

// hookKeys returns the keys of room's webhook script (hooks.lua), all in
// the room's slot.
func (s *Store) hookKeys(room string) []string {
	b := s.cfg.prefix + ":{" + room + "}:"
	return []string{b + "room", b + "wh", b + "ob", b + "hd", b + "hx", b + "hs"}
}

// hookRoomsKey is the set of rooms with webhooks. Like the rooms set it is
// outside the rooms' slots, so it is kept by separate commands and
// HookRooms skips rooms whose webhooks are gone.
func (s *Store) hookRoomsKey() string { return s.cfg.prefix + ":hookrooms" }

// runHooks runs the webhook script on room's keys; what says what it was
// doing, for the error.
func (s *Store) runHooks(ctx context.Context, room, what string, args ...any) (any, error) {
	what = fmt.Sprintf("%s of room %q", what, room)
	v, err := s.script(ctx, what, hookScript, s.hookKeys(room), args...)
	if errors.Is(err, errNotReplicated) {
		return nil, err // it names what already
	}
	if err != nil {
		return nil, waitroom.Unavailable(err, "redisstore: "+what)
	}
	return v, nil
}

// PutWebhook implements waitroom.Hooks.
func (s *Store) PutWebhook(ctx context.Context, h waitroom.Webhook, now time.Time) (waitroom.Webhook, bool, error) {
	if err := s.usable(); err != nil {
		return waitroom.Webhook{}, false, err
	}
	if err := waitroom.CheckRoomName(h.Room); err != nil {
		return waitroom.Webhook{}, false, err
	}
	if err := h.Check(); err != nil {
		return waitroom.Webhook{}, false, err
	}
	keys := s.hookKeys(h.Room)
	// Replacing keeps created_at: read the webhook, then write it unless it
	// changed meanwhile (then again).
	for range 10 {
		old, err := s.client.HGet(ctx, keys[1], h.Name).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return waitroom.Webhook{}, false, waitroom.Unavailable(err, "redisstore: reading webhook "+h.Name)
		}
		w := h
		w.Events = slices.Clone(h.Events)
		w.CreatedAt, w.UpdatedAt = now.UTC(), now.UTC()
		var prev waitroom.Webhook
		if old != "" && json.Unmarshal([]byte(old), &prev) == nil {
			w.CreatedAt = prev.CreatedAt
		}
		b, err := json.Marshal(w)
		if err != nil {
			return waitroom.Webhook{}, false, fmt.Errorf("redisstore: encoding webhook %s: %w", h.Name, err)
		}
		v, err := s.runHooks(ctx, h.Room, "putting a webhook", "put", h.Name, old, b, waitroom.MaxWebhooks)
		if err != nil {
			return waitroom.Webhook{}, false, err
		}
		r, _ := v.([]any)
		switch str(r, 0) {
		case "ok":
			if err := s.write(ctx, "listing webhooks of room "+h.Room, redis.NewIntCmd(ctx, "sadd", s.hookRoomsKey(), h.Room)); err != nil {
				return waitroom.Webhook{}, false, err
			}
			return w, num(r, 1) == 1, nil
		case "room_not_found":
			return waitroom.Webhook{}, false, waitroom.RoomNotFound(h.Room)
		case "too_many":
			return waitroom.Webhook{}, false, waitroom.Errorf(waitroom.CodeInvalidRequest, "Room %q has %d webhooks, the most a room may have.", h.Room, waitroom.MaxWebhooks)
		case "retry":
			continue
		default:
			return waitroom.Webhook{}, false, malformed("put webhook", v)
		}
	}
	return waitroom.Webhook{}, false, waitroom.Errorf(waitroom.CodeUnavailable, "Webhook %q of room %q keeps changing; try again.", h.Name, h.Room)
}

// Webhooks implements waitroom.Hooks.
func (s *Store) Webhooks(ctx context.Context, room string) ([]waitroom.Webhook, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return nil, err
	}
	all, err := s.client.HGetAll(ctx, s.hookKeys(room)[1]).Result()
	if err != nil {
		return nil, waitroom.Unavailable(err, "redisstore: reading the webhooks of room "+room)
	}
	out := make([]waitroom.Webhook, 0, len(all))
	for name, v := range all {
		var w waitroom.Webhook
		if err := json.Unmarshal([]byte(v), &w); err != nil {
			return nil, waitroom.Unavailable(err, fmt.Sprintf("redisstore: webhook %q of room %q", name, room))
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b waitroom.Webhook) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteWebhook implements waitroom.Hooks.
func (s *Store) DeleteWebhook(ctx context.Context, room, name string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return err
	}
	v, err := s.runHooks(ctx, room, "deleting webhook "+name, "del", name)
	if err != nil {
		return err
	}
	r, _ := v.([]any)
	switch str(r, 0) {
	case "ok":
		if num(r, 1) == 0 {
			return s.unlistHooks(ctx, room)
		}
		return nil
	case "not_found":
		return waitroom.Errorf(waitroom.CodeNotFound, "Room %q has no webhook %q.", room, name)
	}
	return malformed("delete webhook", v)
}

// unlistHooks takes room off the set of rooms with webhooks, and puts it
// back if another process gave it one meanwhile, so the set never misses a
// room that has one.
func (s *Store) unlistHooks(ctx context.Context, room string) error {
	if err := s.write(ctx, "unlisting the webhooks of room "+room, redis.NewIntCmd(ctx, "srem", s.hookRoomsKey(), room)); err != nil {
		return err
	}
	if n, err := s.client.Exists(ctx, s.hookKeys(room)[1]).Result(); err == nil && n > 0 {
		_ = s.write(ctx, "listing the webhooks of room "+room, redis.NewIntCmd(ctx, "sadd", s.hookRoomsKey(), room))
	}
	return nil
}

// HookRooms implements waitroom.Hooks. It skips (and unlists) rooms whose
// webhooks are gone: a process may have died before unlisting one.
func (s *Store) HookRooms(ctx context.Context) ([]string, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	names, err := s.client.SMembers(ctx, s.hookRoomsKey()).Result()
	if err != nil {
		return nil, waitroom.Unavailable(err, "redisstore: listing rooms with webhooks")
	}
	cmds := make([]*redis.IntCmd, len(names))
	_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, name := range names {
			cmds[i] = p.Exists(ctx, s.hookKeys(name)[1])
		}
		return nil
	})
	if err != nil {
		return nil, waitroom.Unavailable(err, "redisstore: listing rooms with webhooks")
	}
	out := make([]string, 0, len(names))
	for i, name := range names {
		if cmds[i].Val() > 0 {
			out = append(out, name)
		} else if waitroom.ValidRoomName(name) {
			_ = s.unlistHooks(ctx, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ClaimDeliveries implements waitroom.Hooks. It first turns what the
// room's outbox holds (up to outboxBatch events) into deliveries to every
// webhook, then claims: in one script run with the last of the outbox.
// Oldest first is by when a delivery is due: one whose claim lapsed is due
// from when the claim lapsed.
func (s *Store) ClaimDeliveries(ctx context.Context, room, hook string, now time.Time, lease time.Duration, n int) ([]waitroom.Delivery, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return nil, err
	}
	if n <= 0 || (hook != "" && !waitroom.ValidRoomName(hook)) {
		return nil, nil
	}
	keys := s.hookKeys(room)
	xs, err := s.client.XRangeN(ctx, keys[2], "-", "+", outboxBatch).Result()
	if err != nil {
		return nil, waitroom.Unavailable(err, "redisstore: reading the webhook outbox of room "+room)
	}
	head := []any{"claim", now.UnixMilli(), now.Add(lease).UnixMilli(), n, hook}
	args, size := head, 0
	for _, x := range xs {
		entry, b := outboxEntry(room, x)
		if size > 0 && size+b > outboxBytes {
			// Take in what is gathered (claiming none), and go on.
			if _, err := s.runHooks(ctx, room, "taking in the webhook outbox", append([]any{"claim", 0, 0, 0, ""}, args[len(head):]...)...); err != nil {
				return nil, err
			}
			args, size = head, 0
		}
		args, size = append(args, entry...), size+b
	}
	v, err := s.runHooks(ctx, room, "claiming deliveries", args...)
	if err != nil {
		return nil, err
	}
	r, _ := v.([]any)
	out := make([]waitroom.Delivery, 0, len(r)/2)
	for i := 0; i+1 < len(r); i += 2 {
		if d, ok := decodeDelivery(room, str(r, i), str(r, i+1)); ok {
			out = append(out, d)
		}
	}
	return out, nil
}

// outboxEntry returns the claim script's arguments of outbox entry x (its
// id, time and messages: hooks.lua) and about how many bytes they are. An
// entry that is not an event makes no messages: it is only taken out.
func outboxEntry(room string, x redis.XMessage) ([]any, int) {
	raw, _ := x.Values["e"].(string)
	e, ok := decodeEvent(raw)
	var msgs []waitroom.HookMessage
	if ok {
		msgs = waitroom.HookMessages(e)
	}
	out := make([]any, 0, 3+3*len(msgs))
	out = append(out, x.ID, e.At.UnixMilli(), len(msgs))
	size := 64
	for i, m := range msgs {
		m.ID = "msg_" + room + "_" + x.ID + "_" + strconv.Itoa(i)
		ord, _ := msgOrder(room, m.ID)
		b, err := json.Marshal(m)
		if err != nil {
			// Not valid JSON (HookMessages makes none such): the message
			// still goes, without its data, rather than block the outbox.
			m.Data = json.RawMessage("null")
			b, _ = json.Marshal(m)
		}
		out = append(out, m.Type, ord, b)
		size += len(b) + len(ord) + len(m.Type) + 16
	}
	return out, size
}

// msgOrder returns the fixed-width order of message id of room (hooks.lua's
// <order>), or false for an id that is not one of room's.
func msgOrder(room, id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, "msg_"+room+"_")
	if !ok {
		return "", false
	}
	sid, idx, ok := strings.Cut(rest, "_")
	if !ok {
		return "", false
	}
	ms, seq, ok := strings.Cut(sid, "-")
	if !ok {
		return "", false
	}
	a, err1 := strconv.ParseUint(ms, 10, 64)
	b, err2 := strconv.ParseUint(seq, 10, 64)
	c, err3 := strconv.ParseUint(idx, 10, 32)
	if errors.Join(err1, err2, err3) != nil {
		return "", false
	}
	return fmt.Sprintf("%015d-%010d-%06d", a, b, c), true
}

// decodeDelivery turns a member and record of hooks.lua into a Delivery.
func decodeDelivery(room, member, rec string) (waitroom.Delivery, bool) {
	_, hook, ok := strings.Cut(member, " ")
	f := strings.SplitN(rec, "\t", 6)
	if !ok || len(f) != 6 {
		return waitroom.Delivery{}, false
	}
	attempts, err1 := strconv.Atoi(f[0])
	next, err2 := strconv.ParseInt(f[1], 10, 64)
	dead, err3 := strconv.ParseInt(f[2], 10, 64)
	replayed, err4 := strconv.ParseInt(f[3], 10, 64)
	d := waitroom.Delivery{Room: room, Hook: hook, Attempts: attempts, NextAt: tm(next), DeadAt: tm(dead),
		Replayed: tm(replayed), LastError: f[5]}
	if errors.Join(err1, err2, err3, err4, json.Unmarshal([]byte(f[4]), &d.Message)) != nil {
		return waitroom.Delivery{}, false
	}
	return d, true
}

// SettleDeliveries implements waitroom.Hooks.
func (s *Store) SettleDeliveries(ctx context.Context, room string, outcomes []waitroom.DeliveryOutcome, now time.Time) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return err
	}
	args := make([]any, 0, 2+4*len(outcomes))
	args = append(args, "settle", now.UnixMilli())
	for _, o := range outcomes {
		ord, ok := msgOrder(room, o.ID)
		if !ok || !waitroom.ValidRoomName(o.Hook) {
			continue // not a delivery of this room
		}
		how, next := "fail", int64(0)
		switch {
		case o.OK:
			how = "ok"
		case o.Dead:
			how = "dead"
		case !o.Next.IsZero():
			next = o.Next.UnixMilli()
		}
		args = append(args, ord+" "+o.Hook, how, next, o.Error)
	}
	if len(args) == 2 {
		return nil
	}
	_, err := s.runHooks(ctx, room, "settling deliveries", args...)
	return err
}

// DeadLetters implements waitroom.Hooks. The cursor is the last letter's
// place among the dead letters.
func (s *Store) DeadLetters(ctx context.Context, room string, page waitroom.Page) ([]waitroom.Delivery, string, error) {
	if err := s.usable(); err != nil {
		return nil, "", err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return nil, "", err
	}
	if page.After != "" && !validDeadCursor(page.After) {
		return nil, "", waitroom.Errorf(waitroom.CodeInvalidRequest, "Cursor %q is not one this listing gave.", page.After)
	}
	v, err := s.runHooks(ctx, room, "reading dead letters", "dead", page.After, page.Size())
	if err != nil {
		return nil, "", err
	}
	r, _ := v.([]any)
	if len(r) < 1 {
		return nil, "", malformed("dead letters", v)
	}
	out := make([]waitroom.Delivery, 0, len(r)/2)
	for i := 1; i+1 < len(r); i += 2 {
		if d, ok := decodeDelivery(room, str(r, i), str(r, i+1)); ok {
			out = append(out, d)
		}
	}
	return out, str(r, 0), nil
}

// validDeadCursor reports whether c looks like a dead letter's place:
// '<15 digits>:<order> <webhook>'.
func validDeadCursor(c string) bool {
	at, rest, ok := strings.Cut(c, ":")
	ord, hook, ok2 := strings.Cut(rest, " ")
	if !ok || !ok2 || len(at) != 15 || !waitroom.ValidRoomName(hook) || ord == "" {
		return false
	}
	for _, r := range at + ord {
		if (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// ReplayDeadLetters implements waitroom.Hooks.
func (s *Store) ReplayDeadLetters(ctx context.Context, room string, ids []string, now time.Time) (int, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return 0, err
	}
	args := []any{"replay", now.UnixMilli(), "all"}
	if len(ids) > 0 {
		args[2] = "ids"
		for _, id := range ids {
			if ord, ok := msgOrder(room, id); ok {
				args = append(args, ord)
			}
		}
		if len(args) == 3 {
			return 0, nil // none of room's
		}
	}
	v, err := s.runHooks(ctx, room, "replaying dead letters", args...)
	if err != nil {
		return 0, err
	}
	n, _ := v.(int64)
	return int(n), nil
}

// HookStats implements waitroom.Hooks.
func (s *Store) HookStats(ctx context.Context, room string) (map[string]waitroom.HookStats, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return nil, err
	}
	keys := s.hookKeys(room)
	var names *redis.StringSliceCmd
	var state *redis.MapStringStringCmd
	if _, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		names = p.HKeys(ctx, keys[1])
		state = p.HGetAll(ctx, keys[5])
		return nil
	}); err != nil {
		return nil, waitroom.Unavailable(err, "redisstore: reading the webhook stats of room "+room)
	}
	st := state.Val()
	n := func(name, f string) int64 {
		v, _ := strconv.ParseInt(st[name+"\t"+f], 10, 64)
		return v
	}
	out := make(map[string]waitroom.HookStats, len(names.Val()))
	for _, name := range names.Val() {
		out[name] = waitroom.HookStats{
			Pending: n(name, "p"), Dead: n(name, "d"), Delivered: n(name, "ok"), Failed: n(name, "fail"),
			LastError: st[name+"\terr"], LastErrorAt: tm(n(name, "errat")), LastDelivered: tm(n(name, "okat")),
		}
	}
	return out, nil
}
