package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
)

// This file implements waitroom.Ledger with plain Redis commands; every
// process sharing the Redis sees what any of them wrote.
//
// Keys, in the room's slot: <prefix>:{<room>}:audit is a stream of the
// room's audit entries (fields s: the session, j: the entry's JSON without
// its id), trimmed to exactly AuditKeep by XADD MAXLEN; an entry's ID is
// its stream id with both parts zero-padded (13 and 6 digits), so IDs sort
// as strings. <prefix>:{<room>}:st:<ms> is the hash of the stats bucket
// starting at <ms> (unix milliseconds): counters grow by HINCRBY, gauges
// are set by HSET; <prefix>:{<room>}:st is a sorted set of the buckets'
// times. A bucket's writes are one MULTI transaction; a read is two round
// trips (the index, then every bucket in one pipeline).
//
// Expiry: Redis can only expire keys by its own clock, so a bucket's hash
// expires at the bucket's time plus StatsKeep (PEXPIREAT), and the index at
// the newest bucket's time plus twice that. Reads also drop buckets more
// than StatsKeep older than the room's newest, as the other stores do, so
// what Stats returns depends only on the times given. A process whose
// clock lags Redis' by more than an hour writes buckets that expire at
// once.
//
// Console sign-ins are <prefix>:console:<SHA-256 of the id, hex>, holding
// the expiry in unix milliseconds and expiring then (PXAT), so Redis never
// holds a usable sign-in id.
//
// go-redis sends a command again when a connection breaks before its
// reply, so in a failover an audit entry may be recorded twice or a
// bucket's counts added twice (see the package documentation).

// ledgerKey returns the key of one of room's ledger structures.
func (s *Store) ledgerKey(room, name string) string {
	return s.cfg.prefix + ":{" + room + "}:" + name
}

// auditID turns a stream id ("ms-seq") into an audit entry ID.
func auditID(streamID string) (string, bool) {
	ms, seq, ok := parseStreamID(streamID)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%013d-%06d", ms, seq), true
}

// parseStreamID parses a stream id or an audit entry ID.
func parseStreamID(id string) (ms, seq uint64, ok bool) {
	a, b, found := strings.Cut(id, "-")
	if !found || a == "" || b == "" || a[0] == '+' || b[0] == '+' {
		return 0, 0, false
	}
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return ms, seq, err1 == nil && err2 == nil
}

// AddAudit implements waitroom.Ledger.
func (s *Store) AddAudit(ctx context.Context, e waitroom.AuditEntry) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := e.Check(); err != nil {
		return err
	}
	e.At = e.At.UTC()
	e.ID = ""
	doc, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("redisstore: encode audit entry: %w", err)
	}
	return s.write(ctx, "add audit entry", redis.NewStringCmd(ctx, "xadd", s.ledgerKey(e.Room, "audit"),
		"maxlen", waitroom.AuditKeep, "*", "s", e.Session, "j", string(doc)))
}

// auditScan is how many stream entries one read takes when a session
// filter may skip most of them.
const auditScan = 1000

// Audit implements waitroom.Ledger. The cursor is an entry's ID. With a
// session filter it reads the stream newest first in chunks until the page
// is full, at most AuditKeep entries.
func (s *Store) Audit(ctx context.Context, room, sessionID string, page waitroom.Page) ([]waitroom.AuditEntry, string, error) {
	if err := s.usable(); err != nil {
		return nil, "", err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return nil, "", err
	}
	end := "+"
	if page.After != "" {
		ms, seq, ok := parseStreamID(page.After)
		if !ok {
			return nil, "", waitroom.Errorf(waitroom.CodeInvalidRequest, "The cursor %q is not one this server returned.", page.After)
		}
		end = "(" + strconv.FormatUint(ms, 10) + "-" + strconv.FormatUint(seq, 10)
	}
	size := page.Size()
	chunk := int64(size + 1)
	if sessionID != "" {
		chunk = max(chunk, auditScan)
	}
	key := s.ledgerKey(room, "audit")
	out := make([]waitroom.AuditEntry, 0, min(size+1, 64))
	for len(out) <= size {
		msgs, err := s.client.XRevRangeN(ctx, key, end, "-", chunk).Result()
		if err != nil {
			return nil, "", waitroom.Unavailable(err, "redisstore: list audit entries")
		}
		for _, m := range msgs {
			if sessionID != "" && m.Values["s"] != sessionID {
				continue
			}
			e, err := decodeAudit(m)
			if err != nil {
				return nil, "", err
			}
			if out = append(out, e); len(out) > size {
				break
			}
		}
		if int64(len(msgs)) < chunk {
			break
		}
		end = "(" + msgs[len(msgs)-1].ID
	}
	next := ""
	if len(out) > size {
		out = out[:size]
		next = out[size-1].ID
	}
	return out, next, nil
}

func decodeAudit(m redis.XMessage) (waitroom.AuditEntry, error) {
	var e waitroom.AuditEntry
	doc, _ := m.Values["j"].(string)
	id, ok := auditID(m.ID)
	if !ok {
		return e, fmt.Errorf("redisstore: audit entry %q has a malformed id", m.ID)
	}
	if err := json.Unmarshal([]byte(doc), &e); err != nil {
		return e, fmt.Errorf("redisstore: audit entry %s is unreadable: %w", m.ID, err)
	}
	e.ID = id
	return e, nil
}

// The fields of a stats bucket's hash; a wait bin i is "w<i>".
const (
	fJoins      = "j"
	fAdmissions = "a"
	fAbandons   = "ab"
	fErrAbs     = "ea"
	fErr        = "e"
	fEstN       = "en"
	fRelErr     = "er"
	fGauges     = "g"
	fWaiting    = "wt"
	fActive     = "ac"
	fETA        = "eta"
)

// AddStats implements waitroom.Ledger in one MULTI transaction. It alone
// of the writes does not wait for replicas (ack.go): WAIT in a MULTI does
// not wait, nobody is answered on it (the stats recorder writes in the
// background), and a bucket lost in a failover loses a minute of figures,
// no session.
func (s *Store) AddStats(ctx context.Context, room string, b waitroom.StatsBucket) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return err
	}
	at := waitroom.StatsBucketMs(b.At)
	keep := waitroom.StatsKeep.Milliseconds()
	ms := strconv.FormatInt(at, 10)
	key, idx := s.ledgerKey(room, "st:"+ms), s.ledgerKey(room, "st")
	pipe := s.client.TxPipeline()
	pipe.HIncrBy(ctx, key, fJoins, b.Joins) // always: it makes the bucket exist
	for _, c := range []struct {
		f string
		n int64
	}{{fAdmissions, b.Admissions}, {fAbandons, b.Abandons}, {fErrAbs, b.EstErrAbsMs}, {fErr, b.EstErrMs}, {fEstN, b.EstN}, {fRelErr, b.EstRelErrBp}} {
		if c.n != 0 {
			pipe.HIncrBy(ctx, key, c.f, c.n)
		}
	}
	for i, n := range b.Waits {
		if n != 0 {
			pipe.HIncrBy(ctx, key, "w"+strconv.Itoa(i), n)
		}
	}
	if b.HasGauges {
		pipe.HSet(ctx, key, fGauges, 1, fWaiting, b.Waiting, fActive, b.Active, fETA, b.ETALastMs)
	}
	pipe.PExpireAt(ctx, key, time.UnixMilli(at+keep))
	pipe.ZAdd(ctx, idx, redis.Z{Score: float64(at), Member: ms})
	pipe.ZRemRangeByScore(ctx, idx, "-inf", strconv.FormatInt(at-keep, 10))
	pipe.PExpireAt(ctx, idx, time.UnixMilli(at+2*keep))
	if _, err := pipe.Exec(ctx); err != nil {
		return waitroom.Unavailable(err, fmt.Sprintf("redisstore: add stats of room %q", room))
	}
	return nil
}

// Stats implements waitroom.Ledger.
func (s *Store) Stats(ctx context.Context, room string, since time.Time) ([]waitroom.StatsBucket, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := waitroom.CheckRoomName(room); err != nil {
		return nil, err
	}
	members, err := s.client.ZRangeByScore(ctx, s.ledgerKey(room, "st"), &redis.ZRangeBy{
		Min: strconv.FormatInt(since.UnixMilli(), 10), Max: "+inf",
	}).Result()
	if err != nil {
		return nil, waitroom.Unavailable(err, fmt.Sprintf("redisstore: list stats of room %q", room))
	}
	if len(members) == 0 {
		return nil, nil
	}
	times := make([]int64, 0, len(members))
	for _, m := range members {
		t, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redisstore: stats index of room %q holds %q", room, m)
		}
		times = append(times, t)
	}
	// Sorted by score, so the last is the newest.
	cutoff := times[len(times)-1] - waitroom.StatsKeep.Milliseconds()
	pipe := s.client.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, 0, len(times))
	kept := times[:0]
	for _, t := range times {
		if t <= cutoff {
			continue
		}
		kept = append(kept, t)
		cmds = append(cmds, pipe.HGetAll(ctx, s.ledgerKey(room, "st:"+strconv.FormatInt(t, 10))))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, waitroom.Unavailable(err, fmt.Sprintf("redisstore: read stats of room %q", room))
	}
	out := make([]waitroom.StatsBucket, 0, len(kept))
	for i, t := range kept {
		h := cmds[i].Val()
		if len(h) == 0 {
			continue // expired by Redis' clock
		}
		b, err := decodeBucket(t, h)
		if err != nil {
			return nil, fmt.Errorf("redisstore: stats bucket %d of room %q: %w", t, room, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// decodeBucket reads a bucket's hash.
func decodeBucket(at int64, h map[string]string) (waitroom.StatsBucket, error) {
	b := waitroom.StatsBucket{At: time.UnixMilli(at).UTC(), ETALastMs: -1}
	for f, v := range h {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return b, fmt.Errorf("field %s is %q", f, v)
		}
		switch f {
		case fJoins:
			b.Joins = n
		case fAdmissions:
			b.Admissions = n
		case fAbandons:
			b.Abandons = n
		case fErrAbs:
			b.EstErrAbsMs = n
		case fErr:
			b.EstErrMs = n
		case fEstN:
			b.EstN = n
		case fRelErr:
			b.EstRelErrBp = n
		case fGauges:
			b.HasGauges = n == 1
		case fWaiting:
			b.Waiting = int(n)
		case fActive:
			b.Active = int(n)
		case fETA:
			b.ETALastMs = n
		default:
			i, err := strconv.Atoi(strings.TrimPrefix(f, "w"))
			if err != nil || !strings.HasPrefix(f, "w") || i < 0 || i >= waitroom.WaitBins {
				return b, fmt.Errorf("unknown field %q", f)
			}
			b.Waits[i] = n
		}
	}
	return b, nil
}

// consoleKey returns the key of a console sign-in.
func (s *Store) consoleKey(id string) string {
	h := sha256.Sum256([]byte(id))
	return s.cfg.prefix + ":console:" + hex.EncodeToString(h[:])
}

// PutConsoleSession implements waitroom.Ledger. The key expires at
// expires by Redis' clock.
func (s *Store) PutConsoleSession(ctx context.Context, id string, expires time.Time) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := waitroom.CheckConsoleSessionID(id); err != nil {
		return err
	}
	ms := expires.UnixMilli()
	return s.write(ctx, "record console session", redis.NewStatusCmd(ctx, "set", s.consoleKey(id), ms, "pxat", ms))
}

// ConsoleSession implements waitroom.Ledger: live while now is before the
// recorded expiry (and Redis has not expired the key).
func (s *Store) ConsoleSession(ctx context.Context, id string, now time.Time) (bool, error) {
	if err := s.usable(); err != nil {
		return false, err
	}
	if id == "" {
		return false, nil
	}
	v, err := s.client.Get(ctx, s.consoleKey(id)).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, waitroom.Unavailable(err, "redisstore: read console session")
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false, fmt.Errorf("redisstore: console session holds %q", v)
	}
	return now.UnixMilli() < ms, nil
}

// DeleteConsoleSession implements waitroom.Ledger.
func (s *Store) DeleteConsoleSession(ctx context.Context, id string) error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.write(ctx, "delete console session", redis.NewIntCmd(ctx, "del", s.consoleKey(id)))
}
