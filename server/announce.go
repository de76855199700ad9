package server

import (
	"context"
	"fmt"
	"net"
	"net/url"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/console"
	"github.com/waitroom/waitroom/internal/web"
)

// Announce writes to Config.Stdout, for the person who started the
// server, where things are once it listens on addr: the home page, the
// console, the waiting page (of the default room, or of --room under
// --upstream, when it exists), the health endpoints and, with Demo, the
// demo. The URLs use PublicURL when it is set, else addr (an unspecified
// address becomes localhost).
func (s *Server) Announce(ctx context.Context, addr net.Addr) {
	base := s.cfg.publicURL()
	if base == "" {
		base = "http://" + browsable(addr)
	}
	out := s.cfg.Stdout
	if s.cfg.Upstream == nil {
		fmt.Fprintf(out, "home:         %s/\n", base)
	}
	fmt.Fprintf(out, "console:      %s%s\n", base, console.Prefix)
	room := waitroom.DefaultRoom
	if s.cfg.Upstream != nil {
		room = s.cfg.Room
	}
	if _, err := s.store.Room(ctx, room); err == nil {
		fmt.Fprintf(out, "waiting page: %s%s%s\n", base, web.PagePrefix, url.PathEscape(room))
	}
	fmt.Fprintf(out, "health:       %s/healthz %s/readyz %s/metrics\n", base, base, base)
	if a := s.MetricsAddr(); a != nil {
		fmt.Fprintf(out, "metrics:      http://%s/metrics (no token: keep it on a private network)\n", browsable(a))
	}
	if s.cfg.Demo {
		fmt.Fprintf(out, "demo: open %s%s%s (one person per browser) or %s%s (one person per tab)\n",
			base, web.PagePrefix, web.DemoRoom, base, web.DemoPrefix)
	}
}

// browsable turns a listening address into a host:port a browser can open:
// an unspecified IP (":8080", "[::]:8080") becomes localhost.
func browsable(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}
