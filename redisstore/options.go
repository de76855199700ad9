package redisstore

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Option configures a Store.
type Option func(*config) error

type config struct {
	prefix    string
	retention time.Duration
	histMax   int
	pid       string
	lease     time.Duration
	batch     int
	sharded   *bool
	inFlight  int
	// drawStep and drawLease are schedule.go's constants; tests change them.
	drawStep  int
	drawLease time.Duration
	logger    *slog.Logger // rewound rooms (rewind.go)
	noMarks   bool         // tests only: send no marks (export_test.go)
	// ackReplicas and ackTimeout: see WithAckReplicas (ack.go).
	ackReplicas int
	ackTimeout  time.Duration
}

// WithPrefix sets the prefix of every key and channel (default "wr"). Stores
// with different prefixes on one Redis do not see each other.
func WithPrefix(p string) Option {
	return func(c *config) error {
		if p == "" || strings.ContainsAny(p, "{}\t\n") {
			return fmt.Errorf("redisstore: invalid key prefix %q", p)
		}
		c.prefix = p
		return nil
	}
}

// WithHistoryRetention sets how long an ended session stays readable by id
// (Session, Leave, Sessions); default 24h.
func WithHistoryRetention(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond {
			return fmt.Errorf("redisstore: history retention %s is shorter than 1ms", d)
		}
		c.retention = d
		return nil
	}
}

// WithHistoryLimit caps each room's history stream at about n ended
// sessions (default 100,000); older ones are trimmed.
func WithHistoryLimit(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("redisstore: history limit %d is less than 1", n)
		}
		c.histMax = n
		return nil
	}
}

// WithProcessID sets the id this process tags its events and sweep leases
// with (default: random). It must be unique among the processes sharing
// the Redis.
func WithProcessID(id string) Option {
	return func(c *config) error {
		if id == "" || len(id) > 128 || strings.ContainsAny(id, "\t\n") {
			return fmt.Errorf("redisstore: invalid process id %q", id)
		}
		c.pid = id
		return nil
	}
}

// WithSweepLease sets the length of the per-room sweep lease (default 3s);
// 0 turns leases off, so every Sweep sweeps.
func WithSweepLease(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 || (d > 0 && d < 10*time.Millisecond) {
			return fmt.Errorf("redisstore: sweep lease %s must be 0 or at least 10ms", d)
		}
		c.lease = d
		return nil
	}
}

// WithExpiryBatch sets how many due sessions one script run handles at most
// (default 1,000). Smaller batches block Redis for less time each.
func WithExpiryBatch(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("redisstore: expiry batch %d is less than 1", n)
		}
		c.batch = n
		return nil
	}
}

// WithPipelines sets how many pipelines of script runs the store keeps in
// flight at once (default 4). Operations that arrive while that many are
// in flight queue and go together in the next pipeline: one round trip for
// many operations, each still atomic on its own.
func WithPipelines(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("redisstore: pipelines %d is less than 1", n)
		}
		c.inFlight = n
		return nil
	}
}

// WithShardedPubSub chooses sharded pub/sub (SPUBLISH/SSUBSCRIBE, Redis 7)
// or classic pub/sub (PUBLISH/PSUBSCRIBE). The default is sharded on a
// Cluster of Redis 7 or later, classic otherwise. Classic pub/sub on a
// Cluster broadcasts every event to every node but needs only one
// subscription connection per process, however many rooms there are.
func WithShardedPubSub(on bool) Option {
	return func(c *config) error {
		c.sharded = &on
		return nil
	}
}

// WithAckReplicas sets how many replicas must have every write before the
// store answers for it (ack.go): n > 0 waits for n; AckAuto (the default)
// for every replica the primary reports online and acknowledging, and at
// least one once the primary was seen with one (so a primary cut off from
// its replicas, or replaced, confirms nothing; a Cluster replica just
// promoted, which has none yet, waits for none); 0 does not wait (a write
// answered may be lost in a failover). With no replicas at all, AckAuto
// waits for nothing. In a Cluster it counts each shard's replicas.
func WithAckReplicas(n int) Option {
	return func(c *config) error {
		if n < AckAuto {
			return fmt.Errorf("redisstore: ack replicas %d is neither auto (%d) nor a count", n, AckAuto)
		}
		c.ackReplicas = n
		return nil
	}
}

// WithAckTimeout sets how long a write waits for its replicas (default
// DefaultAckTimeout) before it answers unavailable. It must be at least
// 1ms and shorter than the client's read timeout, which bounds the whole
// pipeline's reply.
func WithAckTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond {
			return fmt.Errorf("redisstore: ack timeout %s is shorter than 1ms", d)
		}
		c.ackTimeout = d
		return nil
	}
}
