package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/redisstore"
	"github.com/waitroom/waitroom/sqlitestore"
)

// DrawEntrants is how many entrants the draw rows draw by default, the
// size the goals are set for.
const DrawEntrants = 100_000

// drawGoals are the longest a draw of DrawEntrants may take.
var drawGoals = map[string]time.Duration{"sqlitestore": time.Second, "redisstore": 3 * time.Second}

// drawRows times the draw of a scheduled room: every entrant of the
// pre-queue gets a ticket in one atomic, durable step. The baseline is the
// least any store could do for the same people: the seed's SQL table
// filled with as many rows in one transaction (embedded), or as many
// members ZADDed in pipelines (Redis). Values are entrants per second.
func drawRows(ctx context.Context, opt Options, dir string) []Row {
	n := opt.DrawEntrants
	emb := Row{Name: fmt.Sprintf("draw of %s entrants (sqlitestore, sync=FULL)", sizeName(n)), Unit: "entrants/s",
		Baseline: "seed SQL: as many rows in one transaction, sync=FULL"}
	red := Row{Name: fmt.Sprintf("redisstore draw of %s entrants", sizeName(n)), Unit: "entrants/s",
		Baseline: "Redis: as many ZADDs in pipelines of 1,000"}
	var rows []Row

	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "draw.db"))
	if err != nil {
		rows = append(rows, skipped("sqlitestore: "+err.Error(), emb)...)
	} else {
		took, err := timeDraw(ctx, st, n, opt.Callers[0])
		st.Close()
		if err != nil {
			rows = append(rows, skipped("failed: "+err.Error(), emb)...)
		} else {
			start := time.Now()
			sq, err := openSeedSQL(ctx, filepath.Join(dir, "draw-seed.db"), "FULL", n)
			base := time.Since(start)
			if err != nil {
				emb.Skipped = "seed SQL: " + err.Error()
			} else {
				sq.close()
			}
			rows = append(rows, drawRow(emb, "sqlitestore", n, took, base))
		}
	}

	addr := opt.RedisURL
	if addr == "" {
		if opt.RedisServer == "" {
			return append(rows, skipped(RedisMissing, red)...)
		}
		srv, err := startRedis(ctx, opt.RedisServer, filepath.Join(dir, "redis-draw"))
		if err != nil {
			return append(rows, skipped("could not start redis-server: "+err.Error(), red)...)
		}
		defer srv.stop()
		addr = srv.addr
	}
	ro, err := redisOptions(addr)
	if err != nil {
		return append(rows, skipped(err.Error(), red)...)
	}
	prefix := "waitroom-bench-" + randomHex(6)
	defer cleanRedis(ro, prefix)
	o := *ro
	o.PoolSize = opt.Callers[0] + 8
	client := redis.NewClient(&o)
	defer client.Close()
	rs, err := redisstore.New(ctx, client, redisstore.WithPrefix(prefix))
	if err != nil {
		return append(rows, skipped("redisstore: "+err.Error(), red)...)
	}
	took, err := timeDraw(ctx, rs, n, opt.Callers[0])
	rs.Close()
	if err != nil {
		return append(rows, skipped("failed: "+err.Error(), red)...)
	}
	start := time.Now()
	for i := 0; i < n; i += 1000 {
		pipe := client.Pipeline()
		for j := i; j < min(i+1000, n); j++ {
			pipe.ZAdd(ctx, prefix+":zadd", redis.Z{Score: float64(j), Member: strconv.Itoa(j)})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return append(rows, skipped("baseline: "+err.Error(), red)...)
		}
	}
	return append(rows, drawRow(red, "redisstore", n, took, time.Since(start)))
}

// drawRow fills in a draw row from the two timings.
func drawRow(r Row, store string, n int, took, base time.Duration) Row {
	r.Value = float64(n) / took.Seconds()
	r.BaselineValue = float64(n) / base.Seconds()
	r.Note = fmt.Sprintf("the draw took %d ms, the baseline %d ms", took.Milliseconds(), base.Milliseconds())
	if n != DrawEntrants {
		return r // the goal is set for DrawEntrants
	}
	verdict := "met"
	if took > drawGoals[store] {
		verdict = "NOT met"
	}
	r.Note += fmt.Sprintf("; goal: at most %s (%s)", drawGoals[store], verdict)
	return r
}

// timeDraw fills the pre-queue of a scheduled room with n entrants from
// callers goroutines, then times the operation that holds the draw, and
// checks the draw it published.
func timeDraw(ctx context.Context, st waitroom.Store, n, callers int) (time.Duration, error) {
	now := time.Now()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 100
	cfg.WaitingTimeout = 0
	cfg.OpensAt = now.Add(time.Hour)
	if _, _, err := st.PutRoom(ctx, "drop", cfg, now); err != nil {
		return 0, err
	}
	if err := fan(ctx, callers, n, func(ctx context.Context, _ int) error {
		_, err := st.Join(ctx, "drop", "", now)
		return err
	}); err != nil {
		return 0, fmt.Errorf("fill the pre-queue: %w", err)
	}
	start := time.Now()
	if _, err := st.Sweep(ctx, "drop", cfg.OpensAt); err != nil {
		return 0, fmt.Errorf("draw: %w", err)
	}
	took := time.Since(start)
	d, err := st.Draw(ctx, "drop")
	if err != nil {
		return 0, err
	}
	if err := waitroom.VerifyDraw(d); err != nil {
		return 0, fmt.Errorf("the draw does not verify: %w", err)
	}
	if len(d.Entries) != n {
		return 0, fmt.Errorf("the draw has %d entries, want %d", len(d.Entries), n)
	}
	return took, nil
}
