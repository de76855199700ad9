package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// hookState is the webhook outbox: each room's webhooks and the
// deliveries of its events. Events are recorded while the room that made
// them is locked, so they enter the outbox in the order they happened.
type hookState struct {
	mu    sync.Mutex
	rooms map[string]*roomHooks
	seq   int64 // the last message number given
}

type roomHooks struct {
	hooks   map[string]waitroom.Webhook
	pending map[taskKey]*task
	dead    map[taskKey]*task
	stats   map[string]*waitroom.HookStats
}

type taskKey struct{ hook, id string }

type task struct {
	d     waitroom.Delivery
	seq   int64 // message order, for claims oldest first
	until int64 // claimed until (unix ns), 0 when not claimed
}

func (s *Store) hookState() *hookState {
	s.hooksOnce.Do(func() { s.hooks = &hookState{rooms: map[string]*roomHooks{}} })
	return s.hooks
}

// recordHooks writes ev's webhook messages to the outbox of its room, if
// the room has webhooks; ev's room is locked. A room deleted takes its
// webhooks and deliveries with it.
func (s *Store) recordHooks(ev *waitroom.Event) {
	if !s.hooked.Load() {
		return
	}
	h := s.hookState()
	h.mu.Lock()
	defer h.mu.Unlock()
	rh := h.rooms[ev.Room]
	if rh == nil {
		return
	}
	if ev.Kind == waitroom.EventDeleted {
		delete(h.rooms, ev.Room)
		s.hooked.Store(len(h.rooms) > 0)
		return
	}
	for _, m := range waitroom.HookMessages(*ev) {
		h.seq++
		m.ID = "msg_" + strconv.FormatInt(h.seq, 10)
		for name, w := range rh.hooks {
			if w.Wants(m.Type) {
				rh.pending[taskKey{name, m.ID}] = &task{d: waitroom.Delivery{Room: ev.Room, Hook: name, Message: m, NextAt: m.At}, seq: h.seq}
			}
		}
	}
}

// PutWebhook implements waitroom.Hooks.
func (s *Store) PutWebhook(ctx context.Context, w waitroom.Webhook, now time.Time) (waitroom.Webhook, bool, error) {
	if err := w.Check(); err != nil {
		return waitroom.Webhook{}, false, err
	}
	r, err := s.get(w.Room)
	if err != nil {
		return waitroom.Webhook{}, false, err
	}
	defer r.mu.Unlock()
	h := s.hookState()
	h.mu.Lock()
	defer h.mu.Unlock()
	rh := h.rooms[w.Room]
	if rh == nil {
		rh = &roomHooks{hooks: map[string]waitroom.Webhook{}, pending: map[taskKey]*task{}, dead: map[taskKey]*task{}, stats: map[string]*waitroom.HookStats{}}
	}
	old, found := rh.hooks[w.Name]
	if !found && len(rh.hooks) >= waitroom.MaxWebhooks {
		return waitroom.Webhook{}, false, waitroom.Errorf(waitroom.CodeInvalidRequest, "Room %q has %d webhooks, the most a room may have.", w.Room, waitroom.MaxWebhooks)
	}
	w.CreatedAt, w.UpdatedAt = now.UTC(), now.UTC()
	if found {
		w.CreatedAt = old.CreatedAt
	}
	w.Events = slices.Clone(w.Events)
	rh.hooks[w.Name] = w
	if rh.stats[w.Name] == nil {
		rh.stats[w.Name] = &waitroom.HookStats{}
	}
	h.rooms[w.Room] = rh
	s.hooked.Store(true)
	return w, !found, nil
}

// Webhooks implements waitroom.Hooks.
func (s *Store) Webhooks(ctx context.Context, room string) ([]waitroom.Webhook, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	h := s.hookState()
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []waitroom.Webhook
	if rh := h.rooms[room]; rh != nil {
		for _, w := range rh.hooks {
			w.Events = slices.Clone(w.Events)
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b waitroom.Webhook) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteWebhook implements waitroom.Hooks.
func (s *Store) DeleteWebhook(ctx context.Context, room, name string) error {
	if err := s.usable(); err != nil {
		return err
	}
	h := s.hookState()
	h.mu.Lock()
	defer h.mu.Unlock()
	rh := h.rooms[room]
	if rh == nil {
		return webhookNotFound(room, name)
	}
	if _, ok := rh.hooks[name]; !ok {
		return webhookNotFound(room, name)
	}
	delete(rh.hooks, name)
	delete(rh.stats, name)
	for k := range rh.pending {
		if k.hook == name {
			delete(rh.pending, k)
		}
	}
	for k := range rh.dead {
		if k.hook == name {
			delete(rh.dead, k)
		}
	}
	if len(rh.hooks) == 0 {
		delete(h.rooms, room)
		// No webhook left: operations stop making events for them.
		s.hooked.Store(len(h.rooms) > 0)
	}
	return nil
}

func webhookNotFound(room, name string) error {
	return waitroom.Errorf(waitroom.CodeNotFound, "Room %q has no webhook %q.", room, name)
}

// HookRooms implements waitroom.Hooks.
func (s *Store) HookRooms(ctx context.Context) ([]string, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	h := s.hookState()
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for room := range h.rooms {
		out = append(out, room)
	}
	slices.Sort(out)
	return out, nil
}

// ClaimDeliveries implements waitroom.Hooks.
func (s *Store) ClaimDeliveries(ctx context.Context, room, hook string, now time.Time, lease time.Duration, n int) ([]waitroom.Delivery, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	h := s.hookState()
	h.mu.Lock()
	defer h.mu.Unlock()
	rh := h.rooms[room]
	if rh == nil || n <= 0 {
		return nil, nil
	}
	t := now.UnixNano()
	var due []*task
	for _, tk := range rh.pending {
		if max(tk.d.NextAt.UnixNano(), tk.until) <= t && (hook == "" || tk.d.Hook == hook) {
			due = append(due, tk)
		}
	}
	slices.SortFunc(due, func(a, b *task) int {
		return cmp.Or(a.d.NextAt.Compare(b.d.NextAt), cmp.Compare(a.seq, b.seq), cmp.Compare(a.d.Hook, b.d.Hook))
	})
	due = due[:min(n, len(due))]
	out := make([]waitroom.Delivery, len(due))
	for i, tk := range due {
		tk.until = now.Add(lease).UnixNano()
		out[i] = tk.d
	}
	return out, nil
}

// SettleDeliveries implements waitroom.Hooks.
func (s *Store) SettleDeliveries(ctx context.Context, room string, outs []waitroom.DeliveryOutcome, now time.Time) error {
	if err := s.usable(); err != nil {
		return err
	}
	h := s.hookState()
	h.mu.Lock()
	defer h.mu.Unlock()
	rh := h.rooms[room]
	if rh == nil {
		return nil
	}
	for _, o := range outs {
		k := taskKey{o.Hook, o.ID}
		tk := rh.pending[k]
		st := rh.stats[o.Hook]
		if tk == nil || st == nil {
			continue
		}
		if o.OK {
			delete(rh.pending, k)
			st.Delivered++
			st.LastDelivered = now.UTC()
			continue
		}
		st.Failed++
		st.LastError, st.LastErrorAt = o.Error, now.UTC()
		tk.d.Attempts++
		tk.d.LastError = o.Error
		tk.until = 0
		if o.Dead {
			delete(rh.pending, k)
			tk.d.NextAt, tk.d.DeadAt = time.Time{}, now.UTC()
			rh.dead[k] = tk
			continue
		}
		tk.d.NextAt = o.Next
	}
	return nil
}

// DeadLetters implements waitroom.Hooks. The cursor is the last letter's
// dead time (unix ns), message order and webhook.
func (s *Store) DeadLetters(ctx context.Context, room string, page waitroom.Page) ([]waitroom.Delivery, string, error) {
	if err := s.usable(); err != nil {
		return nil, "", err
	}
	var c deadCursor
	if page.After != "" {
		if _, err := fmt.Sscanf(page.After, "%d.%d.%s", &c.at, &c.seq, &c.hook); err != nil {
			return nil, "", waitroom.Errorf(waitroom.CodeInvalidRequest, "Cursor %q is not one this listing gave.", page.After)
		}
	}
	h := s.hookState()
	h.mu.Lock()
	defer h.mu.Unlock()
	rh := h.rooms[room]
	if rh == nil {
		return nil, "", nil
	}
	all := make([]*task, 0, len(rh.dead))
	for _, tk := range rh.dead {
		all = append(all, tk)
	}
	slices.SortFunc(all, func(a, b *task) int { return deadOrder(b).cmp(deadOrder(a)) })
	start := 0
	if page.After != "" {
		start, _ = slices.BinarySearchFunc(all, c, func(t *task, c deadCursor) int { return c.cmp(deadOrder(t)) })
		if start < len(all) && deadOrder(all[start]) == c {
			start++
		}
	}
	all = all[start:]
	size := page.Size()
	next := ""
	if len(all) > size {
		all = all[:size]
		c := deadOrder(all[size-1])
		next = fmt.Sprintf("%d.%d.%s", c.at, c.seq, c.hook)
	}
	out := make([]waitroom.Delivery, len(all))
	for i, tk := range all {
		out[i] = tk.d
	}
	return out, next, nil
}

type deadCursor struct {
	at, seq int64
	hook    string
}

func deadOrder(t *task) deadCursor { return deadCursor{t.d.DeadAt.UnixNano(), t.seq, t.d.Hook} }

func (c deadCursor) cmp(o deadCursor) int {
	return cmp.Or(cmp.Compare(c.at, o.at), cmp.Compare(c.seq, o.seq), cmp.Compare(c.hook, o.hook))
}

// ReplayDeadLetters implements waitroom.Hooks.
func (s *Store) ReplayDeadLetters(ctx context.Context, room string, ids []string, now time.Time) (int, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	h := s.hookState()
	h.mu.Lock()
	defer h.mu.Unlock()
	rh := h.rooms[room]
	if rh == nil {
		return 0, nil
	}
	n := 0
	for k, tk := range rh.dead {
		if len(ids) > 0 && !slices.Contains(ids, k.id) {
			continue
		}
		delete(rh.dead, k)
		tk.d.Attempts, tk.d.DeadAt, tk.d.NextAt, tk.d.LastError, tk.d.Replayed = 0, time.Time{}, now.UTC(), "", now.UTC()
		rh.pending[k] = tk
		n++
	}
	return n, nil
}

// HookStats implements waitroom.Hooks.
func (s *Store) HookStats(ctx context.Context, room string) (map[string]waitroom.HookStats, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	h := s.hookState()
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]waitroom.HookStats{}
	rh := h.rooms[room]
	if rh == nil {
		return out, nil
	}
	for name, st := range rh.stats {
		out[name] = *st
	}
	for k := range rh.pending {
		if st, ok := out[k.hook]; ok {
			st.Pending++
			out[k.hook] = st
		}
	}
	for k := range rh.dead {
		if st, ok := out[k.hook]; ok {
			st.Dead++
			out[k.hook] = st
		}
	}
	return out, nil
}
