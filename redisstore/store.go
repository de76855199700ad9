package redisstore

import (
	"context"
	crand "crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
)

// The room script is nine files run as one (room.lua explains the split).
var (
	//go:embed room.lua
	roomShared string
	//go:embed fast.lua
	roomFast string
	//go:embed machinery.lua
	roomMachinery string
	//go:embed schedule.lua
	roomSchedule string
	//go:embed stock.lua
	roomStock string
	//go:embed operator.lua
	roomOperator string
	//go:embed tiers.lua
	roomTiers string
	//go:embed holds.lua
	roomHolds string
	//go:embed ops.lua
	roomOps string
)

// roomScript runs every operation on a room.
var roomScript = newScript(roomShared + "\n" + roomFast + "\n" + roomMachinery + "\n" + roomSchedule + "\n" + roomStock + "\n" + roomOperator + "\n" +
	roomTiers + "\n" + roomHolds + "\n" + roomOps)

// releaseScript gives up a sweep lease if this process holds it.
var releaseScript = newScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

// Store is the Redis waitroom.Store. It is safe for concurrent use, by any
// number of goroutines and processes.
type Store struct {
	client    redis.UniversalClient
	ownClient bool
	cfg       config
	sharded   bool
	pubCmd    string
	retention string
	histMax   string
	batch     string
	leaseMS   string

	subs subscribers
	lis  listener
	pipe pipeliner
	ack  *acker // sends every write and waits for its replicas (ack.go)

	// skip remembers, per room, until when another process holds the
	// sweep lease, so Sweep need not ask Redis again before then.
	skipMu sync.Mutex
	skip   map[string]time.Time
	held   map[string]bool // rooms whose lease this process took

	// drawn keeps each room's finished draw record: it never changes, so
	// Draw reads only the room's draw state to know the copy is current
	// (same digest, drawn at the same time), not 100,000 entries again.
	drawnMu sync.Mutex
	drawn   map[string]waitroom.DrawRecord

	// draws holds, per room, the channel closed when this process's draw
	// of it ends, so its callers wait for one draw (schedule.go).
	draws sync.Map

	// rw keeps each room's high-water marks and counts rewinds (rewind.go).
	rw rewinds

	closed atomic.Bool
}

var _ waitroom.Store = (*Store)(nil)

// New returns a Store on client, which the caller keeps and closes after
// the Store. It checks that Redis answers and is recent enough (6.2).
func New(ctx context.Context, client redis.UniversalClient, opts ...Option) (*Store, error) {
	c := config{prefix: "wr", retention: 24 * time.Hour, histMax: 100_000, lease: 3 * time.Second, batch: 1000,
		inFlight: defaultInFlight, drawStep: drawStep, drawLease: drawLease, ackReplicas: AckAuto, ackTimeout: DefaultAckTimeout}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if c.pid == "" {
		var b [8]byte
		_, _ = crand.Read(b[:])
		c.pid = hex.EncodeToString(b[:])
	}
	if _, ok := client.(*redis.Ring); ok {
		return nil, errors.New("redisstore: a Ring client is not supported; use a Client, a FailoverClient or a ClusterClient")
	}
	_, cluster := client.(*redis.ClusterClient)
	major, minor, err := serverVersion(ctx, client)
	if err != nil {
		return nil, waitroom.Unavailable(err, "redisstore: reaching Redis")
	}
	if major < 6 || (major == 6 && minor < 2) {
		return nil, fmt.Errorf("redisstore: Redis %d.%d is too old; 6.2 or later is needed", major, minor)
	}
	sharded := cluster && major >= 7
	if c.sharded != nil {
		sharded = *c.sharded
		if sharded && major < 7 {
			return nil, fmt.Errorf("redisstore: sharded pub/sub needs Redis 7, not %d.%d", major, minor)
		}
	}
	s := &Store{
		client:    client,
		cfg:       c,
		sharded:   sharded,
		pubCmd:    "PUBLISH",
		retention: strconv.FormatInt(c.retention.Milliseconds(), 10),
		histMax:   strconv.Itoa(c.histMax),
		batch:     strconv.Itoa(c.batch),
		leaseMS:   strconv.FormatInt(c.lease.Milliseconds(), 10),
		skip:      make(map[string]time.Time),
		held:      make(map[string]bool),
		drawn:     make(map[string]waitroom.DrawRecord),
	}
	if sharded {
		s.pubCmd = "SPUBLISH"
	}
	if read := readTimeout(client); read > 0 && c.ackReplicas != 0 && c.ackTimeout >= read {
		return nil, fmt.Errorf("redisstore: ack timeout %s must be shorter than the Redis read timeout %s (read_timeout in the URL)", c.ackTimeout, read)
	}
	s.ack = &acker{client: client, want: c.ackReplicas, timeout: c.ackTimeout, online: map[string]int{}, seen: map[string]bool{}}
	s.ack.cluster, _ = client.(*redis.ClusterClient)
	if c.ackReplicas == AckAuto {
		// The first count is read now, so the first write waits as it must.
		s.ack.readReplicas(ctx)
	}
	s.subs.fns = make(map[int]func(waitroom.Event))
	s.lis.s = s
	s.pipe = pipeliner{client: client, ack: s.ack, inFlight: c.inFlight, orphan: s.publishReply}
	return s, nil
}

// serverVersion returns the major and minor version of the Redis server.
func serverVersion(ctx context.Context, client redis.UniversalClient) (major, minor int, err error) {
	info, err := client.Info(ctx, "server").Result()
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:")
		if !ok {
			continue
		}
		parts := strings.SplitN(v, ".", 3)
		major, _ = strconv.Atoi(parts[0])
		if len(parts) > 1 {
			minor, _ = strconv.Atoi(parts[1])
		}
		return major, minor, nil
	}
	return 0, 0, errors.New("INFO server has no redis_version")
}

// ProcessID returns the id this store tags its events and leases with.
func (s *Store) ProcessID() string { return s.cfg.pid }

func (s *Store) usable() error {
	if s.closed.Load() {
		return waitroom.Errorf(waitroom.CodeUnavailable, "The store is closed.")
	}
	return nil
}

// keys returns the declared keys of room's script, all in one slot.
func (s *Store) keys(room string) []string {
	b := s.cfg.prefix + ":{" + room + "}:"
	return []string{b + "room", b + "seq", b + "wait", b + "active", b + "keys", b + "due", b + "hist", b + "lease"}
}

func (s *Store) channel(room string) string { return s.cfg.prefix + ":{" + room + "}:ev" }
func (s *Store) roomsKey() string           { return s.cfg.prefix + ":rooms" }
func (s *Store) controlChannel() string     { return s.cfg.prefix + ":rooms:ev" }

// args builds a script's ARGV.
func (s *Store) args(op, room string, now int64, wantEvent bool, extra ...any) []any {
	want := "0"
	if wantEvent {
		want = "1"
	}
	a := make([]any, 0, 10+len(extra))
	a = append(a, op, room, now, s.cfg.pid, s.pubCmd, s.channel(room), want, s.retention, s.histMax, s.batchArg(room))
	return append(a, extra...)
}

// run runs op on room at now until it completes, delivering the events of
// every run to local subscribers. Write operations whose expiry batch ran
// out are run again; each run makes progress, so this ends. An operation
// that finds the room's draw due runs again after the draw.
func (s *Store) run(ctx context.Context, op, room string, now int64, extra ...any) (result, error) {
	return s.runEv(ctx, op, room, now, nil, extra...)
}

// runEv is run with decorate, which, when not nil, completes this
// process's event of a reply before it is delivered.
func (s *Store) runEv(ctx context.Context, op, room string, now int64, decorate func(v []any, e *waitroom.Event), extra ...any) (result, error) {
	if err := s.usable(); err != nil {
		return result{}, err
	}
	keys := s.keys(room)
	var expired int
	for {
		want := s.subs.n.Load() > 0
		v, err := s.pipe.do(ctx, keys, s.args(op, room, now, want, extra...))
		if err != nil {
			return result{}, unavailable(err, fmt.Sprintf("redisstore: %s in room %q", op, room))
		}
		if len(v) < 2 {
			return result{}, waitroom.Unavailable(fmt.Errorf("reply %v", v), "redisstore: malformed script reply")
		}
		status, _ := v[0].(string)
		if status == "rewound" {
			// Failover lost writes: the room's counters were moved past
			// this process's marks; the operation runs again (rewind.go).
			s.rewound(room, v)
			continue
		}
		s.deliverReply(v, decorate)
		if status == "more" {
			expired += int(num(v, 2))
			continue
		}
		if status == "draw" {
			// The room's draw is due or being applied: apply it (or wait
			// for the process that does), then run op again.
			if err := s.completeDraw(ctx, room); err != nil {
				return result{}, err
			}
			continue
		}
		if status != "room_not_found" {
			s.lis.ensure(room)
		}
		r := result{status: status, rest: v[2:], expired: expired}
		s.seeReply(op, room, r)
		return r, nil
	}
}

// publishReply delivers the event of a script's reply to this process's
// subscribers.
func (s *Store) publishReply(v []any) { s.deliverReply(v, nil) }

// deliverReply is publishReply with decorate (see runEv).
func (s *Store) deliverReply(v []any, decorate func(v []any, e *waitroom.Event)) {
	if len(v) < 2 {
		return
	}
	if ev, _ := v[1].(string); ev != "" {
		if e, ok := decodeEvent(ev); ok {
			if decorate != nil {
				decorate(v, &e)
			}
			s.seeEvent(e)
			s.subs.publish(e)
		}
	}
}

// PutRoom implements waitroom.Store (revisions.go has the work, shared
// with UpdateRoom).
func (s *Store) PutRoom(ctx context.Context, name string, cfg waitroom.RoomConfig, now time.Time) (waitroom.Room, bool, error) {
	return s.putRoom(ctx, name, cfg, now, "putroom")
}

// settle expires and admits at now without the lease, until done.
func (s *Store) settle(ctx context.Context, room string, now time.Time) (result, error) {
	r, err := s.run(ctx, "sweep", room, now.UnixMilli(), 0)
	if err != nil {
		return r, err
	}
	return r, errorFor(room, r)
}

// Room implements waitroom.Store.
func (s *Store) Room(ctx context.Context, name string) (waitroom.Room, error) {
	if err := s.usable(); err != nil {
		return waitroom.Room{}, err
	}
	if err := waitroom.CheckRoomName(name); err != nil {
		return waitroom.Room{}, err
	}
	r, err := s.run(ctx, "room", name, 0)
	if err != nil {
		return waitroom.Room{}, err
	}
	if err := errorFor(name, r); err != nil {
		return waitroom.Room{}, err
	}
	room, _, err := decodeRoom(name, first(r.rest))
	return room, err
}

// Rooms implements waitroom.Store. It reads every listed room in one
// pipeline and skips names whose room no longer exists.
func (s *Store) Rooms(ctx context.Context) ([]waitroom.Room, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	names, err := s.client.SMembers(ctx, s.roomsKey()).Result()
	if err != nil {
		return nil, waitroom.Unavailable(err, "redisstore: listing rooms")
	}
	slices.Sort(names)
	cmds := make([]*redis.Cmd, len(names))
	// A read may end a batch of a sold-out line (stock.lua): its event
	// goes to this process's subscribers like any other.
	want := s.subs.n.Load() > 0
	_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, name := range names {
			cmds[i] = roomScript.EvalSha(ctx, p, s.keys(name), s.args("room", name, 0, want)...)
		}
		return nil
	})
	if err != nil && !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return nil, waitroom.Unavailable(err, "redisstore: reading rooms")
	}
	out := make([]waitroom.Room, 0, len(names))
	for i, name := range names {
		v, err := cmds[i].Slice()
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			// A node that has not seen the script yet: once through Run
			// loads it.
			v, err = roomScript.Run(ctx, s.client, s.keys(name), s.args("room", name, 0, want)...).Slice()
		}
		if err != nil {
			return nil, waitroom.Unavailable(err, "redisstore: reading room "+name)
		}
		s.publishReply(v)
		if st := str(v, 0); st == "draw" || st == "more" {
			// The room's draw is being applied, or the line of a room
			// that sold out is being ended: wait for it.
			room, err := s.Room(ctx, name)
			if waitroom.ErrorCode(err) == waitroom.CodeRoomNotFound {
				continue
			}
			if err != nil {
				return nil, err
			}
			out = append(out, room)
			continue
		}
		if len(v) < 3 || str(v, 0) != "ok" {
			continue // deleted since it was listed
		}
		room, _, err := decodeRoom(name, v[2])
		if err != nil {
			return nil, err
		}
		out = append(out, room)
	}
	return out, nil
}

// DeleteRoom implements waitroom.Store.
func (s *Store) DeleteRoom(ctx context.Context, name string, force bool, now time.Time) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := waitroom.CheckRoomName(name); err != nil {
		return err
	}
	f := "0"
	if force {
		f = "1"
	}
	r, err := s.run(ctx, "deleteroom", name, now.UnixMilli(), f)
	if err != nil {
		return err
	}
	if err := errorFor(name, r); err != nil {
		return err
	}
	// Take the name off the list, then put it back if another process has
	// created the room again meanwhile, so the list never loses a room
	// that exists.
	if err := s.write(ctx, "unlisting room "+name, redis.NewIntCmd(ctx, "srem", s.roomsKey(), name)); err != nil {
		return err
	}
	if n, err := s.client.Exists(ctx, s.keys(name)[0]).Result(); err == nil && n > 0 {
		_ = s.write(ctx, "listing room "+name, redis.NewIntCmd(ctx, "sadd", s.roomsKey(), name))
	}
	// The script deleted the room's webhooks; unlisting them is best
	// effort: HookRooms skips a room whose webhooks are gone.
	_ = s.unlistHooks(ctx, name)
	s.skipMu.Lock()
	delete(s.skip, name)
	delete(s.held, name)
	s.skipMu.Unlock()
	return nil
}

// Join implements waitroom.Store: JoinWith (tiers.go) with just the key.
func (s *Store) Join(ctx context.Context, room string, key string, now time.Time) (waitroom.Session, error) {
	return s.JoinWith(ctx, room, waitroom.JoinRequest{Key: key}, now)
}

func (s *Store) sessionOp(ctx context.Context, op, room, id string, now time.Time, extra ...any) (result, error) {
	if err := s.usable(); err != nil {
		return result{}, err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return result{}, err
	}
	r, err := s.run(ctx, op, room, now.UnixMilli(), append(idArgs(id), extra...)...)
	if err != nil {
		return result{}, err
	}
	return r, errorFor(room, r)
}

func (s *Store) sessionResult(ctx context.Context, op, room, id string, now time.Time, extra ...any) (waitroom.Session, error) {
	r, err := s.sessionOp(ctx, op, room, id, now, extra...)
	if err != nil {
		return waitroom.Session{}, err
	}
	out, ok := decodeSession(room, first(r.rest))
	if !ok {
		return waitroom.Session{}, malformed(op, r.rest)
	}
	return out, nil
}

// Session implements waitroom.Store.
func (s *Store) Session(ctx context.Context, room, id string, now time.Time) (waitroom.Session, error) {
	return s.sessionResult(ctx, "session", room, id, now)
}

// Heartbeat implements waitroom.Store.
func (s *Store) Heartbeat(ctx context.Context, room, id string, now time.Time) (waitroom.Session, error) {
	return s.sessionResult(ctx, "heartbeat", room, id, now)
}

// Away implements waitroom.Store.
func (s *Store) Away(ctx context.Context, room, id string, now time.Time) error {
	_, err := s.sessionOp(ctx, "away", room, id, now)
	return err
}

// Leave implements waitroom.Store.
func (s *Store) Leave(ctx context.Context, room, id string, reason waitroom.Reason, now time.Time) (waitroom.Session, error) {
	if reason != waitroom.ReasonLeft && reason != waitroom.ReasonRevoked {
		return waitroom.Session{}, waitroom.Errorf(waitroom.CodeInvalidRequest, "A session leaves with reason left or revoked, not %q.", string(reason))
	}
	return s.sessionResult(ctx, "leave", room, id, now, string(reason))
}

// Advance implements waitroom.Store.
func (s *Store) Advance(ctx context.Context, room string, n int, now time.Time) ([]waitroom.Session, error) {
	if n < 1 || n > waitroom.MaxAdvance {
		return nil, waitroom.Errorf(waitroom.CodeInvalidRequest, "n must be between 1 and %d.", waitroom.MaxAdvance)
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, "advance", room, now.UnixMilli(), n)
	if err != nil {
		return nil, err
	}
	if err := errorFor(room, r); err != nil {
		return nil, err
	}
	list, _ := first(r.rest).([]any)
	out := make([]waitroom.Session, 0, len(list))
	for _, x := range list {
		v, ok := decodeSession(room, x)
		if !ok {
			return nil, malformed("advance", x)
		}
		out = append(out, v)
	}
	return out, nil
}

// Sweep implements waitroom.Store. Only the holder of the room's sweep
// lease sweeps; for any other process it returns a zero result at once
// (see the package documentation).
func (s *Store) Sweep(ctx context.Context, room string, now time.Time) (waitroom.SweepResult, error) {
	if err := s.usable(); err != nil {
		return waitroom.SweepResult{}, err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return waitroom.SweepResult{}, err
	}
	lease := s.leaseMS
	if s.cfg.lease > 0 {
		s.skipMu.Lock()
		until, ok := s.skip[room]
		s.skipMu.Unlock()
		// The lease is about process liveness, so it runs on the real
		// clock, not on now.
		if ok && time.Now().Before(until) {
			return waitroom.SweepResult{}, nil
		}
	}
	r, err := s.run(ctx, "sweep", room, now.UnixMilli(), lease)
	if err != nil {
		return waitroom.SweepResult{}, err
	}
	if r.status == "leased" {
		s.skipMu.Lock()
		s.skip[room] = time.Now().Add(time.Duration(max(num(r.rest, 0), 1)) * time.Millisecond)
		delete(s.held, room)
		s.skipMu.Unlock()
		return waitroom.SweepResult{}, nil
	}
	if err := errorFor(room, r); err != nil {
		return waitroom.SweepResult{}, err
	}
	if s.cfg.lease > 0 {
		s.skipMu.Lock()
		delete(s.skip, room)
		s.held[room] = true
		s.skipMu.Unlock()
	}
	return waitroom.SweepResult{
		Expired:  r.expired + int(num(r.rest, 0)),
		Admitted: int(num(r.rest, 1)),
		Next:     tm(num(r.rest, 2)),
	}, nil
}

// Ping implements waitroom.Store.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.client.Ping(ctx).Err(); err != nil {
		return waitroom.Unavailable(err, "redisstore: PING")
	}
	return nil
}

// Close implements waitroom.Store: it stops the event subscription, gives
// up the sweep leases this process holds (so another takes over at once),
// and closes the client if Open made it.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.lis.stop()
	s.skipMu.Lock()
	held := make([]string, 0, len(s.held))
	for room := range s.held {
		held = append(held, room)
	}
	s.held = map[string]bool{}
	s.skipMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, room := range held {
		_, _ = s.script(ctx, "giving up a sweep lease", releaseScript, []string{s.keys(room)[7]}, s.cfg.pid)
	}
	if s.ownClient {
		return s.client.Close()
	}
	return nil
}
