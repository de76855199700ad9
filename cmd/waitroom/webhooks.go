package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/webhook"
)

// startWebhooks starts delivering the store's webhook outbox, woken by
// every change of a room with webhooks (this process's or, on a shared
// store, another's). It returns a kick, for changes to the outbox that
// are not store events (a replay), and a stop that waits for the tries in
// flight. A store without an outbox gets no-ops.
func startWebhooks(ctx context.Context, store waitroom.Store, cfg serveConfig, clock waitroom.Clock, logger *slog.Logger, reg prometheus.Registerer) (kick, stop func()) {
	hooks, ok := store.(waitroom.Hooks)
	if !ok {
		return func() {}, func() {}
	}
	lease, _ := time.ParseDuration(cfg.webhookLease)  // checked by parseServe
	most, _ := time.ParseDuration(cfg.webhookBackoff) // checked by parseServe
	d := webhook.New(webhook.Options{Store: hooks, AllowPrivate: cfg.webhookPrivate, Clock: clock,
		Lease: lease, Timeout: min(10*time.Second, lease/3), Backoff: webhook.Backoff(time.Second, most), Logger: logger,
		// With --public-url, session.invited carries the whole claim link.
		PublicURL: cfg.publicURL})
	for _, c := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waitroom_webhook_delivered_total",
			Help: "Webhook deliveries this process made that the endpoint accepted (2xx)."}, func() float64 { return float64(d.Counts().Delivered) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waitroom_webhook_failed_total",
			Help: "Webhook tries this process made that failed (retried later)."}, func() float64 { return float64(d.Counts().Failed) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waitroom_webhook_dead_total",
			Help: "Webhook deliveries this process gave up on (dead letters)."}, func() float64 { return float64(d.Counts().Dead) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waitroom_webhook_paused_endpoints",
			Help: "Webhook endpoints this process has paused after failures in a row (probed now and then)."}, func() float64 { return float64(len(d.Paused())) }),
	} {
		if err := reg.Register(c); err != nil {
			logger.Warn("webhook metrics", "err", err)
		}
	}
	cancelSub := store.Subscribe(d.Notify)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { d.Run(ctx) })
	return d.Kick, func() {
		cancelSub()
		cancel()
		wg.Wait()
	}
}
