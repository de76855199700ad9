package redisstore

import (
	"slices"
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
