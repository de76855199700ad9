package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom"
)

// scrapeTimeout bounds the store read of one scrape, so a slow store makes
// the gauges go missing rather than the whole scrape time out.
const scrapeTimeout = 2 * time.Second

// gauges is a Collector that reads the room counts from the store at scrape
// time. Reading them then, rather than tracking them from events, keeps them
// right across processes and restarts.
type gauges struct {
	store   waitroom.Store
	waiting *prometheus.Desc
	active  *prometheus.Desc
	up      *prometheus.Desc
}

func newGauges(store waitroom.Store) *gauges {
	return &gauges{
		store:   store,
		waiting: prometheus.NewDesc("waitroom_waiting", "Sessions waiting, by room.", []string{"room"}, nil),
		active:  prometheus.NewDesc("waitroom_active", "Sessions active, by room.", []string{"room"}, nil),
		up:      prometheus.NewDesc("waitroom_store_up", "1 if the room counts could be read from the store at this scrape, else 0.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.waiting
	ch <- g.active
	ch <- g.up
}

// Collect implements prometheus.Collector.
func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	rooms, err := g.store.Rooms(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(g.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(g.up, prometheus.GaugeValue, 1)
	for _, r := range rooms {
		ch <- prometheus.MustNewConstMetric(g.waiting, prometheus.GaugeValue, float64(r.Waiting), r.Name)
		ch <- prometheus.MustNewConstMetric(g.active, prometheus.GaugeValue, float64(r.Active), r.Name)
	}
}
