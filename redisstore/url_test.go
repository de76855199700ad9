package redisstore

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestClusterURL(t *testing.T) {
	o, err := parseClusterURL("redis", "u:p@h1:7000,h2:7001, h3:7002?dial_timeout=3s")
	if err != nil {
		t.Fatalf("parseClusterURL: %v", err)
	}
	if want := []string{"h1:7000", "h2:7001", "h3:7002"}; !slices.Equal(o.Addrs, want) {
		t.Errorf("Addrs = %v, want %v", o.Addrs, want)
	}
	if o.Username != "u" || o.Password != "p" || o.DialTimeout != 3*time.Second || o.TLSConfig != nil {
		t.Errorf("options = user %q pass %q dial %s tls %v; want u, p, 3s, no TLS", o.Username, o.Password, o.DialTimeout, o.TLSConfig)
	}
	o, err = parseClusterURL("rediss", "h1:7000")
	if err != nil || o.TLSConfig == nil || !slices.Equal(o.Addrs, []string{"h1:7000"}) {
		t.Errorf("rediss cluster = %+v, %v; want TLS and one seed", o, err)
	}
	for _, bad := range []string{"", "h1:7000/0", "h1:7000?bogus=1"} {
		if _, err := parseClusterURL("redis", bad); err == nil {
			t.Errorf("parseClusterURL(%q) = nil error, want one", bad)
		}
	}
}

func TestSentinelURL(t *testing.T) {
	o, err := parseSentinelURL("redis", "u:p@s1:26379,s2:26380/mymaster/2?sentinel_password=sp&dial_timeout=2s")
	if err != nil {
		t.Fatalf("parseSentinelURL: %v", err)
	}
	if o.MasterName != "mymaster" || o.DB != 2 || !slices.Equal(o.SentinelAddrs, []string{"s1:26379", "s2:26380"}) {
		t.Errorf("master %q db %d sentinels %v; want mymaster, 2, [s1:26379 s2:26380]", o.MasterName, o.DB, o.SentinelAddrs)
	}
	if o.Username != "u" || o.Password != "p" || o.SentinelPassword != "sp" || o.DialTimeout != 2*time.Second {
		t.Errorf("credentials %q/%q sentinel %q dial %s; want u/p, sp, 2s", o.Username, o.Password, o.SentinelPassword, o.DialTimeout)
	}
	o, err = parseSentinelURL("redis", "secret@s1:26379/m")
	if err != nil || o.Password != "secret" || o.Username != "" || o.DB != 0 {
		t.Errorf("password-only sentinel URL = %+v, %v; want password secret, db 0", o, err)
	}
	for _, bad := range []string{"s1:26379", "s1:26379/", "s1:26379/m/x", "s1:26379/m/1/2", "/m"} {
		if _, err := parseSentinelURL("redis", bad); err == nil {
			t.Errorf("parseSentinelURL(%q) = nil error, want one", bad)
		}
	}
}

func TestNewClientKinds(t *testing.T) {
	for url, want := range map[string]string{
		"redis://localhost:6379/1":          "*redis.Client",
		"rediss://localhost:6379":           "*redis.Client",
		"redis+cluster://a:1,b:2":           "*redis.ClusterClient",
		"redis+sentinel://a:1,b:2/mymaster": "*redis.Client",
	} {
		c, err := newClient(url)
		if err != nil {
			t.Errorf("newClient(%q): %v", url, err)
			continue
		}
		got := ""
		switch c.(type) {
		case *redis.Client:
			got = "*redis.Client"
		case *redis.ClusterClient:
			got = "*redis.ClusterClient"
		}
		if got != want {
			t.Errorf("newClient(%q) is %s, want %s", url, got, want)
		}
		_ = c.Close()
	}
	for _, bad := range []string{"localhost:6379", "http://x", "redis+cluster://", "memcached://x"} {
		if c, err := newClient(bad); err == nil {
			_ = c.Close()
			t.Errorf("newClient(%q) = nil error, want one", bad)
		}
	}
	if got := redact("redis://user:hunter2@h:1"); got != "redis://xxx@h:1" {
		t.Errorf("redact = %q, want the password hidden", got)
	}
}

// Open bounds each call (so a frozen Redis fails calls in seconds), unless
// the URL sets its own bounds.
func TestNewClientBoundsCalls(t *testing.T) {
	for _, tc := range []struct {
		url         string
		read, write time.Duration
		retries     int
	}{
		{"redis://h:1/0", callTimeout, callTimeout, callRetries},
		{"redis://h:1/0?read_timeout=5s&max_retries=3", 5 * time.Second, callTimeout, 3},
		{"redis+cluster://a:1,b:2?write_timeout=4s", callTimeout, 4 * time.Second, callRetries},
		{"redis+sentinel://a:1/m", callTimeout, callTimeout, callRetries},
	} {
		c, err := newClient(tc.url)
		if err != nil {
			t.Fatalf("newClient(%q): %v", tc.url, err)
		}
		var read, write time.Duration
		var retries int
		switch c := c.(type) {
		case *redis.Client:
			o := c.Options()
			read, write, retries = o.ReadTimeout, o.WriteTimeout, o.MaxRetries
		case *redis.ClusterClient:
			o := c.Options()
			read, write, retries = o.ReadTimeout, o.WriteTimeout, o.MaxRetries
		}
		_ = c.Close()
		if read != tc.read || write != tc.write || retries != tc.retries {
			t.Errorf("newClient(%q): read %s write %s retries %d; want %s %s %d",
				tc.url, read, write, retries, tc.read, tc.write, tc.retries)
		}
	}
}

// callBound follows the client's read timeout and retries.
func TestCallBound(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want time.Duration
	}{
		{"redis://h:1/0", maxQueueWait + 2*callTimeout}, // 4.5s, as Open documents
		{"redis://h:1/0?read_timeout=5s&max_retries=3", maxQueueWait + 4*5*time.Second},
		{"redis://h:1/0?max_retries=-1", maxQueueWait + callTimeout},
		{"redis://h:1/0?read_timeout=-1", 0},
		{"redis+cluster://a:1,b:2", maxQueueWait + 2*callTimeout},
		{"redis+sentinel://a:1/m", maxQueueWait + 2*callTimeout},
	} {
		c, err := newClient(tc.url)
		if err != nil {
			t.Fatalf("newClient(%q): %v", tc.url, err)
		}
		if got := callBound(c); got != tc.want {
			t.Errorf("callBound(%q) = %s, want %s", tc.url, got, tc.want)
		}
		_ = c.Close()
	}
}

// With Open's bounds, a Redis that accepts connections and never answers
// (a frozen host) fails every call within callBound, joins merged in a
// batch included: go-redis alone takes longer (it retries the pipeline and
// each new connection's handshake), and a failed batch's joins are sent
// again, so without the bound the slowest join here took 14 s.
func TestFrozenRedisBoundsCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out timeouts; skipped with -short")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held sync.WaitGroup
	t.Cleanup(func() { ln.Close(); held.Wait() })
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	held.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			held.Go(func() { <-stop; conn.Close() }) // read nothing, answer nothing
		}
	})
	client, err := newClient("redis://" + ln.Addr().String() + "/0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	p := &pipeliner{client: client, inFlight: defaultInFlight}
	bound := callBound(client) // 3s + 2 × 1.5s
	join := func(i int) []any {
		// Store.args' layout; see mergeJoins.
		return []any{"join", "r", int64(1), "pid", "0", "ch", "0", "1000", "100", "1000", "", fmt.Sprintf("secret-%d", i)}
	}
	keys := []string{"wr:{r}:room"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest time.Duration
	for i := range 40 {
		// Eight at once, so they merge into batch joins, every half second,
		// so later ones queue behind pipelines waiting on the frozen server.
		if i > 0 && i%8 == 0 {
			time.Sleep(500 * time.Millisecond)
		}
		wg.Go(func() {
			start := time.Now()
			_, err := p.do(context.Background(), keys, join(i))
			took := time.Since(start)
			if err == nil {
				t.Errorf("join %d on a frozen Redis succeeded", i)
			}
			mu.Lock()
			slowest = max(slowest, took)
			mu.Unlock()
		})
	}
	wg.Wait()
	// The margin is for a loaded machine.
	if margin := 2 * time.Second; slowest > bound+margin {
		t.Errorf("slowest call on a frozen Redis failed after %s, want within %s (+%s)", slowest, bound, margin)
	}
	t.Logf("bound %s, slowest %s", bound, slowest)
}
