package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
)

// Acknowledged means replicated. Redis replicates asynchronously: a write
// the primary answered may still be lost when a replica is promoted
// without it (a crash, a failover, a split brain). So every write this
// store answers for waits, before it is answered, until the replicas have
// it: its pipeline ends with WAIT numreplicas timeout, on the connection
// that carried the writes (WAIT counts the writes of its own connection).
// A write they do not confirm in time answers unavailable; it may still
// have happened, as after any timeout, and the client retries with its
// key. A primary that has been replaced has no replicas left to confirm
// anything, so waiting also fences a split brain.
//
// exec is the one place that sends writes: every write path goes through
// it, and it alone adds the WAIT. In a Cluster, WAIT has no key, so
// go-redis would send it to any node; exec sends one pipeline to each
// primary that holds a command's key, each with its own WAIT.

// AckAuto is WithAckReplicas' "auto": wait for every replica the primary
// reports online, and for at least one once any replica was seen.
const AckAuto = -1

// Acknowledgement defaults and limits.
const (
	// DefaultAckTimeout is how long a write waits for its replicas by
	// default.
	DefaultAckTimeout = time.Second
	// ackRefresh is how often auto reads the primaries' replicas (INFO
	// replication), so the count costs nothing per call.
	ackRefresh = time.Second
	// ackRefreshSoon is the soonest auto reads them again after a write
	// its replicas did not confirm (a replica may have gone).
	ackRefreshSoon = 100 * time.Millisecond
	// autoMaxLag is the longest, in seconds, since a replica's last
	// acknowledgement for auto to count it: a replica that is connected
	// but stuck (a frozen host) stops being waited for after that. The
	// floor of one replica stays.
	autoMaxLag = 2
)

// errNotReplicated is the cause of a write its replicas did not confirm.
var errNotReplicated = errors.New("the replicas did not confirm the write in time")

// notReplicated is the error a caller gets for a write its replicas did
// not confirm: unavailable, saying that it may have happened.
func notReplicated(what string, got, want int, timeout time.Duration) error {
	return &waitroom.Error{
		Code: waitroom.CodeUnavailable,
		Message: "The change could not be confirmed in time and may or may not have been made; " +
			"try again shortly (a join tried again with the same key finds its session).",
		Err: fmt.Errorf("%s: %d of %d replicas confirmed within %s: %w", what, got, want, timeout, errNotReplicated),
	}
}

// acker sends writes and waits for their replicas (see above).
type acker struct {
	client  redis.UniversalClient
	cluster *redis.ClusterClient // the same client when it is a Cluster
	want    int                  // replicas to wait for; AckAuto; 0: none
	timeout time.Duration

	// timeouts counts the pipelines whose replicas did not confirm them.
	timeouts atomic.Uint64

	mu     sync.Mutex
	online map[string]int  // auto: online replicas per primary ("" outside a Cluster)
	seen   map[string]bool // auto: primaries (by address) that had a replica online at some time
	// unsure: auto, primaries whose count may be stale, because a call to
	// them failed on the connection (gone, or replaced after a failover:
	// the new primary has its own replicas, and the old count would make
	// the first writes wait out the timeout for replicas it never had).
	// The next write reads the count first.
	unsure     map[string]bool
	refreshed  time.Time
	refreshing bool
}

// ackResult is what exec tells of each command: whether its writes were
// confirmed (err nil) or not (the unavailable error of notReplicated).
type ackResult []error

// exec runs cmds, each on one key's slot, and, when wait, ends each
// primary's pipeline with WAIT. It returns, per command, nil or the error
// saying the primary's replicas did not confirm it in time; the commands'
// own replies and errors are in the commands. Reads need not wait: what
// they show may include others' writes not yet confirmed, as any Redis
// read may.
func (a *acker) exec(ctx context.Context, wait bool, what string, cmds ...redis.Cmder) ackResult {
	out := make(ackResult, len(cmds))
	if len(cmds) == 0 {
		return out
	}
	if !wait || a.want == 0 || (a.want == AckAuto && !a.anySeen()) {
		// Nothing to wait for: go-redis routes the pipeline (in a Cluster
		// following MOVED and ASK itself).
		pipe := a.client.Pipeline()
		for _, c := range cmds {
			_ = pipe.Process(ctx, c)
		}
		_, _ = pipe.Exec(ctx) // each command's error is in it
		return out
	}
	if a.cluster == nil {
		a.execNode(ctx, a.client, "", what, cmds, out, nil)
		return out
	}
	// A Cluster: one pipeline, and one WAIT, per primary.
	type group struct {
		node *redis.Client
		cmds []redis.Cmder
		idx  []int
	}
	groups := map[string]*group{}
	var order []*group
	for i, c := range cmds {
		node, err := a.cluster.MasterForKey(ctx, cmdKey(c))
		if err != nil {
			c.SetErr(err)
			continue
		}
		addr := node.Options().Addr
		g := groups[addr]
		if g == nil {
			g = &group{node: node}
			groups[addr] = g
			order = append(order, g)
		}
		g.cmds = append(g.cmds, c)
		g.idx = append(g.idx, i)
	}
	var wg sync.WaitGroup
	for _, g := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.execNode(ctx, g.node, g.node.Options().Addr, what, g.cmds, out, g.idx)
		}()
	}
	wg.Wait()
	for _, c := range cmds {
		err := c.Err()
		var reply redis.Error
		if err != nil && !errors.Is(err, redis.Nil) && (redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK") ||
			redis.HasErrorPrefix(err, "CLUSTERDOWN") || !errors.As(err, &reply)) {
			// The slot moved (a failover, a resharding), or its primary
			// cannot be reached: reload the slot map so the next call goes
			// to the right primary. go-redis does this for its own
			// pipelines; these are sent to each primary directly.
			a.cluster.ReloadState(ctx)
			break
		}
	}
	return out
}

// execNode sends cmds in one pipeline on node, the primary named addr,
// ending with WAIT for the replicas it must have; out[idx[i]] (out[i]
// when idx is nil) gets each command's acknowledgement.
func (a *acker) execNode(ctx context.Context, node redis.UniversalClient, addr, what string, cmds []redis.Cmder, out ackResult, idx []int) {
	n := a.replicas(ctx, node, addr)
	pipe := node.Pipeline()
	for _, c := range cmds {
		_ = pipe.Process(ctx, c)
	}
	var w *redis.IntCmd
	if n > 0 {
		w = redis.NewIntCmd(ctx, "wait", n, a.timeout.Milliseconds())
		_ = pipe.Process(ctx, w)
	}
	_, _ = pipe.Exec(ctx) // each command's error is in it
	if w == nil {
		return
	}
	got, err := w.Result()
	if err == nil && int(got) >= n {
		return
	}
	// Only commands that reached Redis may have written; a command that
	// failed to be sent already says so itself.
	a.timeouts.Add(1)
	a.refresh(true)
	var fail error
	var reply redis.Error
	if err != nil && !errors.As(err, &reply) {
		// The connection failed: the primary may be gone, and the next
		// one has replicas of its own.
		a.setUnsure(addr)
	}
	if err != nil {
		fail = waitroom.Unavailable(fmt.Errorf("WAIT: %w", err), "redisstore: "+what)
	} else {
		fail = notReplicated("redisstore: "+what, int(got), n, a.timeout)
	}
	for i := range cmds {
		j := i
		if idx != nil {
			j = idx[i]
		}
		out[j] = fail
	}
}

// first returns the first error of r, or nil.
func (r ackResult) first() error {
	for _, err := range r {
		if err != nil {
			return err
		}
	}
	return nil
}

// cmdKey returns the key a command runs on: EVAL's and EVALSHA's first
// key, else the first argument. Every command exec sends has one slot.
func cmdKey(c redis.Cmder) string {
	args := c.Args()
	name := strings.ToLower(fmt.Sprint(args[0]))
	if (name == "evalsha" || name == "eval") && len(args) > 3 {
		return fmt.Sprint(args[3])
	}
	if len(args) > 1 {
		return fmt.Sprint(args[1])
	}
	return ""
}

// replicas returns how many replicas a write on the primary addr waits
// for.
func (a *acker) replicas(ctx context.Context, node redis.UniversalClient, addr string) int {
	if a.want >= 0 {
		return a.want
	}
	a.mu.Lock()
	unsure := a.unsure[addr]
	a.mu.Unlock()
	if unsure {
		// A round trip now, once, rather than a write that waits the
		// whole timeout for a replica the primary does not have.
		if c, ok := node.(*redis.Client); ok {
			_ = a.readNode(ctx, c, addr)
		}
	}
	a.refresh(false)
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.online[addr]
	// The floor is per primary: a primary that had a replica and lost it
	// (cut off, or replaced and still running: a split brain) confirms
	// nothing. A Cluster replica just promoted is another address, with
	// no replica until the old node comes back as one: it waits for the
	// replicas it has, none, rather than refuse its shard's writes until
	// then (Redis Cluster fences a cut-off master itself after
	// cluster-node-timeout). Outside a Cluster the address is "": after a
	// Sentinel failover the floor of one stays, and Sentinel re-points the
	// other replicas to the new primary within a second or two.
	if a.seen[addr] && n < 1 {
		n = 1
	}
	return n
}

// anySeen reports, for auto, whether any replica was seen online, reading
// the count again when it is due.
func (a *acker) anySeen() bool {
	a.refresh(false)
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seen) > 0
}

// refresh reads, for auto, the primaries' online replicas in the
// background when the last reading is older than ackRefresh (ackRefreshSoon
// when soon: a write just went unconfirmed).
func (a *acker) refresh(soon bool) {
	if a.want != AckAuto {
		return
	}
	every := ackRefresh
	if soon {
		every = ackRefreshSoon
	}
	a.mu.Lock()
	if a.refreshing || time.Since(a.refreshed) < every {
		a.mu.Unlock()
		return
	}
	a.refreshing = true
	a.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		a.readReplicas(ctx)
	}()
}

// readReplicas reads every primary's online replicas (INFO replication)
// now. A primary that does not answer keeps its last count.
func (a *acker) readReplicas(ctx context.Context) {
	if a.cluster != nil {
		var mu sync.Mutex
		masters := map[string]bool{}
		_ = a.cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			mu.Lock()
			masters[c.Options().Addr] = true
			mu.Unlock()
			return a.readNode(ctx, c, c.Options().Addr)
		})
		if len(masters) > 0 {
			// A node that is no longer a master forgets it had replicas:
			// when a failover makes it master again, its old replica is
			// the one that died, and the floor of one would refuse its
			// shard's writes until that node came back (the long run's
			// second kill of a room's master, issue 25).
			a.mu.Lock()
			for addr := range a.seen {
				if !masters[addr] {
					delete(a.seen, addr)
					delete(a.online, addr)
					delete(a.unsure, addr)
				}
			}
			a.mu.Unlock()
		}
	} else if c, ok := a.client.(*redis.Client); ok {
		_ = a.readNode(ctx, c, "")
	}
	a.mu.Lock()
	a.refreshed, a.refreshing = time.Now(), false
	a.mu.Unlock()
}

// readNode reads the online replicas of the primary c, named addr. A
// primary that does not answer keeps its last count and stays (or
// becomes) unsure.
func (a *acker) readNode(ctx context.Context, c *redis.Client, addr string) error {
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		a.setUnsure(addr)
		return err
	}
	n := onlineReplicas(info)

	a.mu.Lock()
	a.online[addr] = n
	if n > 0 {
		a.seen[addr] = true
	}
	delete(a.unsure, addr)
	a.mu.Unlock()
	return nil
}

// setUnsure marks the count of the primary addr as possibly stale.
func (a *acker) setUnsure(addr string) {
	if a.want != AckAuto {
		return
	}
	a.mu.Lock()
	if a.unsure == nil {
		a.unsure = map[string]bool{}
	}
	a.unsure[addr] = true
	a.mu.Unlock()
}

// onlineReplicas counts the replicas an INFO replication section lists as
// online and acknowledging (lag at most autoMaxLag seconds).
func onlineReplicas(info string) int {
	n := 0
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "slave") {
			continue
		}
		_, fields, ok := strings.Cut(line, ":")
		if !ok || !strings.Contains(fields, "ip=") {
			continue
		}
		online, fresh := false, false
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "state":
				online = v == "online"
			case "lag":
				// Seconds since its last acknowledgement, by Redis' cached
				// clock: -1 when one came after the clock was read.
				lag, err := strconv.Atoi(v)
				fresh = err == nil && lag <= autoMaxLag
			}
		}
		if online && fresh {
			n++
		}
	}
	return n
}

// AckTimeouts returns how many times writes of this store were not
// confirmed by their replicas in time (each answered unavailable); a
// server exports it as waitroom_redis_ack_timeouts_total.
func (s *Store) AckTimeouts() uint64 { return s.ack.timeouts.Load() }

// write runs cmds with exec, waiting for the replicas, and returns the
// first error: a command's own, else its not being confirmed.
func (s *Store) write(ctx context.Context, what string, cmds ...redis.Cmder) error {
	acks := s.ack.exec(ctx, true, what, cmds...)
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return waitroom.Unavailable(err, "redisstore: "+what)
		}
	}
	return acks.first()
}

// script runs script on keys with args through exec, waiting for the
// replicas, and returns its reply: EVALSHA, then EVAL should Redis have
// lost its script cache (NOSCRIPT: the script did not run). The error is
// the script's own, or its not being confirmed.
func (s *Store) script(ctx context.Context, what string, script *redis.Script, keys []string, args ...any) (any, error) {
	cmd := evalshaCmd(ctx, script, keys, args)
	acks := s.ack.exec(ctx, true, what, cmd)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = evalCmd(ctx, script, keys, args)
		acks = s.ack.exec(ctx, true, what, cmd)
	}
	v, err := cmd.Result()
	if err != nil {
		return v, err
	}
	return v, acks.first()
}

// evalCmd is the EVAL of script, for a Redis that lost its script cache
// (EVAL caches it again).
func evalCmd(ctx context.Context, script *redis.Script, keys []string, args []any) *redis.Cmd {
	return redis.NewCmd(ctx, append([]any{"eval", scriptSource(script), len(keys)}, append(toAny(keys), args...)...)...)
}

// evalshaCmd is the EVALSHA of script.
func evalshaCmd(ctx context.Context, script *redis.Script, keys []string, args []any) *redis.Cmd {
	return redis.NewCmd(ctx, append([]any{"evalsha", script.Hash(), len(keys)}, append(toAny(keys), args...)...)...)
}

// scriptSources maps each script's SHA1 to its source, for EVAL.
var scriptSources sync.Map

// newScript is redis.NewScript that keeps the source for evalCmd.
func newScript(src string) *redis.Script {
	sc := redis.NewScript(src)
	scriptSources.Store(sc.Hash(), src)
	return sc
}

// scriptSource returns the source of a script newScript made.
func scriptSource(sc *redis.Script) string {
	src, _ := scriptSources.Load(sc.Hash())
	s, _ := src.(string)
	return s
}

func toAny(keys []string) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out
}

// unavailable is waitroom.Unavailable(err, what), but keeps the message of
// a write its replicas did not confirm, with what added to its cause.
func unavailable(err error, what string) error {
	var we *waitroom.Error
	if errors.As(err, &we) && errors.Is(err, errNotReplicated) {
		c := *we
		c.Err = fmt.Errorf("%s: %w", what, we.Err)
		return &c
	}
	return waitroom.Unavailable(err, what)
}

// readTimeout returns client's read timeout, 0 when unknown or unbounded.
func readTimeout(client redis.UniversalClient) time.Duration {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ReadTimeout
	case *redis.ClusterClient:
		return c.Options().ReadTimeout
	}
	return 0
}
