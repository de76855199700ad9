package admintoken

import (
	"net/netip"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestTriesWindow(t *testing.T) {
	tr := newTries(3, time.Minute, 100)
	a := netip.MustParseAddr("192.0.2.1")
	for i := range 3 {
		if ok, _ := tr.try(a, t0.Add(time.Duration(i)*10*time.Second), false); !ok {
			t.Fatalf("wrong token %d refused", i)
		}
	}
	for _, right := range []bool{false, true} {
		ok, wait := tr.try(a, t0.Add(30*time.Second), right)
		if ok || wait != 30*time.Second {
			t.Errorf("4th token (right %v): ok=%v wait=%v, want refused for 30s", right, ok, wait)
		}
	}
	if ok, _ := tr.try(a, t0.Add(time.Minute), false); !ok {
		t.Errorf("once the first wrong token left the window: refused")
	}
	// Right tokens are never counted: any number of them pass.
	b := netip.MustParseAddr("192.0.2.2")
	for i := range 100 {
		if ok, _ := tr.try(b, t0, true); !ok {
			t.Fatalf("right token %d refused", i)
		}
	}
	if _, found := tr.at[keyOf(b)]; found {
		t.Errorf("an address with only right tokens is tracked")
	}
	// Once its wrong tokens left the window, a right one forgets the address.
	tr.try(b, t0, false)
	tr.try(b, t0.Add(time.Minute), true)
	if _, found := tr.at[keyOf(b)]; found {
		t.Errorf("an address with no wrong token left is still tracked")
	}
}

func TestTriesKeys(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"192.0.2.1", "::ffff:192.0.2.1"},
		{"2001:db8::1", "2001:db8::ffff:1"},
		{"2001:db8::1", "2001:db8:0:0:1:2:3:4"},
		{"fe80::1%eth0", "fe80::2"},
	} {
		if keyOf(netip.MustParseAddr(tc.a)) != keyOf(netip.MustParseAddr(tc.b)) {
			t.Errorf("%s and %s count apart, want together", tc.a, tc.b)
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"192.0.2.1", "192.0.2.2"},
		{"2001:db8::1", "2001:db8:0:1::1"},
		{"0.0.0.0", "::"},
	} {
		if keyOf(netip.MustParseAddr(tc.a)) == keyOf(netip.MustParseAddr(tc.b)) {
			t.Errorf("%s and %s count together, want apart", tc.a, tc.b)
		}
	}
	if keyOf(netip.Addr{}) == keyOf(netip.MustParseAddr("0.0.0.0")) {
		t.Errorf("no address counts with 0.0.0.0")
	}
}

func TestTriesBounded(t *testing.T) {
	tr := newTries(5, time.Minute, 64)
	for i := range 10_000 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		if ok, _ := tr.try(a, t0.Add(time.Duration(i)*time.Millisecond), false); !ok {
			t.Fatalf("address %d refused", i)
		}
	}
	if n := tr.len(); n > 64 {
		t.Errorf("%d addresses tracked, want at most 64", n)
	}
}
