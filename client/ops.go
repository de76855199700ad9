package client

import (
	"context"
	"net/http"
)

// Healthz reports whether the server process is up.
func (c *Client) Healthz(ctx context.Context) error {
	return c.do(ctx, call{method: http.MethodGet, path: "/healthz"})
}

// Ready reports whether the server can reach its store.
func (c *Client) Ready(ctx context.Context) error {
	return c.do(ctx, call{method: http.MethodGet, path: "/readyz"})
}
