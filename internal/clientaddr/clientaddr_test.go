package clientaddr_test

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/clientaddr"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{" , ,", "", true},
		{"127.0.0.1/32,10.0.0.0/8", "127.0.0.1/32,10.0.0.0/8", true},
		{"10.1.2.3/8", "10.0.0.0/8", true},
		{" 192.0.2.7 , ::1 ", "192.0.2.7/32,::1/128", true},
		{"::ffff:192.0.2.7", "192.0.2.7/32", true},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8", true},
		{"2001:db8::/32", "2001:db8::/32", true},
		{"10.0.0.0/33", "", false},
		{"nonsense", "", false},
		{"10.0.0.1:80", "", false},
		{"fe80::1%eth0", "", false},
		{"10.0.0.0/8,", "10.0.0.0/8", true},
		{"10.0.0.0/8;192.0.2.1", "", false},
		// The list the gate's own parser (gone: the gate uses this one) was
		// tested with.
		{" 127.0.0.1/32, 10.1.2.3/8,::1, ::ffff:192.0.2.1 ,", "127.0.0.1/32,10.0.0.0/8,::1/128,192.0.2.1/32", true},
		{"localhost", "", false},
		{"1.2.3", "", false},
	} {
		got, err := clientaddr.Parse(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("Parse(%q) error = %v, want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if err == nil && got.String() != tc.want {
			t.Errorf("Parse(%q) = %q, want %q", tc.in, got.String(), tc.want)
		}
		if err == nil && got.Empty() != (tc.want == "") {
			t.Errorf("Parse(%q).Empty() = %v, want %v", tc.in, got.Empty(), tc.want == "")
		}
	}
}

func TestClient(t *testing.T) {
	proxies, err := clientaddr.Parse("127.0.0.1/32,10.0.0.0/8,2001:db8:1::/48")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		trusted clientaddr.Trusted
		remote  string
		xff     []string
		want    string
		proxy   bool
	}{
		{"direct, no header", proxies, "192.0.2.1:5000", nil, "192.0.2.1", false},
		{"direct client spoofing the header", proxies, "192.0.2.1:5000", []string{"203.0.113.9"}, "192.0.2.1", false},
		{"nobody trusted ignores the header", clientaddr.Trusted{}, "127.0.0.1:5000", []string{"203.0.113.9"}, "127.0.0.1", false},
		{"one trusted proxy", proxies, "127.0.0.1:5000", []string{"203.0.113.9"}, "203.0.113.9", true},
		{"trusted proxy, no header", proxies, "127.0.0.1:5000", nil, "127.0.0.1", true},
		{"trusted proxy, empty header", proxies, "127.0.0.1:5000", []string{""}, "127.0.0.1", true},
		{"chain of trusted proxies", proxies, "127.0.0.1:5000", []string{"203.0.113.9, 10.0.0.5, 10.0.0.6"}, "203.0.113.9", true},
		{"client-sent entries left of the client are ignored", proxies, "127.0.0.1:5000", []string{"1.1.1.1, 2.2.2.2, 203.0.113.9, 10.0.0.5"}, "203.0.113.9", true},
		{"repeated headers are one list", proxies, "127.0.0.1:5000", []string{"1.1.1.1, 203.0.113.9", "10.0.0.5"}, "203.0.113.9", true},
		{"every hop trusted: the leftmost", proxies, "127.0.0.1:5000", []string{"10.0.0.7, 10.0.0.5"}, "10.0.0.7", true},
		{"malformed rightmost entry: the proxy", proxies, "127.0.0.1:5000", []string{"203.0.113.9, garbage"}, "127.0.0.1", true},
		{"malformed behind a trusted hop: that hop", proxies, "127.0.0.1:5000", []string{"203.0.113.9, garbage, 10.0.0.5"}, "10.0.0.5", true},
		{"malformed left of the client does not matter", proxies, "127.0.0.1:5000", []string{"garbage, 203.0.113.9"}, "203.0.113.9", true},
		{"empty entry stops the walk", proxies, "127.0.0.1:5000", []string{"203.0.113.9,,10.0.0.5"}, "10.0.0.5", true},
		{"trailing comma stops the walk", proxies, "127.0.0.1:5000", []string{"203.0.113.9,"}, "127.0.0.1", true},
		{"entry with a port", proxies, "127.0.0.1:5000", []string{"203.0.113.9:4711"}, "203.0.113.9", true},
		{"IPv6 entry with brackets and port", proxies, "127.0.0.1:5000", []string{"[2001:db8:2::5]:443"}, "2001:db8:2::5", true},
		{"IPv6 entry with brackets", proxies, "127.0.0.1:5000", []string{"[2001:db8:2::5]"}, "2001:db8:2::5", true},
		{"IPv6 proxy", proxies, "[2001:db8:1::1]:80", []string{"2001:db8:2::5"}, "2001:db8:2::5", true},
		{"IPv4-mapped peer is IPv4", proxies, "[::ffff:127.0.0.1]:80", []string{"::ffff:203.0.113.9"}, "203.0.113.9", true},
		{"zoned entry is malformed", proxies, "127.0.0.1:5000", []string{"fe80::1%eth0"}, "127.0.0.1", true},
		{"zoned peer loses its zone", proxies, "[fe80::1%eth0]:5000", nil, "fe80::1", false},
		{"peer without a port", proxies, "192.0.2.1", nil, "192.0.2.1", false},
		{"no peer at all", proxies, "", []string{"203.0.113.9"}, "invalid IP", false},
		{"RemoteAddr nonsense", proxies, "@", []string{"203.0.113.9"}, "invalid IP", false},
		{"too many trusted hops stop at the bound", proxies, "127.0.0.1:1", []string{"203.0.113.9," + strings.Repeat("10.0.0.5,", 100) + "10.0.0.6"}, "10.0.0.5", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := tc.trusted.Client(r); got.String() != tc.want {
				t.Errorf("Client = %s, want %s", got, tc.want)
			}
			if got := tc.trusted.FromProxy(r); got != tc.proxy {
				t.Errorf("FromProxy = %v, want %v", got, tc.proxy)
			}
		})
	}
}

func TestContains(t *testing.T) {
	tr, err := clientaddr.Parse("10.0.0.0/8,::1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"10.9.8.7", true}, {"::ffff:10.9.8.7", true}, {"11.0.0.0", false}, {"::1", true}, {"::2", false},
	} {
		if got := tr.Contains(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("Contains(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	if tr.Contains(netip.Addr{}) {
		t.Errorf("Contains(zero Addr) = true, want false")
	}
}

// FuzzParse: any list either fails or yields a set whose String reads back
// as the same set.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "127.0.0.1/32,10.0.0.0/8", "::1", "::ffff:10.0.0.0/104", "10.0.0.0/33", "a,b", " 1.2.3.4 ,", "fe80::1%x", "0.0.0.0/0,::/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		tr, err := clientaddr.Parse(list)
		if err != nil {
			return
		}
		again, err := clientaddr.Parse(tr.String())
		if err != nil || again.String() != tr.String() {
			t.Fatalf("Parse(%q).String() = %q reads back as %q, %v", list, tr.String(), again.String(), err)
		}
	})
}

// FuzzClient: whatever the header says, the client is the peer unless the
// peer is trusted, and otherwise an address that is the peer or appears in
// the header; spoofing from an untrusted peer never works.
func FuzzClient(f *testing.F) {
	for _, s := range [][3]string{
		{"127.0.0.1:1", "203.0.113.9, 10.0.0.5", "127.0.0.1,10.0.0.0/8"},
		{"192.0.2.1:1", "203.0.113.9", "127.0.0.1"},
		{"127.0.0.1:1", "garbage,,[::1]:80", "127.0.0.1,::1"},
		{"[::1]:1", "::ffff:1.2.3.4", "::1"},
		{"", "1.2.3.4", ""},
		{"127.0.0.1:1", strings.Repeat("10.0.0.1,", 70), "0.0.0.0/0"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, remote, xff, list string) {
		tr, err := clientaddr.Parse(list)
		if err != nil {
			return
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		r.Header.Set("X-Forwarded-For", xff)
		got := tr.Client(r)
		peer := clientaddr.Peer(r)
		if !tr.Contains(peer) {
			if got != peer {
				t.Fatalf("untrusted peer %q with X-Forwarded-For %q: Client = %s, want the peer %s", remote, xff, got, peer)
			}
			return
		}
		if !got.IsValid() || got.Zone() != "" || got.Is4In6() {
			t.Fatalf("Client = %v, want a plain valid address", got)
		}
		if got != peer && !strings.Contains(xff, got.String()) && !strings.Contains(strings.ToLower(xff), got.String()) {
			// The entry may be spelled differently (leading zeros in IPv6, a
			// mapped form); it must at least parse to the same address.
			found := false
			for e := range strings.SplitSeq(xff, ",") {
				e = strings.TrimSpace(e)
				if ap, err := netip.ParseAddrPort(e); err == nil && ap.Addr().Unmap() == got {
					found = true
				} else if a, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil && a.Unmap() == got {
					found = true
				}
			}
			if !found {
				t.Fatalf("Client = %s, which is neither the peer %s nor in X-Forwarded-For %q", got, peer, xff)
			}
		}
	})
}
