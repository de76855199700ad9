// Package seedredis is the waitlist of the seed design "Using Redis sorted
// sets to build a scalable real-time web waiting list" (shared/seeds/001),
// as its command sequence: the baseline that redisstore's benchmarks and
// `waitroom bench` measure against, kept in one place so both measure the
// same thing.
package seedredis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The seed's settings.
const (
	// Max is MAX_OCCUPANCY: New fills the participants hash to it, so every
	// join waits.
	Max = 100
	// TTL is WAITING_TTL and CHECKIN_TTL.
	TTL = 3600 * time.Second
	// Dropout is how long a check-in counts.
	Dropout = 60 * time.Second
)

// Room is one room of the seed design, on its own keys.
type Room struct {
	c                            *redis.Client
	participants, waiting, check string
}

// New returns a room under prefix whose participants hash is full (Max
// participants), so every join waits, as in a full room.
func New(ctx context.Context, c *redis.Client, prefix string) (*Room, error) {
	r := &Room{c: c, participants: prefix + ":room:participants", waiting: prefix + ":room:waiting", check: prefix + ":room:checkin"}
	for i := range Max {
		if err := c.HSet(ctx, r.participants, "p"+strconv.Itoa(i), "{}").Err(); err != nil {
			return nil, fmt.Errorf("seed room: HSET: %w", err)
		}
	}
	return r, nil
}

// checkQuery is the seed's five-command check pipeline.
func (r *Room) checkQuery(ctx context.Context, user string) (participants, waiting int64, rank *int64, err error) {
	var hlen, zcard, zrank *redis.IntCmd
	_, err = r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		hlen = p.HLen(ctx, r.participants)
		zcard = p.ZCard(ctx, r.waiting)
		zrank = p.ZRank(ctx, r.waiting, user)
		p.HGet(ctx, r.participants, user)
		p.ZRangeByScore(ctx, r.check, &redis.ZRangeBy{Min: "0", Max: strconv.FormatInt(time.Now().Add(-Dropout).UnixMilli(), 10)})
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, nil, err
	}
	if v, err := zrank.Result(); err == nil {
		rank = &v
	}
	return hlen.Val(), zcard.Val(), rank, nil
}

// Join is the seed's check() for a newcomer to a full room: the check
// pipeline, findLastUser (the last score), then ZADD at that score + 1 and
// ZRANK. It returns the 1-based rank. Its steps are separate round trips,
// so concurrent joins may read the same last score and share a score.
func (r *Room) Join(ctx context.Context, user string) (int64, error) {
	participants, waiting, rank, err := r.checkQuery(ctx, user)
	if err != nil {
		return 0, err
	}
	if rank != nil || participants+waiting < Max {
		return 0, errors.New("the seed's room is not full")
	}
	// findLastUser: the last entry of the waiting set with its score.
	last, err := r.c.ZRevRangeWithScores(ctx, r.waiting, 0, 0).Result()
	if err != nil {
		return 0, err
	}
	score := 1.0
	if len(last) > 0 {
		score = last[0].Score + 1
	}
	now := float64(time.Now().UnixMilli())
	var zrank *redis.IntCmd
	_, err = r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, r.waiting, redis.Z{Score: score, Member: user})
		p.Expire(ctx, r.waiting, TTL)
		p.ZAdd(ctx, r.check, redis.Z{Score: now, Member: user})
		p.Expire(ctx, r.check, TTL)
		zrank = p.ZRank(ctx, r.waiting, user)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return zrank.Val() + 1, nil
}

// Position is the seed's check() for a waiting user: the check pipeline,
// then the check-in update. It returns the 1-based rank.
func (r *Room) Position(ctx context.Context, user string) (int64, error) {
	_, _, rank, err := r.checkQuery(ctx, user)
	if err != nil {
		return 0, err
	}
	if rank == nil {
		return 0, fmt.Errorf("seed user %s is not waiting", user)
	}
	_, err = r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, r.check, redis.Z{Score: float64(time.Now().UnixMilli()), Member: user})
		p.Expire(ctx, r.check, TTL)
		return nil
	})
	return *rank + 1, err
}

// DuplicateScores counts waiting users who share their score with an
// earlier one: joins whose order was lost.
func (r *Room) DuplicateScores(ctx context.Context) (int, error) {
	zs, err := r.c.ZRangeWithScores(ctx, r.waiting, 0, -1).Result()
	if err != nil {
		return 0, err
	}
	seen := make(map[float64]bool, len(zs))
	dups := 0
	for _, z := range zs {
		if seen[z.Score] {
			dups++
		}
		seen[z.Score] = true
	}
	return dups, nil
}
