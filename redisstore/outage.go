package redisstore

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Failing fast while Redis is gone. When a pipeline finds Redis
// unreachable (its connections refused or reset, a dial that timed out),
// the pipelines after it are not sent: their calls fail at once with
// errRedisDown (unavailable), and one pipeline every probeEvery goes
// through as the probe. The first probe that reaches Redis opens the way
// for everyone.
//
// Without it every call dialed the dead primary itself, and go-redis'
// pool, after as many failed dials as it has connections, stops dialing
// and answers its last dial error, trying again only once a second: joins
// came back up to a second after Sentinel had named the new primary
// (issue 25). A probe every probeEvery keeps the pool's failures under its
// size for several seconds of outage (see minPoolSize), so the first
// probe after the new primary is named reaches it.

// Outage gate timing.
const (
	// probeEvery is how often, while Redis is unreachable, one pipeline
	// is sent to find out whether it is back.
	probeEvery = 250 * time.Millisecond
	// minPoolSize is the least connection pool size Open gives a client
	// (go-redis: 10 per CPU). The pool stops dialing after that many failed
	// dials in a row; at a probe every probeEvery, each dialing at most
	// twice (max_retries 1), it takes about 8 s of outage to get there,
	// longer than a Sentinel or Cluster failover. Connections are only
	// opened as calls need them.
	minPoolSize = 64
)

// errRedisDown fails a call that was not sent because Redis was found
// unreachable moments ago.
var errRedisDown = errors.New("redisstore: Redis is not reachable; the call was not sent")

// outageGate decides whether a pipeline may be sent (see above).
type outageGate struct {
	mu        sync.Mutex
	down      bool      // the last pipeline that said anything found Redis unreachable
	probing   bool      // a probe is in flight
	lastProbe time.Time // when the last probe was sent
}

// admit reports whether a pipeline may be sent now, and whether it is the
// probe, which must then report.
func (g *outageGate) admit(now time.Time) (ok, probe bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.down {
		return true, false
	}
	if g.probing || now.Sub(g.lastProbe) < probeEvery {
		return false, false
	}
	g.probing, g.lastProbe = true, now
	return true, true
}

// report records what a sent pipeline found: Redis reachable or not, or
// nothing known (every command was cut off by its caller).
func (g *outageGate) report(now time.Time, probe bool, cmds []redis.Cmder) {
	state := reachability(cmds)
	g.mu.Lock()
	defer g.mu.Unlock()
	if probe {
		g.probing = false
	}
	switch state {
	case reachable:
		g.down = false
	case unreachable:
		if probe || !g.down {
			// Redis just went away, or is still gone: the next probe is
			// due probeEvery from now.
			g.lastProbe = now
		}
		g.down = true
	}
}

// reach is what a pipeline tells of Redis.
type reach int

const (
	unknown reach = iota
	reachable
	unreachable
)

// reachability tells from cmds' outcomes whether Redis answered: any reply
// (an error reply too) says it did; only failed dials say it did not. A
// connection that broke says nothing by itself: go-redis has already
// dialed again for its retry, and that dial's error is what a gone Redis
// leaves. So a reset connection, a frozen Redis (its read timeouts bound
// the calls anyway) and a caller that gave up do not close the gate.
func reachability(cmds []redis.Cmder) reach {
	state := unknown
	for _, c := range cmds {
		err := c.Err()
		var reply redis.Error
		var op *net.OpError
		switch {
		case err == nil, errors.As(err, &reply):
			return reachable
		case errors.As(err, &op) && op.Op == "dial":
			state = unreachable
		}
	}
	return state
}
