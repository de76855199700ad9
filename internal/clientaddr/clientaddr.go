// Package clientaddr finds the address of the client behind a request,
// believing X-Forwarded-For only from proxies the operator trusts.
//
// A request that arrives straight from a client has that client's address in
// RemoteAddr. One that arrives through reverse proxies has the nearest
// proxy's address there, and the chain of earlier hops in X-Forwarded-For,
// each proxy appending the address it received the request from. Anyone can
// send an X-Forwarded-For header, so only the entries appended by trusted
// proxies are believed: the header is walked from the right, skipping
// trusted hops, and the first untrusted address is the client.
package clientaddr

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// Trusted is a set of proxy addresses whose X-Forwarded-For entries are
// believed. The zero value trusts nobody: every client is its RemoteAddr.
// It is safe for concurrent use and cheap to copy.
type Trusted struct {
	prefixes []netip.Prefix
}

// Parse reads a comma-separated list of IP addresses and CIDR prefixes, such
// as "127.0.0.1/32, 10.0.0.0/8, ::1". Blanks around entries are ignored; an
// empty list trusts nobody. IPv4-mapped IPv6 forms are read as IPv4.
func Parse(list string) (Trusted, error) {
	var t Trusted
	for entry := range strings.SplitSeq(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		p, err := parseEntry(entry)
		if err != nil {
			return Trusted{}, err
		}
		t.prefixes = append(t.prefixes, p)
	}
	return t, nil
}

// FromPrefixes returns the set of ps under Parse's rules: IPv4-mapped forms
// are read as IPv4, zones are refused.
func FromPrefixes(ps []netip.Prefix) (Trusted, error) {
	var t Trusted
	for _, p := range ps {
		if !p.IsValid() {
			return Trusted{}, fmt.Errorf("trusted proxy %q is not an address or CIDR prefix", p)
		}
		q, err := parseEntry(p.String())
		if err != nil {
			return Trusted{}, err
		}
		t.prefixes = append(t.prefixes, q)
	}
	return t, nil
}

// Prefixes returns the set's prefixes, as Parse normalised them.
func (t Trusted) Prefixes() []netip.Prefix { return slices.Clone(t.prefixes) }

func parseEntry(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("trusted proxy %q is not an address or CIDR prefix: %w", s, err)
		}
		a := p.Addr()
		if a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("trusted proxy %q is not an address or CIDR prefix: %w", s, err)
	}
	if a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("trusted proxy %q: zones are not supported", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// String returns the list in canonical form, comma-separated; Parse reads
// it back as the same set.
func (t Trusted) String() string {
	parts := make([]string, len(t.prefixes))
	for i, p := range t.prefixes {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}

// Empty reports whether t trusts nobody.
func (t Trusted) Empty() bool { return len(t.prefixes) == 0 }

// Contains reports whether a is a trusted proxy address.
func (t Trusted) Contains(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	a = a.Unmap()
	for _, p := range t.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Peer returns the address of the request's direct peer (RemoteAddr), or
// the zero Addr when RemoteAddr holds no address (a handler called without
// a network connection).
func Peer(r *http.Request) netip.Addr {
	// A zone on the connection's own address (a link-local peer) is the
	// host's own and harmless; it is dropped so the address compares plainly.
	s := r.RemoteAddr
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("").Unmap()
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return a.WithZone("").Unmap()
	}
	return netip.Addr{}
}

// FromProxy reports whether r came straight from a trusted proxy, so that
// headers such as X-Forwarded-Proto and X-Forwarded-Host may be believed.
func (t Trusted) FromProxy(r *http.Request) bool {
	// Most servers trust nobody: they need not parse RemoteAddr to know.
	return !t.Empty() && t.Contains(Peer(r))
}

// maxHops bounds the X-Forwarded-For entries walked; real chains are a few
// hops long, and the header size is bounded by the server anyway.
const maxHops = 64

// Client returns the client address of r: RemoteAddr's address unless that
// peer is a trusted proxy, in which case X-Forwarded-For is walked from the
// right past trusted hops, and the first untrusted entry is the client. When
// every entry is trusted, the leftmost is. A malformed entry stops the walk:
// the answer is then the last hop known to be genuine (a trusted proxy), so
// a forged or broken header can never name an address of the sender's
// choosing. IPv4-mapped IPv6 addresses come back as IPv4. The zero Addr is
// returned only when RemoteAddr holds no address.
func (t Trusted) Client(r *http.Request) netip.Addr {
	peer := Peer(r)
	if !t.Contains(peer) {
		return peer
	}
	client := peer
	values := r.Header.Values("X-Forwarded-For")
	hops := 0
	// Repeated headers are one list, in order (RFC 9110, 5.3).
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		for {
			j := strings.LastIndexByte(v, ',')
			entry := strings.TrimSpace(v[j+1:])
			if j < 0 {
				entry = strings.TrimSpace(v)
			}
			if entry != "" || j >= 0 {
				if hops++; hops > maxHops {
					return client
				}
				a := parseHop(entry)
				if !a.IsValid() {
					return client
				}
				client = a
				if !t.Contains(a) {
					return a
				}
			}
			if j < 0 {
				break
			}
			v = v[:j]
		}
	}
	return client
}

// parseHop reads one address as found in RemoteAddr or X-Forwarded-For:
// "ip", "ip:port", "[ipv6]" or "[ipv6]:port". Zoned addresses are refused,
// since a zone is meaningless to anyone but the host that wrote it.
func parseHop(s string) netip.Addr {
	if s == "" {
		return netip.Addr{}
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return clean(ap.Addr())
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		s = s[1 : len(s)-1]
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return clean(a)
}

func clean(a netip.Addr) netip.Addr {
	if a.Zone() != "" {
		return netip.Addr{}
	}
	return a.Unmap()
}
