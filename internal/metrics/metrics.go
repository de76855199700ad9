// Package metrics exports a waitroom store's activity to Prometheus: counters
// of joins, admissions and endings fed by the store's events, and gauges of
// waiting and active sessions read from the store at scrape time.
package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
)

// ackCounter is a store that counts the writes its replicas did not
// confirm in time (redisstore.Store).
type ackCounter interface{ AckTimeouts() uint64 }

// Register subscribes to store's events and registers the waitroom metrics
// on reg:
//
//	waitroom_joins_total{room}                 sessions created
//	waitroom_admissions_total{room}            sessions that became active
//	waitroom_ends_total{room,status,reason}    sessions that ended (left, served, expired)
//	waitroom_waiting{room}, waitroom_active{room}   current counts, read at scrape time
//	waitroom_store_up                          1 if the last scrape could read the rooms
//	waitroom_redis_rewinds_total               rooms found rewound after a failover and repaired
//	                                           (a store with Rewinds, redisstore: this process's)
//	waitroom_redis_ack_timeouts_total          writes a Redis store's replicas did not
//	                                           confirm in time (each answered unavailable);
//	                                           only for a store that counts them (redisstore)
//
// Counters count only this process's changes (events from other processes
// of a shared store are skipped), so summing over instances counts each
// change once. A room's series are dropped when the room is deleted. stop
// ends the subscription and unregisters the metrics. Register panics if reg
// already holds metrics of these names, as prometheus.MustRegister does.
func Register(store waitroom.Store, reg *prometheus.Registry) (stop func()) {
	c := newCounters()
	g := newGauges(store)
	collectors := []prometheus.Collector{c.joins, c.admissions, c.ends, g}
	if r, ok := store.(rewinder); ok {
		collectors = append(collectors, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "waitroom_redis_rewinds_total",
			Help: "Rooms this process found rewound (Redis lost acknowledged writes in a failover) and whose ticket and entry counters it moved past every number it had seen, so none went out twice.",
		}, func() float64 { return float64(r.Rewinds()) }))
	}
	if ac, ok := store.(ackCounter); ok {
		collectors = append(collectors, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "waitroom_redis_ack_timeouts_total",
			Help: "Writes (pipelines of them) whose Redis replicas did not confirm them within --redis-ack-timeout; each was answered 503 unavailable, though it may have been made.",
		}, func() float64 { return float64(ac.AckTimeouts()) }))
	}
	reg.MustRegister(collectors...)
	cancel := store.Subscribe(c.record)
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			for _, col := range collectors {
				reg.Unregister(col)
			}
		})
	}
}

// rewinder is a store that repairs rooms a failover rewound
// (redisstore.Store.Rewinds).
type rewinder interface{ Rewinds() int64 }
