package gatekeeper

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"

	"github.com/waitroom/waitroom"
)

// BenchmarkGateVsDirect measures requests per second over loopback TCP
// with parallel clients, each request carrying a valid pass:
//
//   - Direct: the app itself;
//   - Middleware: the same app behind gate.Middleware (the gate's own cost;
//     compare with Direct);
//   - PlainProxy: the app behind a bare httputil.ReverseProxy;
//   - GateProxy: the app behind the gate's reverse proxy (compare with
//     PlainProxy for the gate's cost, with Direct for the whole hop).
//
// The app answers at once ("hello"), so on one small machine, where the
// clients, the proxy and the app share the cores, the proxy's extra HTTP
// hop shows at its largest; BenchmarkGateVsDirectApp5ms does the same with
// an app that takes 5ms per page, as one that reads a database does.
func BenchmarkGateVsDirect(b *testing.B) {
	benchGate(b, 0, 8)
}

// BenchmarkGateVsDirectApp5ms is BenchmarkGateVsDirect with an app that
// takes 5ms to answer, as one that reads a database does: the app, not
// the machine, is then the limit, as it is for most sites a gate protects.
func BenchmarkGateVsDirectApp5ms(b *testing.B) {
	benchGate(b, 5*time.Millisecond, 8)
}

func benchGate(b *testing.B, work time.Duration, parallelism int) {
	cfg := waitroom.DefaultConfig()
	e := newEnv(b, envConfig{room: cfg, clock: waitroom.SystemClock{}})
	s := e.join()
	pass := e.pass(s)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if work > 0 {
			time.Sleep(work)
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "hello, admitted visitor\n")
	})
	direct := httptest.NewServer(app)
	defer direct.Close()
	mw := httptest.NewServer(e.gate.Middleware("default")(app))
	defer mw.Close()
	up, _ := url.Parse(direct.URL)
	transport := func() *http.Transport {
		return &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	}
	plain := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(up); pr.SetXForwarded() },
		Transport: transport(),
	})
	defer plain.Close()
	gp, err := e.gate.Proxy(ProxyConfig{Upstream: up, Room: "default", Transport: transport()})
	if err != nil {
		b.Fatal(err)
	}
	gated := httptest.NewServer(gp)
	defer gated.Close()

	for _, tc := range []struct {
		name string
		url  string
	}{
		{"Direct", direct.URL},
		{"Middleware", mw.URL},
		{"PlainProxy", plain.URL},
		{"GateProxy", gated.URL},
	} {
		b.Run(tc.name, func(b *testing.B) {
			client := &http.Client{Transport: transport()}
			defer client.CloseIdleConnections()
			b.SetParallelism(parallelism)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodGet, tc.url+"/page", nil)
					req.AddCookie(&http.Cookie{Name: gate.CookieName("default", false), Value: pass})
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status %d, want 200", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}
