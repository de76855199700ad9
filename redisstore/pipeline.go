package redisstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Script runs are pipelined: calls that arrive while earlier ones are in
// flight queue up, and the next free runner sends the whole queue as one
// pipeline of EVALSHAs. Each script stays one atomic operation; what is
// shared is the round trip and the system calls on both ends, which, not
// the scripts' work, bound a busy store's throughput. An idle store sends
// a call at once, alone, so pipelining adds no latency when there is no
// queue. This is group commit, as sqlitestore does it for fsyncs.
//
// A caller waits for its answer at most callBound (when the client's
// timeouts are known): runners send on no caller's time, so no caller
// waits out more than its own bound. Without it a hanging Redis held a
// caller for a wait in the queue, then its batch join's pipeline (go-redis
// retries a pipeline, and the handshake of each connection it dials for
// it, so a pipeline to a frozen Redis takes up to four read timeouts, not
// two), then the run of its join alone after the batch failed: 10 s and
// more, where Open promises about 4.5.

// pipeline limits.
const (
	// defaultInFlight is how many pipelines one store keeps in flight at
	// once. One leaves Redis idle while a pipeline's replies travel back;
	// a few keep it busy without making each batch tiny.
	defaultInFlight = 4
	// maxPipeline is the most scripts in one pipeline, so one batch does
	// not hold Redis' event loop for long.
	maxPipeline = 256
	// pipelineTimeout bounds a pipeline whose callers have all gone away
	// (it runs on no caller's context, as it serves many).
	pipelineTimeout = 30 * time.Second
	// maxQueueWait is the longest a call waits for a pipeline before it
	// fails unsent. When Redis hangs, every pipeline in flight takes its
	// full timeout; without this bound, calls queued behind them would
	// wait for round after round of timeouts before their own.
	// It is half the 3 s a refused call may take in all (issue 25): a
	// call queued behind pipelines that wait out the ack timeout (1 s)
	// for replicas of a primary just replaced still has time to be sent
	// and answered.
	maxQueueWait = 1500 * time.Millisecond
)

// errQueueWait fails a call that waited too long to be sent.
var errQueueWait = errors.New("redisstore: Redis is not answering; the call was not sent")

// errCallBound fails a call whose answer did not come within callBound.
var errCallBound = errors.New("redisstore: Redis did not answer in time")

// callBound is the longest a caller waits for a script run on client:
// maxQueueWait to be sent, then the read timeout of each of go-redis'
// tries (Open's defaults: 1.5 s + 2 × 1.5 s = 4.5 s). It is 0, no bound, when
// the client's read timeout is unknown or unbounded. The run itself may
// go on, and complete in Redis, after its caller was told it failed, as
// after any read timeout.
func callBound(client redis.UniversalClient) time.Duration {
	var read time.Duration
	var retries int
	switch c := client.(type) {
	case *redis.Client: // standalone and Sentinel
		o := c.Options()
		read, retries = o.ReadTimeout, o.MaxRetries
	case *redis.ClusterClient:
		o := c.Options()
		read, retries = o.ReadTimeout, o.MaxRetries
	default:
		return 0
	}
	if read <= 0 {
		return 0
	}
	return maxQueueWait + time.Duration(max(retries, 0)+1)*read
}

// scriptCall is one script run waiting for its pipeline.
type scriptCall struct {
	keys []string
	args []any
	ctx  context.Context
	// alone keeps a join from being merged again, after its batch could
	// not take it.
	alone bool
	// queued is when the call was queued; see maxQueueWait.
	queued time.Time

	v    []any
	err  error
	done chan struct{}
}

// pipeliner queues script runs and sends them in pipelines.
type pipeliner struct {
	client   redis.UniversalClient
	ack      *acker // sends every pipeline
	inFlight int    // most pipelines at once; 0 or 1 still pipelines
	// orphan receives the reply of a call whose caller gave up before it
	// came: the script ran, and its event must still reach this process's
	// subscribers (who hear their own process's events only from replies).
	orphan func(v []any)

	// bound is callBound(client), worked out once.
	boundOnce sync.Once
	bound     time.Duration

	// gate fails calls fast while Redis is unreachable (outage.go).
	gate outageGate

	mu      sync.Mutex
	queue   []*scriptCall
	running int
}

// do runs the script with keys and args, in a pipeline with whatever else
// is queued, and returns its reply, or fails with errCallBound once the
// call has taken callBound.
func (p *pipeliner) do(ctx context.Context, keys []string, args []any) ([]any, error) {
	p.boundOnce.Do(func() { p.bound = callBound(p.client) })
	if p.bound > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, p.bound, errCallBound)
		// Once the caller has gone, a call still queued (or queued again,
		// after its batch failed) is not sent.
		defer cancel()
	}
	c := &scriptCall{keys: keys, args: args, ctx: ctx, done: make(chan struct{}), queued: time.Now()}
	p.mu.Lock()
	p.queue = append(p.queue, c)
	lead := p.running < max(1, p.inFlight)
	if lead {
		p.running++
	}
	p.mu.Unlock()
	if lead {
		// A new runner sends the queue, this call in it. The caller only
		// waits, as every other caller does, so that its bound holds
		// however long the pipeline takes.
		go p.drain()
	}
	select {
	case <-c.done:
		return c.v, c.err
	case <-ctx.Done():
		// The script may still run; like any request cut off after it
		// was sent, its effect is unknown to this caller, but not to the
		// subscribers.
		if p.orphan != nil {
			go func() {
				<-c.done
				if c.err == nil {
					p.orphan(c.v)
				}
			}()
		}
		if context.Cause(ctx) == errCallBound {
			return nil, errCallBound
		}
		return nil, ctx.Err()
	}
}

// drain sends pipelines until the queue is empty, then gives its runner
// slot back.
func (p *pipeliner) drain() {
	for {
		p.runOnce()
		p.mu.Lock()
		if len(p.queue) == 0 {
			p.running--
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
}

// runOnce takes up to maxPipeline queued calls, sends them as one
// pipeline, and completes each.
func (p *pipeliner) runOnce() {
	p.mu.Lock()
	n := min(len(p.queue), maxPipeline)
	batch := make([]*scriptCall, n)
	copy(batch, p.queue)
	rest := copy(p.queue, p.queue[n:])
	clear(p.queue[rest:])
	p.queue = p.queue[:rest]
	p.mu.Unlock()

	// Calls whose caller has given up, or that waited too long for Redis,
	// are not sent at all.
	live := batch[:0:0]
	now := time.Now()
	for _, c := range batch {
		err := c.ctx.Err()
		if err == nil && now.Sub(c.queued) > maxQueueWait {
			err = errQueueWait
		}
		if err != nil {
			c.err = err
			close(c.done)
			continue
		}
		live = append(live, c)
	}
	runs := mergeJoins(live)
	if len(runs) == 0 {
		return
	}
	ok, probe := p.gate.admit(time.Now())
	if !ok {
		// Redis was unreachable moments ago: fail at once, rather than
		// each call dialing it again (outage.go).
		for _, r := range runs {
			for _, c := range r.calls {
				c.err = errRedisDown
				close(c.done)
			}
		}
		return
	}
	ctx := context.Background()
	if len(runs) == 1 && len(runs[0].calls) == 1 {
		// One call alone runs on its caller's context, as a plain call.
		ctx = runs[0].calls[0].ctx
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, pipelineTimeout)
		defer cancel()
	}
	cmds := make([]redis.Cmder, len(runs))
	wait := false
	for i, r := range runs {
		cmds[i] = evalshaCmd(ctx, roomScript, r.keys, r.args)
		wait = wait || !readOp(r.args[0])
	}
	ack := p.ack
	if ack == nil {
		ack = &acker{client: p.client} // waits for no replica
	}
	// One WAIT per pipeline (per primary in a Cluster) for all its writes.
	acks := ack.exec(ctx, wait, "room scripts", cmds...)
	p.gate.report(time.Now(), probe, cmds)
	var lost []int
	for i, c := range cmds {
		if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			lost = append(lost, i)
		}
	}
	if len(lost) > 0 {
		// Redis lost its script cache (restart, SCRIPT FLUSH, failover):
		// EVAL loads the script again. NOSCRIPT means these did not run.
		again := make([]redis.Cmder, len(lost))
		for j, i := range lost {
			again[j] = evalCmd(ctx, roomScript, runs[i].keys, runs[i].args)
		}
		acks2 := ack.exec(ctx, wait, "room scripts", again...)
		for j, i := range lost {
			cmds[i], acks[i] = again[j], acks2[j]
		}
	}
	var again []*scriptCall
	for i, r := range runs {
		v, err := cmds[i].(*redis.Cmd).Slice()
		if err == nil && acks[i] != nil && !readOp(r.args[0]) {
			// The script ran, but its replicas did not confirm it: every
			// call of the run is told so, and its event still reaches
			// this process's subscribers, as other processes hear it.
			if p.orphan != nil {
				p.orphan(v)
			}
			for _, c := range r.calls {
				c.err = acks[i]
				close(c.done)
			}
			continue
		}
		if len(r.calls) == 1 && r.args[0] != opJoins {
			c := r.calls[0]
			c.v, c.err = v, err
			close(c.done)
			continue
		}
		again = append(again, splitJoins(r, v, err)...)
	}
	if len(again) > 0 {
		// Joins the batch could not take run on their own, next, ahead of
		// anything that queued meanwhile, so their order holds.
		p.mu.Lock()
		p.queue = append(again, p.queue...)
		p.mu.Unlock()
	}
}

// readOp reports whether op only reads (ops.lua's reads): a pipeline of
// reads only does not wait for replicas, and a read is answered whatever
// they confirmed.
func readOp(op any) bool {
	switch op {
	case "room", "sessions", "waiting", "lookup", "history", "drawinfo":
		return true
	}
	return false
}

// opJoins is the script's batch join; see fast.lua.
const opJoins = "joins"

// scriptRun is one script run in a pipeline: one call, or joins merged.
type scriptRun struct {
	keys  []string
	args  []any
	calls []*scriptCall
}

// mergeJoins turns calls into script runs: every room's joins (args[0]
// "join", not marked alone) become one batch join at the place of the
// first, in arrival order; every other call runs as it is. A batch join's
// time is the latest of its joins' (a store treats time as never going
// back anyway) and it returns its event when any of them asked for one.
func mergeJoins(calls []*scriptCall) []*scriptRun {
	runs := make([]*scriptRun, 0, len(calls))
	var byRoom map[string]*scriptRun
	for _, c := range calls {
		// A join with a tier, token uses or a contact (more than key and secret:
		// joinArgs) runs on its own.
		if c.alone || c.args[0] != "join" || len(c.args) != 12 {
			runs = append(runs, &scriptRun{keys: c.keys, args: c.args, calls: []*scriptCall{c}})
			continue
		}
		if byRoom == nil {
			byRoom = make(map[string]*scriptRun)
		}
		r := byRoom[c.keys[0]]
		if r == nil {
			r = &scriptRun{keys: c.keys, args: c.args, calls: []*scriptCall{c}}
			byRoom[c.keys[0]] = r
			runs = append(runs, r)
			continue
		}
		if len(r.calls) == 1 {
			// Second join of the room: make the batch. The ARGV layout is
			// Store.args': op, room, now, pid, publish, channel, want event,
			// retention, history, expiry batch, then key and secret.
			first := r.args
			r.args = append([]any{opJoins}, first[1:]...)
		}
		if c.args[2].(int64) > r.args[2].(int64) {
			r.args[2] = c.args[2]
		}
		if c.args[6] == "1" {
			r.args[6] = "1"
		}
		r.args = append(r.args, c.args[10], c.args[11])
		r.calls = append(r.calls, c)
	}
	return runs
}

// splitJoins completes the calls of a batch join from its reply
// {status, event, {session or 0, ...}} and returns those that must run
// on their own: all of them when the batch did not apply ('slow') or
// failed in a way that says nothing of single joins, else those answered 0.
func splitJoins(r *scriptRun, v []any, err error) (again []*scriptCall) {
	retryAll := func() []*scriptCall {
		// Each join runs again on its own. Should the batch have run with
		// its reply lost, each finds its own session by its secret.
		for _, c := range r.calls {
			c.alone = true
		}
		return r.calls
	}
	if err != nil || len(v) < 2 {
		// The batch may have run: its joins are sent again, and a rerun
		// that fails unsent for waiting too long would hide a join that
		// happened, so their wait starts afresh.
		now := time.Now()
		for _, c := range r.calls {
			c.queued = now
		}
		return retryAll()
	}
	switch status, _ := v[0].(string); status {
	case "ok":
	case "slow":
		return retryAll()
	default:
		// An error every join shares (room_not_found): answer each. The
		// first gets the whole reply: a rewind's says what was repaired
		// (rewind.go).
		for i, c := range r.calls {
			c.v = []any{status, ""}
			if i == 0 {
				c.v = v
			}
			close(c.done)
		}
		return nil
	}
	var head, list []any
	if len(v) > 3 {
		head, _ = v[2].([]any)
		list, _ = v[3].([]any)
	}
	if (len(head) != 4 && len(head) != 6 && len(head) != 7) || len(list) != len(r.calls) {
		return retryAll()
	}
	now, waiting, active, capacity := head[0], num(head, 1), head[2], head[3]
	// In a pre-queue: the opening and the pre-queue's size before.
	opens, entrants := num(head, 4), num(head, 5)
	// In a room with an inventory: the units remaining, which a join that
	// waits leaves as they are (stockTail in stock.lua).
	stock := func(v []any) []any {
		if len(head) != 7 {
			return v
		}
		for len(v) < 15 {
			v = append(v, int64(0))
		}
		return append(v, num(head, 6), int64(0))
	}
	ev := v[1]
	for i, c := range r.calls {
		t := num(list, i)
		switch {
		case t == 0:
			c.alone = true
			again = append(again, c)
			continue
		case t < 0:
			// The single join's reply in a pre-queue: entry -t, no ticket.
			entrants++
			c.v = []any{"ok", ev, stock([]any{int64(0), c.args[11], "waiting", c.args[10], now, int64(0), int64(0), "",
				int64(0), waiting, active, capacity, -t, opens, entrants})}
		default:
			// The single join's reply (room.lua): the session waits last.
			waiting++
			c.v = []any{"ok", ev, stock([]any{t, c.args[11], "waiting", c.args[10], now, int64(0), int64(0), "",
				waiting, waiting, active, capacity})}
		}
		ev = "" // the batch's one event goes with its first answer
		close(c.done)
	}
	return again
}
