package metrics_test

import (
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/metrics"
	"github.com/waitroom/waitroom/memstore"
)

// rewindStore is a store that reports repaired rewinds, as redisstore does.
type rewindStore struct {
	*memstore.Store
	n atomic.Int64
}

func (s *rewindStore) Rewinds() int64 { return s.n.Load() }

// TestRewinds: a store with Rewinds has waitroom_redis_rewinds_total,
// read at scrape time; a store without (memstore, which cannot be
// rewound) has no such series.
func TestRewinds(t *testing.T) {
	store := &rewindStore{Store: memstore.New()}
	defer store.Close()
	reg := prometheus.NewRegistry()
	stop := metrics.Register(store, reg)
	checkSeries(t, reg, "waitroom_store_up{} 1", "waitroom_redis_rewinds_total{} 0")
	store.n.Add(2)
	checkSeries(t, reg, "waitroom_store_up{} 1", "waitroom_redis_rewinds_total{} 2")
	stop()
	checkSeries(t, reg)

	plain := memstore.New()
	defer plain.Close()
	defer metrics.Register(plain, reg)()
	checkSeries(t, reg, "waitroom_store_up{} 1")
}
