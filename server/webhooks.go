package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/webhook"
)

// startWebhooks starts delivering the store's webhook outbox, woken by
// every change of a room with webhooks (this process's or, on a shared
// store, another's). It returns a kick, for changes to the outbox that are
// not store events (a replay). Close stops the subscription, then the
// tries in flight.
func (s *Server) startWebhooks() (kick func(), err error) {
	cfg := s.cfg
	d := webhook.New(webhook.Options{Store: s.store, AllowPrivate: cfg.WebhookAllowPrivate, Clock: cfg.Clock,
		Lease: cfg.WebhookLease, Timeout: min(webhookTryCap, cfg.WebhookLease/3), Backoff: webhook.Backoff(webhookFirstWait, cfg.WebhookBackoffMax),
		Logger: cfg.Logger,
		// With a public URL, session.invited carries the whole claim link.
		PublicURL: cfg.publicURL()})
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
		if err := s.reg.Register(c); err != nil {
			cfg.Logger.Warn("webhook metrics", "err", err)
		}
	}
	s.onCloseFunc(s.store.Subscribe(d.Notify))
	s.goBackground(func(ctx context.Context) { d.Run(ctx) })
	return d.Kick, nil
}

// A webhook try takes at most a third of the lease, and never more than
// webhookTryCap; failed deliveries wait webhookFirstWait, then twice as
// long each time, up to Config.WebhookBackoffMax.
const (
	webhookTryCap    = 10 * time.Second
	webhookFirstWait = time.Second
)
