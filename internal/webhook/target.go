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
// targets are allowed: loopback, private, link-local (cloud metadata
// lives at 169.254.169.254), carrier-grade NAT, "this network",
// multicast, reserved and the IPv6 equivalents.
var blocked = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8", "64:ff9b:1::/48",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// PrivateAddr reports whether a is an address a webhook may reach only
// with private targets allowed. An IPv4-mapped IPv6 address is judged as
// the IPv4 address it holds.
func PrivateAddr(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range blocked {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// CheckTarget returns the CodeInvalidRequest error of an endpoint URL a
// webhook may not have: one waitroom.CheckWebhookURL refuses, or, unless
// allowPrivate, one whose host is localhost or a literal private address.
// Names are judged again when dialled (see Dialer), since DNS may answer
// differently then.
func CheckTarget(raw string, allowPrivate bool) error {
	if err := waitroom.CheckWebhookURL(raw); err != nil {
		return err
	}
	if allowPrivate {
		return nil
	}
	u, _ := url.Parse(raw)
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

// Dialer returns a dialer that, unless allowPrivate, refuses to connect to
// a private address whatever name led there: the check runs on the
// address actually dialled, after DNS, so a name that resolves to
// 127.0.0.1 (or is re-pointed there after the URL was checked) is refused.
func Dialer(allowPrivate bool) *net.Dialer {
	d := &net.Dialer{}
	if allowPrivate {
		return d
	}
	d.Control = func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("webhook: dial %s: %w", address, err)
		}
		if PrivateAddr(ap.Addr()) {
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
