package crowd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// roomState is the public room status.
type roomState struct {
	Capacity int       `json:"capacity"`
	Active   int       `json:"active"`
	Waiting  int       `json:"waiting"`
	Paused   bool      `json:"paused"`
	OpensAt  time.Time `json:"opens_at"`
	Entrants int       `json:"entrants"`
}

func roomStatus(ctx context.Context, c *http.Client, base, room string) (roomState, error) {
	var st roomState
	err := getJSON(ctx, c, base+"/v1/rooms/"+room, "", &st)
	return st, err
}

func getJSON(ctx context.Context, c *http.Client, url, token string, v any) error {
	return doJSON(ctx, c, "GET", url, token, nil, v)
}

func doJSON(ctx context.Context, c *http.Client, method, url, token string, body []byte, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %w", method, url, newStatusError(resp.StatusCode, bytes.TrimSpace(b)))
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(b, v)
}
