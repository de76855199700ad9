package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/sqlitestore"
)

// durableRows measures joins acknowledged only once on disk: the embedded
// store (WAL, synchronous=FULL, group commit) against the seed's one
// INSERT per join on the same SQLite settings, from the same callers.
func durableRows(ctx context.Context, opt Options, dir string) []Row {
	callers := opt.Callers[0]
	row := Row{
		Name: fmt.Sprintf("durable join (sqlitestore, sync=FULL), %d callers", callers), Unit: "ops/s",
		Baseline: "seed SQL INSERT, sync=FULL, same callers",
	}
	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "durable.db"))
	if err != nil {
		return skipped("sqlitestore: "+err.Error(), row)
	}
	defer st.Close()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	if _, _, err := st.PutRoom(ctx, "r", cfg, time.Now()); err != nil {
		return skipped("sqlitestore: "+err.Error(), row)
	}
	sq, err := openSeedSQL(ctx, filepath.Join(dir, "durable-seed.db"), "FULL", 0)
	if err != nil {
		return skipped("seed SQL: "+err.Error(), row)
	}
	defer sq.close()
	var user atomic.Int64
	per := opt.Time / time.Duration(opt.Rounds)
	s, b, err := compare(ctx, opt.Time, opt.Rounds,
		concurrent(callers, per, func(ctx context.Context, _ int) error {
			_, err := st.Join(ctx, "r", "", time.Now())
			return err
		}),
		concurrent(callers, per, func(ctx context.Context, _ int) error {
			u := user.Add(1)
			_, err := sq.ins.ExecContext(ctx, seedQueue, u, seedTime(u))
			return err
		}))
	if err != nil {
		return skipped("failed: "+err.Error(), row)
	}
	row.Value, row.BaselineValue = s.rate(), b.rate()
	row.Note = "WAL; each answer waits for its fsync"
	return []Row{row}
}
