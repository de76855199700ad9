package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/seedredis"
	"github.com/waitroom/waitroom/redisstore"
)

// The Redis rows compare redisstore with the command sequence of the seed
// design (seeds/001, "Using Redis sorted sets to build a scalable real-time
// web waiting list"), on one Redis in one run.
//
// The seed's join is check() for a newcomer to a full room: the five-command
// check pipeline, then findLastUser (the last score), then a pipeline that
// adds the user at that score + 1 and reads its rank. Its three round trips
// are not atomic, so concurrent joins can read the same last score: their
// order is then by user id, not by arrival. The rows count those duplicate
// scores. The seed's position read is check() for a waiting user: the check
// pipeline, then the check-in update. redisstore does each in one script.

const (
	redisWaiting  = 10_000 // waiting in the position rows
	redisStartMax = 10 * time.Second
)

// redisRows measures redisstore against the seed's sequence at each number
// of callers, on opt.RedisURL or on a redis-server started for the run.
func redisRows(ctx context.Context, opt Options, dir string) []Row {
	var rows []Row
	for _, c := range opt.Callers {
		rows = append(rows,
			Row{Name: fmt.Sprintf("redisstore join, %d callers", c), Unit: "ops/s", Baseline: "seed Redis join (check + last score + ZADD/ZRANK)", Goal: 2},
			Row{Name: fmt.Sprintf("redisstore position, %d callers", c), Unit: "ops/s", Baseline: "seed Redis check (5-command pipeline + check-in)", Goal: 1},
		)
	}
	addr := opt.RedisURL
	if addr == "" {
		if opt.RedisServer == "" {
			return skipped(RedisMissing, rows...)
		}
		srv, err := startRedis(ctx, opt.RedisServer, filepath.Join(dir, "redis"))
		if err != nil {
			return skipped("could not start redis-server: "+err.Error(), rows...)
		}
		defer srv.stop()
		addr = srv.addr
	}
	ro, err := redisOptions(addr)
	if err != nil {
		return skipped(err.Error(), rows...)
	}
	prefix := "waitroom-bench-" + randomHex(6)
	defer cleanRedis(ro, prefix)
	per := opt.Time / time.Duration(opt.Rounds)
	for i, callers := range opt.Callers {
		join, pos := &rows[2*i], &rows[2*i+1]
		o := *ro
		o.PoolSize = callers + 8
		client := redis.NewClient(&o)
		err := func() error {
			defer client.Close()
			if err := joinRow(ctx, client, prefix+":"+strconv.Itoa(callers), callers, opt, per, join); err != nil {
				join.Skipped = "failed: " + err.Error()
			}
			if err := positionRow(ctx, client, prefix+":"+strconv.Itoa(callers), callers, opt, per, pos); err != nil {
				pos.Skipped = "failed: " + err.Error()
			}
			return ctx.Err()
		}()
		if err != nil {
			break
		}
	}
	return rows
}

func joinRow(ctx context.Context, client *redis.Client, prefix string, callers int, opt Options, per time.Duration, row *Row) error {
	st, err := fullStore(ctx, client, prefix+":join")
	if err != nil {
		return err
	}
	defer st.Close()
	seed, err := seedredis.New(ctx, client, prefix+":seed-join")
	if err != nil {
		return err
	}
	var mu sync.Mutex
	tickets := map[int64]bool{}
	dups := 0
	var user atomic.Int64
	s, b, err := compare(ctx, opt.Time, opt.Rounds,
		concurrent(callers, per, func(ctx context.Context, _ int) error {
			got, err := st.Join(ctx, "r", "", time.Now())
			if err != nil {
				return err
			}
			mu.Lock()
			if tickets[got.Ticket] {
				dups++
			}
			tickets[got.Ticket] = true
			mu.Unlock()
			return nil
		}),
		concurrent(callers, per, func(ctx context.Context, _ int) error {
			_, err := seed.Join(ctx, "u"+strconv.FormatInt(user.Add(1), 10))
			return err
		}))
	if err != nil {
		return err
	}
	seedDups, err := seed.DuplicateScores(ctx)
	if err != nil {
		return err
	}
	row.Value, row.BaselineValue = s.rate(), b.rate()
	// Counted over every join of the row, the warm-up's included.
	row.Note = fmt.Sprintf("FIFO lost: redisstore %d of %s joins, seed %s of %s (shared scores)",
		dups, Group(int64(len(tickets))), Group(int64(seedDups)), Group(user.Load()))
	return nil
}

func positionRow(ctx context.Context, client *redis.Client, prefix string, callers int, opt Options, per time.Duration, row *Row) error {
	st, err := fullStore(ctx, client, prefix+":pos")
	if err != nil {
		return err
	}
	defer st.Close()
	seed, err := seedredis.New(ctx, client, prefix+":seed-pos")
	if err != nil {
		return err
	}
	ids := make([]string, redisWaiting)
	if err := fan(ctx, callers, redisWaiting, func(ctx context.Context, i int) error {
		got, err := st.Join(ctx, "r", "", time.Now())
		ids[i] = got.ID
		return err
	}); err != nil {
		return err
	}
	if err := fan(ctx, callers, redisWaiting, func(ctx context.Context, i int) error {
		_, err := seed.Join(ctx, "u"+strconv.Itoa(i))
		return err
	}); err != nil {
		return err
	}
	rngs := make([]*mrand.Rand, callers)
	for i := range rngs {
		rngs[i] = mrand.New(mrand.NewPCG(uint64(i), 7))
	}
	s, b, err := compare(ctx, opt.Time, opt.Rounds,
		concurrent(callers, per, func(ctx context.Context, c int) error {
			id := ids[rngs[c].IntN(len(ids))]
			got, err := st.Session(ctx, "r", id, time.Now())
			if err == nil && got.Position < 1 {
				err = fmt.Errorf("session %s at position %d", id, got.Position)
			}
			return err
		}),
		concurrent(callers, per, func(ctx context.Context, c int) error {
			_, err := seed.Position(ctx, "u"+strconv.Itoa(rngs[c].IntN(redisWaiting)))
			return err
		}))
	if err != nil {
		return err
	}
	row.Value, row.BaselineValue = s.rate(), b.rate()
	row.Note = fmt.Sprintf("%s waiting", Group(redisWaiting))
	return nil
}

// fullStore returns a redisstore whose room "r" is full (seedredis.Max active),
// so every join waits, as the seed's room does.
func fullStore(ctx context.Context, client *redis.Client, prefix string, opts ...redisstore.Option) (*redisstore.Store, error) {
	s, err := redisstore.New(ctx, client, append([]redisstore.Option{redisstore.WithPrefix(prefix)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("redisstore: %w", err)
	}
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = seedredis.Max
	cfg.WaitingTimeout = waitroom.Duration(time.Hour)
	now := time.Now()
	if _, _, err := s.PutRoom(ctx, "r", cfg, now); err != nil {
		s.Close()
		return nil, fmt.Errorf("redisstore: %w", err)
	}
	for range seedredis.Max {
		if _, err := s.Join(ctx, "r", "", now); err != nil {
			s.Close()
			return nil, fmt.Errorf("redisstore: %w", err)
		}
	}
	return s, nil
}

// redisOptions reads a redis:// URL or a bare host:port.
func redisOptions(addr string) (*redis.Options, error) {
	if strings.Contains(addr, "://") {
		o, err := redis.ParseURL(addr)
		if err != nil {
			return nil, fmt.Errorf("--redis: %w", err)
		}
		return o, nil
	}
	return &redis.Options{Addr: addr}, nil
}

// cleanRedis deletes the run's keys, so a Redis given with --redis is left
// as it was found.
func cleanRedis(o *redis.Options, prefix string) {
	c := redis.NewClient(o)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// redisstore puts a room's keys under a hash tag ({prefix…}), so the
	// prefix may follow a brace.
	iter := c.Scan(ctx, 0, "*"+prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			c.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.Unlink(ctx, batch...)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// redisServer is a redis-server the suite started.
type redisServer struct {
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// startRedis runs bin on a free loopback port with nothing saved to disk,
// and extra arguments, and waits until it answers PING.
func startRedis(ctx context.Context, bin, dir string, extra ...string) (*redisServer, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--daemonize", "no", "--protected-mode", "no", "--save", "", "--appendonly", "no", "--logfile", "redis.log"}
	cmd := exec.Command(bin, append(args, extra...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("run %s: %w", bin, err)
	}
	s := &redisServer{addr: addr, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(redisStartMax)
	for {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		err := c.Ping(pctx).Err()
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			return nil, fmt.Errorf("redis-server exited: %s%s", out.Bytes(), log)
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.stop()
			return nil, fmt.Errorf("redis-server on %s did not answer PING within %v: %w", addr, redisStartMax, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *redisServer) stop() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// freePort asks the kernel for a loopback port nobody listens on.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
