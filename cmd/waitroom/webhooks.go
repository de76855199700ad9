package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/webhook"
)

// startWebhooks starts delivering the store's webhook outbox, woken by
// every change of a room with webhooks (this process's or, on a shared
// store, another's). It returns a kick, for changes to the outbox that
// are not store events (a replay), and a stop that waits for the tries in
// flight. A store without an outbox gets no-ops.
func startWebhooks(ctx context.Context, store waitroom.Store, cfg serveConfig, clock waitroom.Clock, logger *slog.Logger) (kick, stop func()) {
	hooks, ok := store.(waitroom.Hooks)
	if !ok {
		return func() {}, func() {}
	}
	lease, _ := time.ParseDuration(cfg.webhookLease)  // checked by parseServe
	most, _ := time.ParseDuration(cfg.webhookBackoff) // checked by parseServe
	d := webhook.New(webhook.Options{Store: hooks, AllowPrivate: cfg.webhookPrivate, Clock: clock,
		Lease: lease, Timeout: min(10*time.Second, lease/3), Backoff: webhook.Backoff(time.Second, most), Logger: logger})
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
