package redisstore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
)

// subscribers are the local Subscribe callbacks.
type subscribers struct {
	mu   sync.RWMutex
	fns  map[int]func(waitroom.Event)
	next int
	n    atomic.Int32
}

func (s *subscribers) publish(e waitroom.Event) {
	if s.n.Load() == 0 {
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, fn := range s.fns {
		fn(e)
	}
}

// Subscribe implements waitroom.Store. The first call starts the pub/sub
// subscription that brings other processes' events, and waits (up to two
// seconds) until it is in place, so events made after Subscribe returns
// arrive.
func (s *Store) Subscribe(fn func(waitroom.Event)) (cancel func()) {
	s.subs.mu.Lock()
	id := s.subs.next
	s.subs.next++
	s.subs.fns[id] = fn
	s.subs.n.Add(1)
	s.subs.mu.Unlock()
	if !s.closed.Load() {
		s.lis.start()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.subs.mu.Lock()
			delete(s.subs.fns, id)
			s.subs.n.Add(-1)
			s.subs.mu.Unlock()
		})
	}
}

// An event on the wire is lines separated by '\n' with fields separated by
// '\t' (keys and contacts cannot hold control characters, secrets are hex,
// the configuration is JSON, which escapes them):
//
//	1 pid room kind at waiting active last_ticket config_json admissions inversions max_admitted sold [flags]
//	ticket secret from status key joined admitted ended reason waiting active capacity [entry [opens entrants [remaining unit [place extended_ms extended_ns [tier [contact claim_by [position]]]]]]]
//	u ticket unit
//	…
//
// Times are unix milliseconds. A session that entered a pre-queue adds its
// entry number, and one still in it the opening and the pre-queue's size.
// A live session of a room with an inventory has all 17 fields (zeros for
// what does not apply), ending with the units remaining and 1 when it holds
// one. A live session an operator moved or extended has 20 fields: the
// 17 (remaining and unit empty without an inventory), then its place and
// its extension in ms and the ns past them. A live session of a room with
// tiers has 21: the 20 (place 0 for an entrant before the draw), then its
// tier's name. A held session (one with a contact: holds.lua), ended too,
// has 23: the 21 (zeros, empty stock fields and an empty tier where they
// do not apply), then its contact and, invited, when its claim window ends
// (0 otherwise). A near change (Change.Near: a waiting session that
// reached notify_at, from waiting to waiting) has 24: the 23 (an empty
// contact for a session that is not held), then its position. A "u" line
// is a unit taken from (0) or given to (1) an active session outside a
// status change (Event.Units). The head ends with the change's flags when
// it has any: letters p (Event.PausedBefore, on a config event), s
// (SoldOut), d (DrawDone) and c (Closed).

// decodeEvent parses an event message; ok is false for anything else.
func decodeEvent(msg string) (waitroom.Event, bool) {
	e, _, ok := decodeEventFrom(msg)
	return e, ok
}

// decodeEventFrom parses an event message and returns the process that
// made it.
func decodeEventFrom(msg string) (e waitroom.Event, pid string, ok bool) {
	head, rest, _ := strings.Cut(msg, "\n")
	// The configuration is JSON, which escapes every tab, so the head
	// splits on them all.
	h := strings.Split(head, "\t")
	if (len(h) != 9 && len(h) != 13 && len(h) != 14 && len(h) != 15) || h[0] != "1" {
		return e, "", false
	}
	at, err1 := strconv.ParseInt(h[4], 10, 64)
	w, err2 := strconv.Atoi(h[5])
	a, err3 := strconv.Atoi(h[6])
	last, err4 := strconv.ParseInt(h[7], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return e, "", false
	}
	e = waitroom.Event{
		Room:       h[2],
		Kind:       waitroom.EventKind(h[3]),
		At:         tm(at),
		Waiting:    w,
		Active:     a,
		LastTicket: last,
	}
	if len(h) >= 13 {
		var c [4]int64
		for i := range c {
			v, err := strconv.ParseInt(h[9+i], 10, 64)
			if err != nil {
				return e, "", false
			}
			c[i] = v
		}
		e.Admissions, e.Inversions, e.MaxAdmitted, e.Sold = c[0], c[1], c[2], c[3]
	}
	if len(h) == 15 {
		rev, err := strconv.ParseInt(h[14], 10, 64)
		if err != nil {
			return e, "", false
		}
		e.Revision = rev
	}
	if len(h) >= 14 {
		f := h[13]
		e.PausedBefore = strings.Contains(f, "p")
		e.SoldOut = strings.Contains(f, "s")
		e.DrawDone = strings.Contains(f, "d")
		e.Closed = strings.Contains(f, "c")
	}
	if e.Kind == waitroom.EventConfig && h[8] != "" {
		var cfg waitroom.RoomConfig
		if json.Unmarshal([]byte(h[8]), &cfg) != nil {
			return e, "", false
		}
		e.Config = &cfg
	}
	if rest != "" {
		lines := strings.Split(rest, "\n")
		e.Changes = make([]waitroom.Change, 0, len(lines))
		for _, line := range lines {
			if strings.HasPrefix(line, "u\t") {
				u, ok := decodeUnit(line)
				if !ok {
					return e, "", false
				}
				e.Units = append(e.Units, u)
				continue
			}
			c, ok := decodeChange(e.Room, line)
			if !ok {
				return e, "", false
			}
			e.Changes = append(e.Changes, c)
		}
	}
	return e, h[1], true
}

func decodeChange(room, line string) (waitroom.Change, bool) {
	f := strings.Split(line, "\t")
	switch len(f) {
	case 12, 13, 15, 17, 20, 21, 23, 24:
	default:
		return waitroom.Change{}, false
	}
	// Without an inventory a line of 20 fields or more has empty stock
	// fields.
	stocked := len(f) >= 17 && f[15] != ""
	var n [24]int64
	for _, i := range []int{0, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 22, 23} {
		if i >= len(f) {
			break
		}
		if (i == 15 || i == 16) && !stocked {
			continue
		}
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return waitroom.Change{}, false
		}
		n[i] = v
	}
	id := waitroom.SessionID{Ticket: n[0]}
	if _, err := hex.Decode(id.Secret[:], []byte(f[1])); err != nil {
		return waitroom.Change{}, false
	}
	c := waitroom.Change{
		From: waitroom.Status(f[2]),
		Session: waitroom.Session{
			Room:       room,
			Status:     waitroom.Status(f[3]),
			Ticket:     n[0],
			Key:        f[4],
			JoinedAt:   tm(n[5]),
			AdmittedAt: tm(n[6]),
			EndedAt:    tm(n[7]),
			EndReason:  waitroom.Reason(f[8]),
			Waiting:    int(n[9]),
			Active:     int(n[10]),
			Capacity:   int(n[11]),
		},
	}
	entrant(&c.Session, &id, n[12], n[13], n[14])
	if stocked {
		c.Session.Stocked, c.Session.Remaining, c.Session.Unit = true, n[15], n[16] == 1
	}
	if len(f) >= 20 {
		c.Session.Place, c.Session.Extended = n[17], extended(n[18], n[19])
	}
	if len(f) >= 21 {
		c.Session.Tier = f[20]
	}
	if len(f) >= 23 {
		c.Session.Contact, c.Session.ClaimBy = f[21], tm(n[22])
	}
	if len(f) == 24 {
		c.Near, c.Session.Position = true, n[23]
	}
	c.Session.ID = id.String()
	return c, true
}

// listener brings other processes' events in over pub/sub. Classic mode has
// one PSUBSCRIBE connection for every room; sharded mode has one SSUBSCRIBE
// connection per room (a cluster PubSub can only follow channels of one
// slot) and learns of rooms from the rooms set, a control channel and a
// periodic refresh.
type listener struct {
	s *Store

	mu      sync.Mutex
	started bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	rooms   map[string]*roomSub // sharded mode: room → its subscription
	others  []*redis.PubSub     // the classic subscriptions, closed by stop
}

// roomSub is one room's sharded subscription.
type roomSub struct {
	ps     *redis.PubSub
	cancel context.CancelFunc
	ready  chan struct{}
}

// readyWait bounds how long the first Subscribe waits for the pub/sub
// subscription to be confirmed.
const readyWait = 2 * time.Second

// refreshEvery is how often sharded mode reads the rooms set again, in case
// a control message was missed.
const refreshEvery = 5 * time.Second

func (l *listener) start() {
	s := l.s
	l.mu.Lock()
	if l.started {
		l.mu.Unlock()
		return
	}
	// Everything is set up under the lock, so a concurrent stop either
	// comes first (and start does nothing) or finds it all to close.
	l.started = true
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.rooms = make(map[string]*roomSub)
	ready := make(chan struct{})
	if !s.sharded {
		ps := s.client.PSubscribe(l.ctx, s.cfg.prefix+":{*}:ev")
		l.others = append(l.others, ps)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.listen(ps, ready, false, func(ctx context.Context) {
				names, err := s.client.SMembers(ctx, s.roomsKey()).Result()
				if err == nil {
					for _, name := range names {
						s.resync(ctx, name)
					}
				}
			})
		}()
		l.mu.Unlock()
		waitReady(ready)
		return
	}

	// Sharded: the control channel (classic pub/sub, broadcast to every
	// node) announces new rooms; the rooms set lists the others.
	ctrl := s.client.Subscribe(l.ctx, s.controlChannel())
	l.others = append(l.others, ctrl)
	l.wg.Add(2)
	go func() {
		defer l.wg.Done()
		l.listen(ctrl, ready, false, func(ctx context.Context) { l.refresh(ctx, true) })
	}()
	go func() {
		defer l.wg.Done()
		t := time.NewTicker(refreshEvery)
		defer t.Stop()
		for {
			select {
			case <-l.ctx.Done():
				return
			case <-t.C:
				l.refresh(l.ctx, true)
			}
		}
	}()
	l.mu.Unlock()
	waitReady(ready)
	for _, r := range l.refresh(l.ctx, false) {
		waitReady(r.ready)
	}
}

func waitReady(ready chan struct{}) {
	t := time.NewTimer(readyWait)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C:
	}
}

// refresh follows every listed room and drops rooms no longer listed. It
// returns the subscriptions it started.
func (l *listener) refresh(ctx context.Context, announce bool) []*roomSub {
	names, err := l.s.client.SMembers(ctx, l.s.roomsKey()).Result()
	if err != nil {
		return nil
	}
	listed := make(map[string]bool, len(names))
	var started []*roomSub
	for _, name := range names {
		listed[name] = true
		if r := l.follow(name, announce); r != nil {
			started = append(started, r)
		}
	}
	l.mu.Lock()
	var gone []string
	for name := range l.rooms {
		if !listed[name] {
			gone = append(gone, name)
		}
	}
	l.mu.Unlock()
	for _, name := range gone {
		l.unfollow(name)
	}
	return started
}

// follow subscribes to room's sharded channel unless it already is, and
// returns the new subscription (nil if there was one). With announce, a
// synthetic event goes out once the subscription is confirmed: the room was
// discovered, not used here, and events before it were missed.
func (l *listener) follow(room string, announce bool) *roomSub {
	if !waitroom.ValidRoomName(room) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started || l.ctx.Err() != nil || l.rooms[room] != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(l.ctx)
	r := &roomSub{ps: l.s.client.SSubscribe(ctx, l.s.channel(room)), cancel: cancel, ready: make(chan struct{})}
	l.rooms[room] = r
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.listenCtx(ctx, r.ps, r.ready, announce, func(ctx context.Context) { l.s.resync(ctx, room) })
	}()
	return r
}

// ensure makes sure a room this process just used is followed before the
// call returns (sharded mode, once Subscribe was called). A consumer that
// reads the room after the call, as the push hub does when it starts
// watching, then misses nothing.
func (l *listener) ensure(room string) {
	if !l.s.sharded {
		return
	}
	l.mu.Lock()
	followed := !l.started || l.rooms[room] != nil
	l.mu.Unlock()
	if followed {
		return
	}
	if r := l.follow(room, false); r != nil {
		waitReady(r.ready)
	}
}

func (l *listener) unfollow(room string) {
	l.mu.Lock()
	r := l.rooms[room]
	delete(l.rooms, room)
	l.mu.Unlock()
	if r != nil {
		r.cancel()
		_ = r.ps.Close()
	}
}

func (l *listener) stop() {
	l.mu.Lock()
	if !l.started {
		l.mu.Unlock()
		return
	}
	l.cancel()
	rooms, others := l.rooms, l.others
	l.rooms, l.others = map[string]*roomSub{}, nil
	l.mu.Unlock()
	for _, r := range rooms {
		_ = r.ps.Close()
	}
	for _, ps := range others {
		_ = ps.Close()
	}
	l.wg.Wait()
}

func (l *listener) listen(ps *redis.PubSub, ready chan struct{}, announce bool, resync func(context.Context)) {
	l.listenCtx(l.ctx, ps, ready, announce, resync)
}

// pingEvery is how long a subscription may be silent before it is checked
// with a PING, so a dead connection is noticed.
const pingEvery = 15 * time.Second

// listenCtx receives from ps until ctx ends. After a lost connection,
// go-redis reconnects and subscribes again on the next receive; when that
// is confirmed, resync tells consumers to read afresh what they may have
// missed.
func (l *listener) listenCtx(ctx context.Context, ps *redis.PubSub, ready chan struct{}, announce bool, resync func(context.Context)) {
	defer ps.Close()
	lost, wait := announce, 10*time.Millisecond
	for ctx.Err() == nil {
		msg, err := ps.ReceiveTimeout(ctx, pingEvery)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if ps.Ping(ctx) == nil {
					continue
				}
			}
			lost = true
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, time.Second)
			continue
		}
		wait = 10 * time.Millisecond
		switch m := msg.(type) {
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "psubscribe", "ssubscribe":
				if ready != nil {
					close(ready)
					ready = nil
				}
				if lost {
					lost = false
					resync(ctx)
				}
			case "sunsubscribe":
				// The slot moved to another node (or we unsubscribed):
				// start over on whichever node has it now.
				if room, ok := l.roomOf(m.Channel); ok && ctx.Err() == nil {
					l.unfollow(room)
					l.follow(room, true)
				}
				return
			}
		case *redis.Message:
			l.deliver(m.Channel, m.Payload)
		}
	}
}

// roomOf returns the room of an event channel.
func (l *listener) roomOf(channel string) (string, bool) {
	p := l.s.cfg.prefix + ":{"
	rest, ok := strings.CutPrefix(channel, p)
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "}:ev")
}

// deliver hands a message from pub/sub to the local subscribers, unless
// this process made it (those were delivered when the script returned).
func (l *listener) deliver(channel, payload string) {
	s := l.s
	if channel == s.controlChannel() {
		l.follow(payload, true)
		return
	}
	e, pid, ok := decodeEventFrom(payload)
	if !ok {
		return
	}
	// Every event raises the room's marks, this process's own too (its
	// replies carry them only while someone subscribes): rewind.go.
	s.seeEvent(e)
	if pid == s.cfg.pid {
		return
	}
	e.Remote = true
	s.subs.publish(e)
}

// resyncFor bounds how long resync tries to read a room.
const resyncFor = 30 * time.Second

// resync delivers a synthetic event for room with its current totals, after
// a subscription was re-established: events may have been missed.
// A read that fails (a Redis that just came back may still be loading its
// data) is tried again for up to resyncFor, since consumers that miss the
// hint never learn to read again.
func (s *Store) resync(ctx context.Context, room string) {
	var r result
	var err error
	for wait, until := 50*time.Millisecond, time.Now().Add(resyncFor); ; wait = min(2*wait, time.Second) {
		r, err = s.run(ctx, "room", room, 0)
		if err == nil || time.Now().After(until) {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
	if err != nil || r.status != "ok" {
		return
	}
	info, at, err := decodeRoom(room, first(r.rest))
	if err != nil {
		return
	}
	s.subs.publish(waitroom.Event{
		Room:       room,
		Kind:       waitroom.EventSessions,
		At:         tm(at),
		Waiting:    info.Waiting,
		Active:     info.Active,
		LastTicket: info.LastTicket,
		Admissions: info.Admissions,
		Inversions: info.Inversions,
		Sold:       info.Sold,
		Remote:     true,
	})
}
