package seedredis_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/seedredis"
)

// One at a time, the seed's joins line up in order and its positions are
// right; what it gets wrong is only concurrency, which the benchmarks show.
func TestSequentialJoinsLineUp(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: redistest.Server(t)})
	defer c.Close()
	r, err := seedredis.New(ctx, c, "seedtest")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		rank, err := r.Join(ctx, "u"+strconv.Itoa(i))
		if err != nil || rank != int64(i) {
			t.Fatalf("join %d: rank %d, %v; want %d", i, rank, err, i)
		}
	}
	for i := 1; i <= 5; i++ {
		if pos, err := r.Position(ctx, "u"+strconv.Itoa(i)); err != nil || pos != int64(i) {
			t.Errorf("position of u%d: %d, %v; want %d", i, pos, err, i)
		}
	}
	if _, err := r.Position(ctx, "nobody"); err == nil {
		t.Error("position of a user who never joined: no error, want one")
	}
	if n, err := r.DuplicateScores(ctx); err != nil || n != 0 {
		t.Errorf("DuplicateScores after sequential joins = %d, %v; want 0", n, err)
	}
}
