package webhook_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/webhook"
)

// dnsServer is a real DNS server on loopback UDP that answers every AAAA
// question for a name in names with that address, and every other
// question with no answer. It stands for a hostile name's owner, who
// points it wherever they like after the URL was checked.
func dnsServer(t *testing.T, names map[string]netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if ans := dnsAnswer(buf[:n], names); ans != nil {
				pc.WriteTo(ans, from)
			}
		}
	}()
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

// dnsAnswer answers the one question of query (RFC 1035 §4.1).
func dnsAnswer(q []byte, names map[string]netip.Addr) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	var labels []string
	i := 12
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if l > 63 || i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1 : i+3])
	question := q[12 : i+5]
	out := append([]byte(nil), q[:2]...)                  // the query's id
	out = append(out, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0) // a response, recursion available; 1 question
	out = append(out, question...)
	a, ok := names[strings.ToLower(strings.Join(labels, "."))]
	if ok && qtype == 28 { // AAAA
		out[7] = 1 // 1 answer
		b := a.As16()
		out = append(out, 0xc0, 12, 0, 28, 0, 1, 0, 0, 0, 60, 0, 16)
		out = append(out, b[:]...)
	}
	return out
}

// TestDialRefusesWhatResolutionGives: names whose DNS answer is a blocked
// address in a form the old blocklist missed (IPv4-compatible, NAT64 of
// loopback or of the metadata address, local NAT64) are refused when
// dialled, before any connection; a zoned literal is refused with private
// targets allowed too.
func TestDialRefusesWhatResolutionGives(t *testing.T) {
	res := dnsServer(t, map[string]netip.Addr{
		"compat.evil.test":   netip.MustParseAddr("::127.0.0.1"),
		"nat64.evil.test":    netip.MustParseAddr("64:ff9b::7f00:1"),
		"metadata.evil.test": netip.MustParseAddr("64:ff9b::a9fe:a9fe"),
		"local64.evil.test":  netip.MustParseAddr("64:ff9b:1::a00:1"),
		"ula.evil.test":      netip.MustParseAddr("fd00:ec2::254"),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
	defer cancel()
	if ips, err := res.LookupNetIP(ctx, "ip6", "nat64.evil.test"); err != nil || len(ips) != 1 {
		t.Fatalf("the test's DNS server: %v %v", ips, err)
	}
	for _, name := range []string{"compat", "nat64", "metadata", "local64", "ula"} {
		d := webhook.Dialer(false)
		d.Resolver = res
		c, err := d.DialContext(ctx, "tcp", name+".evil.test:80")
		if err == nil {
			c.Close()
			t.Errorf("dial %s.evil.test: connected, want refused", name)
			continue
		}
		if !strings.Contains(err.Error(), "private") {
			t.Errorf("dial %s.evil.test: %v, want the private-address refusal", name, err)
		}
	}

	// A zoned address, here the literal a stored URL held: refused before
	// connecting to a real listener on [::1], with or without private
	// targets.
	ln := listen6(t)
	port := ln.Addr().(*net.TCPAddr).Port
	zoned := net.JoinHostPort("::1%"+loopbackName(t), strconv.Itoa(port))
	for _, allow := range []bool{false, true} {
		c, err := webhook.Dialer(allow).DialContext(ctx, "tcp", zoned)
		if err == nil {
			c.Close()
			t.Errorf("dial %s (allow private %v): connected, want refused", zoned, allow)
		} else if !strings.Contains(err.Error(), "zone") {
			t.Errorf("dial %s (allow private %v): %v, want the zone refusal", zoned, allow, err)
		}
	}
	// Without the zone, private targets allowed, the same listener answers:
	// the refusals above were the check's, not the network's.
	c, err := webhook.Dialer(true).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial %s with private targets allowed: %v", ln.Addr(), err)
	}
	c.Close()
}

// listen6 listens on [::1], which the zone tests need.
func listen6(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatalf("listen on [::1] (IPv6 loopback needed): %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// loopbackName is the name of the loopback interface ("lo" on Linux,
// "lo0" on BSDs and macOS).
func loopbackName(t *testing.T) string {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 {
			return i.Name
		}
	}
	t.Fatal(errors.New("no loopback interface"))
	return ""
}
