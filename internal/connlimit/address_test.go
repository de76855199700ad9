package connlimit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"testing"
	"time"
)

// TestKey: IPv4 counts by address (mapped forms too), IPv6 by /64, zones
// dropped.
func TestKey(t *testing.T) {
	for _, tc := range []struct{ a, want string }{
		{"192.0.2.1", "192.0.2.1/32"},
		{"::ffff:192.0.2.1", "192.0.2.1/32"},
		{"2001:db8::1", "2001:db8::/64"},
		{"2001:db8::ffff:ffff:ffff:ffff", "2001:db8::/64"},
		{"2001:db8:0:1::1", "2001:db8:0:1::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"::1", "::/64"},
	} {
		if got := Key(netip.MustParseAddr(tc.a)).String(); got != tc.want {
			t.Errorf("Key(%s) = %s, want %s", tc.a, got, tc.want)
		}
	}
	if got := Key(netip.Addr{}); got.IsValid() {
		t.Errorf("Key(zero) = %v, want the zero prefix", got)
	}
}

// TestTally: each key holds at most max; what is given back is taken again;
// keys holding nothing are forgotten; a nil tally caps nothing.
func TestTally(t *testing.T) {
	tl := NewTally[string](2)
	if !tl.Take("a") || !tl.Take("a") || tl.Take("a") {
		t.Fatal("a: want two takes, then a refusal")
	}
	if !tl.Take("b") || tl.Held("a") != 2 || tl.Keys() != 2 {
		t.Fatalf("b refused, or a holds %d of %d keys", tl.Held("a"), tl.Keys())
	}
	tl.Give("a")
	if !tl.Take("a") {
		t.Fatal("a refused after giving one back")
	}
	tl.Give("a")
	tl.Give("a")
	tl.Give("b")
	if tl.Keys() != 0 {
		t.Errorf("%d keys remembered holding nothing", tl.Keys())
	}
	var none *Tally[string]
	if NewTally[string](0) != nil || !none.Take("a") || none.Max() != 0 {
		t.Error("a tally without a cap refuses or has a max")
	}
	none.Give("a")
}

// capped serves "ok" on a loopback listener under lim.
func capped(t *testing.T, lim Limits) (*Listener, string) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Limit(raw, lim)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l, raw.Addr().String()
}

// heldConn is a connection from a loopback address that has had one
// request answered, and is kept open (keep-alive) when served.
type heldConn struct {
	net.Conn
	status int
	code   string
	retry  string
}

func request(t *testing.T, addr, from string) *heldConn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("from %s: %v", from, err)
	}
	defer resp.Body.Close()
	h := &heldConn{Conn: c, status: resp.StatusCode, retry: resp.Header.Get("Retry-After")}
	if resp.StatusCode != 200 {
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		h.code = body.Error.Code
	} else {
		io.Copy(io.Discard, resp.Body)
	}
	_ = c.SetDeadline(time.Time{})
	return h
}

func (h *heldConn) want(t *testing.T, what string, status int, code string) {
	t.Helper()
	if h.status != status || h.code != code || (status != 200 && h.retry != "5") {
		t.Fatalf("%s: %d %q Retry-After %q, want %d %q", what, h.status, h.code, h.retry, status, code)
	}
}

// TestPerAddressCap: one address holds at most PerAddress connections;
// the next is answered 429 rate_limited and closed, counted apart from the
// global refusals; another address is served; a closed connection gives
// its slot back.
func TestPerAddressCap(t *testing.T) {
	l, addr := capped(t, Limits{Max: 100, PerAddress: 2})
	first := request(t, addr, "127.0.0.2")
	first.want(t, "first from .2", 200, "")
	request(t, addr, "127.0.0.2").want(t, "second from .2", 200, "")
	request(t, addr, "127.0.0.2").want(t, "third from .2", 429, "rate_limited")
	request(t, addr, "127.0.0.3").want(t, "first from .3", 200, "")
	if l.RefusedPerAddress() != 1 || l.Refused() != 0 {
		t.Errorf("refused %d per address and %d globally, want 1 and 0", l.RefusedPerAddress(), l.Refused())
	}
	first.Close()
	deadline := time.Now().Add(10 * time.Second)
	for request(t, addr, "127.0.0.2").status != 200 {
		if time.Now().After(deadline) {
			t.Fatal(".2 still refused 10s after closing a connection")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestExemptPeers: a trusted proxy, which carries everyone's connections,
// is not capped per address; it still counts in the global cap.
func TestExemptPeers(t *testing.T) {
	proxy := netip.MustParseAddr("127.0.0.2")
	l, addr := capped(t, Limits{Max: 100, PerAddress: 1, Exempt: func(a netip.Addr) bool { return a == proxy }})
	for i := range 3 {
		request(t, addr, "127.0.0.2").want(t, fmt.Sprintf("proxy connection %d", i+1), 200, "")
	}
	request(t, addr, "127.0.0.3").want(t, "first from .3", 200, "")
	request(t, addr, "127.0.0.3").want(t, "second from .3", 429, "rate_limited")
	if l.Open() != 4 {
		t.Errorf("open %d, want 4", l.Open())
	}
}

// TestHeadroom: the last fiftieth of the global cap (here one connection)
// goes only to an address that holds none: when one address has filled
// the rest, another still gets in, and the filler is answered 503.
func TestHeadroom(t *testing.T) {
	l, addr := capped(t, Limits{Max: 10, PerAddress: 10})
	for i := range 9 {
		request(t, addr, "127.0.0.2").want(t, fmt.Sprintf(".2's connection %d", i+1), 200, "")
	}
	request(t, addr, "127.0.0.2").want(t, ".2's tenth", 503, "unavailable")
	request(t, addr, "127.0.0.3").want(t, ".3's first", 200, "")
	request(t, addr, "127.0.0.4").want(t, ".4's first, over the cap", 503, "unavailable")
	if l.Refused() != 2 || l.RefusedPerAddress() != 0 {
		t.Errorf("refused %d globally and %d per address, want 2 and 0", l.Refused(), l.RefusedPerAddress())
	}
}

// TestUnixPeersNotCappedPerAddress: peers without an IP address (a Unix
// socket) cannot be told apart, so the per-address cap leaves them to the
// global one.
func TestUnixPeersNotCappedPerAddress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	raw, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l := Limit(raw, Limits{Max: 10, PerAddress: 1})
	defer l.Close()
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	for i := range 3 {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		select {
		case sc := <-accepted:
			defer sc.Close()
		case <-time.After(10 * time.Second):
			t.Fatalf("connection %d not accepted within 10s (refused per address %d)", i+1, l.RefusedPerAddress())
		}
	}
	if l.Open() != 3 || l.RefusedPerAddress() != 0 {
		t.Errorf("open %d, refused per address %d; want 3 and 0", l.Open(), l.RefusedPerAddress())
	}
}
