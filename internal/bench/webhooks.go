package bench

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/redisstore"
	"github.com/waitroom/waitroom/sqlitestore"
)

// webhookRows measures what webhooks cost admission: HTTP durable joins
// into a room whose every join is a webhook event, against joins into a
// room without webhooks on the same server, store and deliverer, while
// the endpoint is slow (each answer takes a second), failing (503 at
// once) or healthy. The deliverer runs all along, so its work (tries,
// retries with backoff) falls on both sides of each row; the outbox write
// falls on the subject only. A last row measures the same on Redis, at the
// store (redisWebhookRow).
func webhookRows(ctx context.Context, opt Options, dir string) []Row {
	conns := opt.Callers[0]
	kinds := []struct{ name, what string }{
		{"slow", "endpoint answers after 1s"},
		{"failing", "endpoint answers 503"},
		{"healthy", "endpoint answers 204 (in this process)"},
	}
	var rows []Row
	for _, k := range kinds {
		r := Row{Name: fmt.Sprintf("HTTP durable join with a webhook, %s, %d conns", k.what, conns), Unit: "req/s", Baseline: "same, room without webhooks"}
		if k.name != "healthy" {
			r.Goal = 0.95
		}
		rows = append(rows, r)
	}
	for i, k := range kinds {
		row, err := webhookRow(ctx, opt, filepath.Join(dir, "webhooks-"+k.name+".db"), k.name, conns)
		if err != nil {
			rows[i].Skipped = err.Error()
			continue
		}
		rows[i].Value, rows[i].BaselineValue, rows[i].CPURatio, rows[i].Note = row.Value, row.BaselineValue, row.CPURatio, row.Note
		if ctx.Err() != nil {
			break
		}
	}
	return append(rows, redisWebhookRow(ctx, opt, dir, conns))
}

func webhookRow(ctx context.Context, opt Options, path, kind string, conns int) (Row, error) {
	var row Row
	st, err := sqlitestore.Open(ctx, path)
	if err != nil {
		return row, fmt.Errorf("sqlitestore: %w", err)
	}
	defer st.Close()
	a, err := newAPI(ctx, st, filepath.Dir(path))
	if err != nil {
		return row, err
	}
	defer a.close()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	cfg.WaitingTimeout = waitroom.Duration(time.Hour)
	if _, _, err := st.PutRoom(ctx, "hooked", cfg, time.Now()); err != nil {
		return row, err
	}
	recv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch kind {
		case "slow":
			select {
			case <-time.After(time.Second):
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusNoContent)
		case "failing":
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return row, err
	}
	go func() { _ = recv.Serve(ln) }()
	defer recv.Close()
	if _, _, err := st.PutWebhook(ctx, waitroom.Webhook{Room: "hooked", Name: "bench", URL: "http://" + ln.Addr().String() + "/",
		Events: []string{"*"}, Secret: waitroom.NewWebhookSecret()}, time.Now()); err != nil {
		return row, err
	}
	// The server's own deliverer (AllowPrivate: the receiver is on
	// loopback) delivers while the joins are measured.
	defer recv.Close()

	rounds := 3 * opt.Rounds
	per := opt.Time / time.Duration(rounds)
	req := func(room string) string {
		return "POST /v1/rooms/" + room + "/sessions HTTP/1.1\r\nHost: bench\r\nUser-Agent: waitroom-bench\r\nContent-Length: 0\r\n\r\n"
	}
	sub, err := newLoad(a.srv.addr, conns, func(_ *rand.Rand, b []byte) []byte { return append(b, req("hooked")...) }, http.StatusCreated)
	if err != nil {
		return row, err
	}
	defer sub.close()
	base, err := newLoad(a.srv.addr, conns, func(_ *rand.Rand, b []byte) []byte { return append(b, req(benchRoom)...) }, http.StatusCreated)
	if err != nil {
		return row, err
	}
	defer base.close()
	s, b, err := compare(ctx, opt.Time, rounds, concurrent(conns, per, sub.do), concurrent(conns, per, base.do))
	if err != nil {
		return row, fmt.Errorf("failed: %w", err)
	}
	row.Value, row.BaselineValue = s.rate(), b.rate()
	row.CPURatio = ratio(s.perCPU(), b.perCPU())
	delivered, failed := deliveryCounts(ctx, a.srv.addr, a.server.AdminToken())
	row.Note = fmt.Sprintf("per CPU-second %s; deliverer meanwhile: %s delivered, %s failed tries",
		Ratio(row.CPURatio), Number(delivered), Number(failed))
	return row, nil
}

// redisWebhookRow measures what the atomic outbox costs a Redis join: joins
// into a room with a webhook (the room script also appends each event to
// the room's stream) against joins into a room without, on one store,
// from callers goroutines. Nobody delivers meanwhile: the row is the
// join's own cost.
func redisWebhookRow(ctx context.Context, opt Options, dir string, callers int) Row {
	row := Row{Name: fmt.Sprintf("redisstore join with a webhook (outbox written), %d callers", callers), Unit: "ops/s",
		Baseline: "same, room without webhooks"}
	addr := opt.RedisURL
	if addr == "" {
		if opt.RedisServer == "" {
			row.Skipped = RedisMissing
			return row
		}
		srv, err := startRedis(ctx, opt.RedisServer, filepath.Join(dir, "redis-webhooks"))
		if err != nil {
			row.Skipped = "could not start redis-server: " + err.Error()
			return row
		}
		defer srv.stop()
		addr = srv.addr
	}
	ro, err := redisOptions(addr)
	if err != nil {
		row.Skipped = err.Error()
		return row
	}
	ro.PoolSize = callers + 8
	client := redis.NewClient(ro)
	defer client.Close()
	prefix := "waitroom-bench-" + randomHex(6)
	defer cleanRedis(ro, prefix)
	st, err := redisstore.New(ctx, client, redisstore.WithPrefix(prefix))
	if err != nil {
		row.Skipped = err.Error()
		return row
	}
	defer st.Close()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 0
	cfg.WaitingTimeout = waitroom.Duration(time.Hour)
	for _, room := range []string{"hooked", "plain"} {
		if _, _, err := st.PutRoom(ctx, room, cfg, time.Now()); err != nil {
			row.Skipped = err.Error()
			return row
		}
	}
	if _, _, err := st.PutWebhook(ctx, waitroom.Webhook{Room: "hooked", Name: "bench", URL: "https://example.com/",
		Events: []string{"*"}, Secret: waitroom.NewWebhookSecret()}, time.Now()); err != nil {
		row.Skipped = err.Error()
		return row
	}
	per := opt.Time / time.Duration(opt.Rounds)
	join := func(room string) batchFunc {
		return concurrent(callers, per, func(ctx context.Context, _ int) error {
			_, err := st.Join(ctx, room, "", time.Now())
			return err
		})
	}
	s, b, err := compare(ctx, opt.Time, opt.Rounds, join("hooked"), join("plain"))
	if err != nil {
		row.Skipped = "failed: " + err.Error()
		return row
	}
	row.Value, row.BaselineValue = s.rate(), b.rate()
	return row
}

// deliveryCounts reads the server's webhook counters from its /metrics
// (waitroom_webhook_delivered_total and _failed_total), which needs the
// admin token; unreadable ones are 0.
func deliveryCounts(ctx context.Context, addr, token string) (delivered, failed float64) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, 0
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, _ := strconv.ParseFloat(value, 64)
		switch name {
		case "waitroom_webhook_delivered_total":
			delivered = v
		case "waitroom_webhook_failed_total":
			failed = v
		}
	}
	return delivered, failed
}
