package redisstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
)

// Scheduled rooms. A room with opens_at collects a pre-queue, then gives
// every entrant a ticket in one draw ordered by HMAC-SHA256(seed, entry).
// Lua cannot compute HMACs, so the draw is computed here and applied by the
// script in steps (schedule.lua explains the protocol): an operation that
// finds the draw due freezes the room and answers "draw"; run then calls
// completeDraw, which reads the seed and the frozen pre-queue, orders it,
// and sends the order in steps of drawStep entrants, then runs the
// operation again. Every process computes the same order from the same
// frozen state, and the script applies each step once, so processes that
// draw at once make one draw; a lease lets one of them do the work while
// the others wait, and another take over should it die.

const (
	// drawStep is the most entrants one script run of a draw applies, so
	// a large draw does not hold Redis' event loop for long at a time.
	drawStep = 10_000
	// drawWindow is how many steps go to Redis in one round trip: Redis
	// runs one while the next travels, and a round stays well within the
	// client's read timeout.
	drawWindow = 3
	// drawLease is how long a process may drive a room's draw without
	// making progress before another takes over; each step renews it.
	drawLease = 30 * time.Second
	// drawPoll is how often a process waiting for another's draw looks.
	drawPoll = 10 * time.Millisecond
	// scanCount is how many entries one read of a pre-queue or of a
	// published draw asks for.
	scanCount = 10_000
)

// acquireScript takes a lease unless another process holds it.
var acquireScript = newScript(`local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`)

// schedKey returns the key of one of room's schedule structures (see
// schedule.lua), in the room's slot.
func (s *Store) schedKey(room, name string) string {
	return s.cfg.prefix + ":{" + room + "}:" + name
}

// drawInfo is a room's schedule as the script's drawinfo read reports it.
type drawInfo struct {
	sch       string // "pre", "closing" or "drawn"
	opens     int64
	entrants  int64
	seed      string
	at, first int64
	digest    string
	count     int64
	// While closing: the draw's time, first ticket and next offset.
	dnow, dfirst, dnext int64
}

// readDrawInfo reads room's schedule. With wait, a draw being applied is
// completed first.
func (s *Store) readDrawInfo(ctx context.Context, room string, wait bool) (drawInfo, error) {
	w := "0"
	if wait {
		w = "1"
	}
	r, err := s.run(ctx, "drawinfo", room, 0, w)
	if err != nil {
		return drawInfo{}, err
	}
	if err := errorFor(room, r); err != nil {
		return drawInfo{}, err
	}
	v := r.rest
	if len(v) < 11 {
		return drawInfo{}, malformed("drawinfo", v)
	}
	return drawInfo{
		sch: str(v, 0), opens: num(v, 1), entrants: num(v, 2), seed: str(v, 3),
		at: num(v, 4), first: num(v, 5), digest: str(v, 6), count: num(v, 7),
		dnow: num(v, 8), dfirst: num(v, 9), dnext: num(v, 10),
	}, nil
}

// Draw implements waitroom.Store. A draw being applied is completed first;
// the published entries are read in pages and their values computed here,
// once: the finished record is kept, and later calls check only that the
// room's draw is still the same one. Entries is shared: read it, never
// change it.
func (s *Store) Draw(ctx context.Context, room string) (waitroom.DrawRecord, error) {
	if err := s.usable(); err != nil {
		return waitroom.DrawRecord{}, err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return waitroom.DrawRecord{}, err
	}
	for attempt := 0; ; attempt++ {
		in, err := s.readDrawInfo(ctx, room, true)
		if err != nil {
			return waitroom.DrawRecord{}, err
		}
		seed, err := waitroom.ParseDrawSeed(in.seed)
		if err != nil {
			return waitroom.DrawRecord{}, waitroom.Unavailable(err, fmt.Sprintf("redisstore: the draw seed of room %q", room))
		}
		d := waitroom.DrawRecord{
			Room:       room,
			OpensAt:    tm(in.opens),
			Commitment: seed.Commitment(),
			Entrants:   int(in.entrants),
		}
		if in.sch != "drawn" {
			return d, nil
		}
		s.drawnMu.Lock()
		kept, ok := s.drawn[room]
		s.drawnMu.Unlock()
		// The seed (so the commitment) tells one incarnation of a room
		// from another, even when both drew nobody at the same instant.
		if ok && kept.Commitment == d.Commitment && kept.Digest == in.digest && kept.DrawnAt.Equal(tm(in.at)) &&
			kept.FirstTicket == in.first && kept.OpensAt.Equal(d.OpensAt) {
			return kept, nil
		}
		list, err := s.drawList(ctx, room, in.count)
		if err != nil {
			return waitroom.DrawRecord{}, err
		}
		entries := make([]waitroom.DrawEntry, len(list))
		for i, e := range list {
			v := waitroom.DrawValue(seed, e.entry)
			entries[i] = waitroom.DrawEntry{Entry: e.entry, Value: hex.EncodeToString(v[:]), Ticket: in.first + int64(i)}
		}
		if waitroom.DrawDigest(entries) != in.digest {
			// The room was deleted and made again between the reads.
			if attempt < 3 {
				continue
			}
			return waitroom.DrawRecord{}, waitroom.Unavailable(errors.New("the entries do not match the digest"),
				fmt.Sprintf("redisstore: reading the draw of room %q", room))
		}
		d.Drawn = true
		d.DrawnAt = tm(in.at)
		d.Entrants = len(entries)
		d.Seed = seed.String()
		d.FirstTicket = in.first
		d.Entries = entries
		d.Digest = in.digest
		s.drawnMu.Lock()
		s.drawn[room] = d
		s.drawnMu.Unlock()
		return d, nil
	}
}

// drawnEntry is one entry of a published draw: its entry number and entry.
type drawnEntry struct {
	n     int64
	entry string
}

// drawList reads the count entries of room's published draw, in order.
func (s *Store) drawList(ctx context.Context, room string, count int64) ([]drawnEntry, error) {
	key := s.schedKey(room, "dlist")
	out := make([]drawnEntry, 0, count)
	for start := int64(0); start < count; start += scanCount {
		vals, err := s.client.LRange(ctx, key, start, min(start+scanCount, count)-1).Result()
		if err != nil {
			return nil, waitroom.Unavailable(err, fmt.Sprintf("redisstore: reading the draw of room %q", room))
		}
		for _, x := range vals {
			ns, entry, ok := strings.Cut(x, " ")
			n, err := strconv.ParseInt(ns, 10, 64)
			if !ok || err != nil {
				return nil, malformed("draw list", x)
			}
			out = append(out, drawnEntry{n, entry})
		}
	}
	return out, nil
}

// completeDraw applies room's draw, which an operation found due or being
// applied, or waits for the process that applies it. Callers in this
// process share one attempt; only the one that made it reports its error,
// the others run their operation again.
func (s *Store) completeDraw(ctx context.Context, room string) error {
	done := make(chan struct{})
	if other, busy := s.draws.LoadOrStore(room, done); busy {
		select {
		case <-other.(chan struct{}):
			return nil
		case <-ctx.Done():
			return waitroom.Unavailable(ctx.Err(), fmt.Sprintf("redisstore: waiting for the draw of room %q", room))
		}
	}
	defer func() {
		s.draws.Delete(room)
		close(done)
	}()
	lease := s.schedKey(room, "dl")
	for {
		v, err := s.script(ctx, "taking a draw lease", acquireScript, []string{lease}, s.cfg.pid, s.cfg.drawLease.Milliseconds())
		ok, _ := v.(int64)
		if err != nil {
			return waitroom.Unavailable(err, fmt.Sprintf("redisstore: taking the draw of room %q", room))
		}
		if ok == 1 {
			err := s.applyDraw(ctx, room)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_, _ = s.script(rctx, "giving up a draw lease", releaseScript, []string{lease}, s.cfg.pid)
			cancel()
			return err
		}
		// Another process draws: wait until it is done, or until its
		// lease lapses and this one takes over.
		sch, err := s.client.HGet(ctx, s.keys(room)[0], "sch").Result()
		if errors.Is(err, redis.Nil) || (err == nil && sch != "closing") {
			return nil
		}
		if err != nil {
			return waitroom.Unavailable(err, fmt.Sprintf("redisstore: waiting for the draw of room %q", room))
		}
		t := time.NewTimer(drawPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return waitroom.Unavailable(ctx.Err(), fmt.Sprintf("redisstore: waiting for the draw of room %q", room))
		case <-t.C:
		}
	}
}

// preEntrant is a live entrant of a frozen pre-queue.
type preEntrant struct {
	n      int64
	secret [16]byte
	key    string
}

// applyDraw computes the draw of a closing room and applies it from where
// the room says it stands. It does nothing for a room that is not closing.
func (s *Store) applyDraw(ctx context.Context, room string) error {
	in, err := s.readDrawInfo(ctx, room, false)
	if err != nil {
		if c := waitroom.ErrorCode(err); c == waitroom.CodeRoomNotFound || c == waitroom.CodeNotFound {
			return nil // the operation, run again, answers for itself
		}
		return err
	}
	if in.sch != "closing" {
		return nil
	}
	seed, err := waitroom.ParseDrawSeed(in.seed)
	if err != nil {
		return waitroom.Unavailable(err, fmt.Sprintf("redisstore: the draw seed of room %q", room))
	}
	ents, err := s.readPreQueue(ctx, room, in.entrants)
	if err != nil {
		return err
	}
	names := make([]string, len(ents))
	numOf := make(map[string]int64, len(ents))
	for i, e := range ents {
		names[i] = waitroom.EntryFor(room, e.key, e.secret)
		numOf[names[i]] = e.n
	}
	order := waitroom.DrawOrder(seed, names, in.dfirst)
	digest := waitroom.DrawDigest(order)
	total := int64(len(order))
	keys := s.keys(room)
	want := s.subs.n.Load() > 0
	// stepArgs is the script's ARGV for the step at off.
	stepArgs := func(off int64) []any {
		end := min(off+int64(s.cfg.drawStep), total)
		args := make([]any, 0, 4+2*(end-off))
		args = append(args, off, total, digest, s.cfg.drawLease.Milliseconds())
		for _, e := range order[off:end] {
			args = append(args, numOf[e.Entry], e.Entry)
		}
		return s.args("drawstep", room, 0, want, args...)
	}
	for off := in.dnext; ; {
		if off < 0 || off > total {
			return waitroom.Unavailable(fmt.Errorf("offset %d of %d", off, total), fmt.Sprintf("redisstore: the draw of room %q", room))
		}
		// Up to drawWindow steps go in one round trip, at the offsets the
		// room will expect, so Redis does not wait for this process
		// between steps; each is still its own script run.
		var cmds []redis.Cmder
		for o := off; len(cmds) < drawWindow && (o < total || len(cmds) == 0); o += int64(s.cfg.drawStep) {
			cmds = append(cmds, evalshaCmd(ctx, roomScript, keys, stepArgs(o)))
		}
		// One WAIT for the window's steps.
		acks := s.ack.exec(ctx, true, "applying a draw", cmds...)
		for i, cmd := range cmds {
			v, err := cmd.(*redis.Cmd).Slice()
			if redis.HasErrorPrefix(err, "NOSCRIPT") {
				// Redis lost its scripts; this step did not run. EVAL
				// loads the script again.
				var x any
				x, err = s.script(ctx, "applying a draw", roomScript, keys, stepArgs(off)...)
				acks[i] = nil // s.script waited for it
				v, _ = x.([]any)
			}
			if err == nil {
				err = acks[i]
			}
			if err != nil {
				return waitroom.Unavailable(err, fmt.Sprintf("redisstore: applying the draw of room %q", room))
			}
			status, next := str(v, 0), num(v, 2)
			switch status {
			case "ok":
				if next != total {
					s.publishReply(v)
					break
				}
				numbers := make([]int64, len(order))
				for i, e := range order {
					numbers[i] = numOf[e.Entry]
				}
				s.publishDraw(v, &waitroom.DrawState{
					Seed: seed, OpensAt: tm(in.opens), Drawn: true, DrawnAt: tm(in.dnow),
					FirstTicket: in.dfirst, Entries: order, EntryNumbers: numbers, Digest: digest,
				})
				return nil
			case "skip": // another process applied this step
			case "done":
				return nil
			default:
				return malformed("drawstep", v)
			}
			if next != off+min(int64(s.cfg.drawStep), total-off) {
				// Not where this window expected to be: start from where
				// the room stands.
				off = next
				break
			}
			off = next
		}
	}
}

// publishDraw delivers the event of a draw's last step with the draw.
func (s *Store) publishDraw(v []any, st *waitroom.DrawState) {
	s.deliverReply(v, func(_ []any, e *waitroom.Event) { e.Draw = st })
}

// withScheduleSeed gives the config event of a PutRoom that scheduled the
// room, or moved its opening before the draw, the draw's state with its
// seed, as the contract asks. Only this process's event carries it: the
// seed never goes over pub/sub.
func withScheduleSeed(v []any, e *waitroom.Event) {
	// The reply: status, event, created, info, more, draw, seed, opening.
	if str(v, 0) != "ok" || e.Kind != waitroom.EventConfig {
		return
	}
	seed, err := waitroom.ParseDrawSeed(str(v, 6))
	if err != nil {
		return
	}
	e.Draw = &waitroom.DrawState{Seed: seed, OpensAt: tm(num(v, 7))}
}

// readPreQueue reads the want live entrants of room's frozen pre-queue.
func (s *Store) readPreQueue(ctx context.Context, room string, want int64) ([]preEntrant, error) {
	key := s.schedKey(room, "pre")
	out := make([]preEntrant, 0, want)
	seen := make(map[int64]bool, want)
	var cursor uint64
	for {
		kv, next, err := s.client.HScan(ctx, key, cursor, "", scanCount).Result()
		if err != nil {
			return nil, waitroom.Unavailable(err, fmt.Sprintf("redisstore: reading the pre-queue of room %q", room))
		}
		for i := 0; i+1 < len(kv); i += 2 {
			n, err := strconv.ParseInt(kv[i], 10, 64)
			if err != nil {
				return nil, malformed("pre-queue", kv[i])
			}
			if seen[n] {
				continue // HSCAN may return an entry twice
			}
			seen[n] = true
			// secret, joined, key, and in a room with tiers the tier.
			f := strings.SplitN(kv[i+1], "\t", 4)
			var e preEntrant
			if len(f) < 3 || hex.DecodedLen(len(f[0])) != len(e.secret) {
				return nil, malformed("pre-queue", kv[i+1])
			}
			if _, err := hex.Decode(e.secret[:], []byte(f[0])); err != nil {
				return nil, malformed("pre-queue", kv[i+1])
			}
			e.n, e.key = n, f[2]
			out = append(out, e)
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	if int64(len(out)) != want {
		return nil, waitroom.Unavailable(fmt.Errorf("it holds %d entrants, the room counts %d", len(out), want),
			fmt.Sprintf("redisstore: reading the pre-queue of room %q", room))
	}
	return out, nil
}
