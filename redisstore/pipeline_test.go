package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// evalshaCalls reads how many EVALSHA commands the server has run.
func evalshaCalls(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:calls=")
		if ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}

// roomOfOne returns a store on client (one pipeline in flight, so calls
// queue and batch) with room "r" of capacity 1, closed when the test ends.
func roomOfOne(t *testing.T, client *redis.Client) (*redisstore.Store, time.Time) {
	t.Helper()
	ctx := context.Background()
	s, err := redisstore.New(ctx, client, redisstore.WithPrefix(freshPrefix()), redisstore.WithPipelines(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	now := time.Now()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	if _, _, err := s.PutRoom(ctx, "r", cfg, now); err != nil {
		t.Fatal(err)
	}
	return s, now
}

// Concurrent joins go out together in one script run per room; each must
// still get its own ticket, in one order, with the exact position and
// totals of the moment it joined, and keys must still be unique.
func TestConcurrentJoinsAreBatchedAndExact(t *testing.T) {
	addr := redistest.Server(t)
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 80})
	defer client.Close()
	s, now := roomOfOne(t, client)
	if _, err := s.Join(ctx, "r", "", now); err != nil { // takes the one slot
		t.Fatal(err)
	}
	var mu sync.Mutex
	var changes int
	cancel := s.Subscribe(func(e waitroom.Event) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range e.Changes {
			if c.Session.Status == waitroom.StatusWaiting && c.From == "" {
				changes++
			}
		}
	})
	defer cancel()

	before := evalshaCalls(t, client)
	const callers, each = 64, 40
	const keys = 50 // callers share keys: most keyed joins must conflict
	type answer struct {
		s   waitroom.Session
		key string
		err error
	}
	answers := make(chan answer, callers*each)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				key := ""
				if i%4 == 0 {
					key = "k" + strconv.Itoa((c*each/4+i/4)%keys)
				}
				got, err := s.Join(ctx, "r", key, now)
				answers <- answer{got, key, err}
			}
		})
	}
	wg.Wait()
	close(answers)
	calls := evalshaCalls(t, client) - before

	tickets := make(map[int64]bool)
	liveKeys := make(map[string]int64)
	joined := 0
	for a := range answers {
		if a.err != nil {
			if waitroom.ErrorCode(a.err) != waitroom.CodeAlreadyJoined || a.key == "" {
				t.Fatalf("Join(key %q) error = %v", a.key, a.err)
			}
			continue
		}
		joined++
		if tickets[a.s.Ticket] {
			t.Errorf("ticket %d given twice", a.s.Ticket)
		}
		tickets[a.s.Ticket] = true
		if a.key != "" {
			if prev, dup := liveKeys[a.key]; dup {
				t.Errorf("key %q holds two live sessions: tickets %d and %d", a.key, prev, a.s.Ticket)
			}
			liveKeys[a.key] = a.s.Ticket
		}
		// Ticket 1 is active; nobody leaves, so the joins wait in ticket
		// order from ticket 2 on: position = ticket - 1, and the room held
		// exactly that many waiting when the join returned.
		if a.s.Status != waitroom.StatusWaiting || a.s.Position != a.s.Ticket-1 || int64(a.s.Waiting) != a.s.Position ||
			a.s.Active != 1 || a.s.Capacity != 1 || a.s.Key != a.key {
			t.Errorf("joined %+v; want waiting at position %d of %d, 1 active of 1, key %q",
				a.s, a.s.Ticket-1, a.s.Ticket-1, a.key)
		}
		if got, err := s.Session(ctx, "r", a.s.ID, now); err != nil || got.Ticket != a.s.Ticket {
			t.Errorf("Session(%s) = %+v, %v; want ticket %d", a.s.ID, got, err, a.s.Ticket)
		}
	}
	if len(liveKeys) != keys {
		t.Errorf("%d keys hold a session, want %d", len(liveKeys), keys)
	}
	for tk := int64(2); tk <= int64(joined)+1; tk++ {
		if !tickets[tk] {
			t.Errorf("ticket %d missing: tickets are not consecutive", tk)
		}
	}
	room, err := s.Room(ctx, "r")
	if err != nil || room.Waiting != joined {
		t.Errorf("room has %d waiting (%v), want %d", room.Waiting, err, joined)
	}
	mu.Lock()
	if changes != joined {
		t.Errorf("events told of %d joins, want %d", changes, joined)
	}
	mu.Unlock()
	// The point of batching: far fewer script runs than joins.
	if calls >= int64(callers*each) {
		t.Errorf("%d joins took %d script runs; want fewer (joins batched)", callers*each, calls)
	}
	t.Logf("%d joins (%d conflicts) in %d script runs", callers*each, callers*each-joined, calls)
}

// dropProxy relays a Redis connection and, when armed, lets one command
// containing a marker reach Redis but swallows its reply and breaks the
// connection, as a network failure after the send would.
type dropProxy struct {
	ln     net.Listener
	target string
	marker []byte
	armed  atomic.Bool
	drops  atomic.Int32
}

func newDropProxy(t *testing.T, target, marker string) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, target: target, marker: []byte(marker)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.relay(c)
		}
	}()
	return p
}

func (p *dropProxy) relay(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	var swallow atomic.Bool
	go func() {
		defer client.Close()
		defer server.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 && swallow.Load() {
				p.drops.Add(1)
				return // the reply is lost with the connection
			}
			if n > 0 {
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if bytes.Contains(buf[:n], p.marker) && p.armed.CompareAndSwap(true, false) {
				swallow.Store(true)
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				server.Close()
			}
			return
		}
	}
}

// resentJoins are the ways a join goes out that a resend must not
// double: alone keyless, alone keyed, and merged in a batch.
var resentJoins = []struct {
	name    string
	key     string
	callers int
	marker  string
}{
	{"keyless", "", 1, "\r\njoin\r\n"},
	{"keyed", "user-7", 1, "\r\njoin\r\n"},
	{"batched", "", 16, "\r\njoins\r\n"},
}

// resendingClient returns a client to addr through a proxy that, once
// armed, drops the reply of the first command carrying marker, so go-redis
// sends it again.
func resendingClient(t *testing.T, addr, marker string) (*redis.Client, *dropProxy) {
	t.Helper()
	proxy := newDropProxy(t, addr, marker)
	client := redis.NewClient(&redis.Options{Addr: proxy.ln.Addr().String(), PoolSize: 32,
		MaxRetries: 3, MinRetryBackoff: time.Millisecond})
	t.Cleanup(func() { _ = client.Close() })
	return client, proxy
}

// joinResent arms proxy and makes callers joins to room at once (keys made
// distinct after the first), returning what each answered; it skips the
// test when no reply was dropped.
func joinResent(t *testing.T, proxy *dropProxy, s waitroom.Store, room, key string, callers int, now time.Time) []waitroom.Session {
	t.Helper()
	proxy.armed.Store(true)
	results := make([]waitroom.Session, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			k := key
			if k != "" && i > 0 {
				k = fmt.Sprintf("%s-%d", k, i)
			}
			results[i], errs[i] = s.Join(context.Background(), room, k, now)
		})
	}
	wg.Wait()
	if proxy.drops.Load() == 0 {
		t.Skip("no reply was dropped: the joins did not go out as expected")
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Join %d error = %v (a resent join must answer)", i, err)
		}
	}
	return results
}

// go-redis sends a command again when the connection broke before its
// reply came. A join sent twice must still make one session, and answer
// with it: keyless and keyed, alone and batched.
func TestJoinSentTwiceMakesOneSession(t *testing.T) {
	addr := redistest.Server(t)
	ctx := context.Background()
	for _, tc := range resentJoins {
		t.Run(tc.name, func(t *testing.T) {
			client, proxy := resendingClient(t, addr, tc.marker)
			s, now := roomOfOne(t, client)
			if tc.callers > 1 {
				// Someone waits already, so concurrent joins take the batch.
				for range 2 {
					if _, err := s.Join(ctx, "r", "", now); err != nil {
						t.Fatal(err)
					}
				}
			}
			before, err := s.Room(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			results := joinResent(t, proxy, s, "r", tc.key, tc.callers, now)
			seen := make(map[int64]bool)
			for _, r := range results {
				if seen[r.Ticket] {
					t.Errorf("ticket %d answered twice", r.Ticket)
				}
				seen[r.Ticket] = true
				got, err := s.Session(ctx, "r", r.ID, now)
				if err != nil || got.Ticket != r.Ticket {
					t.Errorf("Session(%s) = %+v, %v", r.ID, got, err)
				}
			}
			after, err := s.Room(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			if made := after.Waiting + after.Active - before.Waiting - before.Active; made != tc.callers {
				t.Errorf("%d joins made %d sessions; want %d (a resent join made another)", tc.callers, made, tc.callers)
			}
		})
	}
}
