// Package webhook delivers a store's webhook outbox (waitroom.Hooks):
// signed by the Standard Webhooks specification, at least once, retried
// with exponential backoff and jitter, and never to a private address
// unless the operator allows it.
package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"github.com/waitroom/waitroom"
)

// blocked lists the networks a webhook may not reach unless private
// targets are allowed: every block of the IANA IPv4 and IPv6
// special-purpose address registries that is not globally reachable
// (loopback, private, link-local where cloud metadata lives at
// 169.254.169.254 and fd00:ec2::254, carrier-grade NAT, "this network",
// protocol assignments, benchmarking, documentation, discard-only, local
// NAT64, SRv6 SIDs), multicast, reserved and deprecated blocks (the
// IPv4-compatible ::/96, site-local fec0::/10, the 6to4 relay anycast,
// ORCHID) and Teredo (2001::/32, inside 2001::/23: the tunnel reaches an
// IPv4 address hidden XORed in the address, which this check cannot
// judge, and no webhook endpoint needs it). IPv6 outside 2000::/3 is
// refused whole (no global unicast lives there) except the NAT64 prefix
// 64:ff9b::/96, whose addresses are judged by the IPv4 address they
// carry; so are 6to4's (2002::/16).
var blocked = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"2001::/23", "2001:db8::/32", "3fff::/20",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

var (
	// globalUnicast6 is where every global unicast IPv6 address lives
	// (RFC 4291, the IANA IPv6 address space); the rest of the space is
	// loopback, unspecified, IPv4-compatible (::/96), local NAT64
	// (64:ff9b:1::/48), discard-only (100::/64), SRv6 SIDs (5f00::/16),
	// unique local (fc00::/7, fd00:ec2::254 is EC2's metadata), site-local,
	// link-local and multicast, or unassigned.
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
	// nat64 is the well-known NAT64 prefix (RFC 6052): the translator
	// reaches the IPv4 address in the last 32 bits.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// sixToFour is 6to4 (RFC 3056): the tunnel's IPv4 end is bits 16-47.
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// PrivateAddr reports whether a is an address a webhook may reach only
// with private targets allowed. Its zone is ignored (fe80::1%eth0 is
// fe80::1); an IPv4-mapped IPv6 address, a NAT64 address of 64:ff9b::/96
// and a 6to4 address are judged as the IPv4 address they hold.
func PrivateAddr(a netip.Addr) bool {
	// netip.Prefix.Contains is false for any address with a zone: without
	// this, [::1%lo] passed as public.
	a = a.WithZone("").Unmap()
	if !a.IsValid() {
		return true
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return PrivateAddr(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(a):
			return PrivateAddr(netip.AddrFrom4([4]byte(b[2:6])))
		case !globalUnicast6.Contains(a):
			return true
		}
	}
	for _, p := range blocked {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// CheckTarget returns the CodeInvalidRequest error of an endpoint URL a
// webhook may not have: one waitroom.CheckWebhookURL refuses, one whose
// host has an IPv6 zone (http://[fe80::1%25eth0]/: an interface of this
// machine, never a place on the internet), or, unless allowPrivate, one
// whose host is localhost or a literal private address.
// Names are judged again when dialled (see Dialer), since DNS may answer
// differently then.
func CheckTarget(raw string, allowPrivate bool) error {
	if err := waitroom.CheckWebhookURL(raw); err != nil {
		return err
	}
	u, _ := url.Parse(raw)
	// url.Parse decodes %25 in a host, so a zone, and any other percent
	// sign no host name may hold, shows here as "%".
	if strings.Contains(u.Hostname(), "%") {
		return waitroom.Errorf(waitroom.CodeInvalidRequest,
			"Webhook URL %q names a network interface (an IPv6 zone, after %%25); a webhook URL's host is a name or an address without one.", raw)
	}
	if allowPrivate {
		return nil
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return privateError(raw)
	}
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err == nil {
		if PrivateAddr(a) {
			return privateError(raw)
		}
		return nil
	}
	// Forms of an address netip does not read, which some resolvers
	// still take (http://2130706433/, http://0x7f.1/): refuse a host
	// whose every label is a number, decimal or 0x hex (no real name
	// has a numeric top-level label).
	if numericHost(host) {
		return privateError(raw)
	}
	return nil
}

func numericHost(host string) bool {
	for _, l := range strings.Split(host, ".") {
		digits := "0123456789"
		if rest, ok := strings.CutPrefix(l, "0x"); ok {
			l, digits = rest, "0123456789abcdef"
		}
		if strings.Trim(l, digits) != "" {
			return false
		}
	}
	return true
}

func privateError(raw string) error {
	return waitroom.Errorf(waitroom.CodeInvalidRequest,
		"Webhook URL %q points at a loopback or private-network address; the server refuses those unless started with --webhook-allow-private.", raw)
}

// errPrivate is the dial error of a private address.
var errPrivate = errors.New("address is loopback or private (start the server with --webhook-allow-private to allow)")

// errZone is the dial error of an address with an IPv6 zone.
var errZone = errors.New("address has an IPv6 zone (an interface of this machine)")

// Dialer returns a dialer that refuses an address with an IPv6 zone and,
// unless allowPrivate, a private address, whatever name led there: the
// check runs on the address actually dialled, after DNS (or the hosts
// file, which may give a zone), so a name that resolves to 127.0.0.1 (or
// is re-pointed there after the URL was checked) is refused, and so is a
// URL stored before zones were refused.
func Dialer(allowPrivate bool) *net.Dialer {
	d := &net.Dialer{}
	d.Control = func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("webhook: dial %s: %w", address, err)
		}
		if ap.Addr().Zone() != "" {
			return fmt.Errorf("webhook: dial %s: %w", address, errZone)
		}
		if !allowPrivate && PrivateAddr(ap.Addr()) {
			return fmt.Errorf("webhook: dial %s: %w", address, errPrivate)
		}
		return nil
	}
	return d
}

// dialContext is the transport's dial, for tests to see its errors.
func dialContext(allowPrivate bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return Dialer(allowPrivate).DialContext
}
