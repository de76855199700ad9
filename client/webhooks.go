package client

import (
	"context"
	"net/http"

	"github.com/waitroom/waitroom"
)

// WebhookRequest is the body of PutWebhook.
type WebhookRequest struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
	// Secret is "whsec_…"; empty, the server makes one and answers it.
	Secret string `json:"secret,omitempty"`
}

// Webhook is a webhook as the API shows it.
type Webhook struct {
	waitroom.Webhook
	Stats waitroom.HookStats `json:"stats"`
}

// PutWebhook creates or replaces webhook name of room (admin). The answer
// holds the secret.
func (c *Client) PutWebhook(ctx context.Context, room, name string, r WebhookRequest) (w Webhook, created bool, err error) {
	var status int
	err = c.do(ctx, call{method: http.MethodPut, path: roomPath(room, "webhooks", name), body: r, out: &w, admin: true, status: &status})
	return w, status == http.StatusCreated, err
}

// Webhooks lists room's webhooks with their delivery stats, without
// secrets (admin).
func (c *Client) Webhooks(ctx context.Context, room string) ([]Webhook, error) {
	var out struct {
		Webhooks []Webhook `json:"webhooks"`
	}
	err := c.do(ctx, call{method: http.MethodGet, path: roomPath(room, "webhooks"), out: &out, admin: true})
	return out.Webhooks, err
}

// DeleteWebhook deletes webhook name of room and what it had not
// delivered (admin).
func (c *Client) DeleteWebhook(ctx context.Context, room, name string) error {
	return c.do(ctx, call{method: http.MethodDelete, path: roomPath(room, "webhooks", name), admin: true})
}

// DeadLetters lists one page of room's dead letters, newest first (admin).
func (c *Client) DeadLetters(ctx context.Context, room string, page waitroom.Page) ([]waitroom.Delivery, string, error) {
	var out struct {
		DeadLetters []waitroom.Delivery `json:"dead_letters"`
		Next        string              `json:"next"`
	}
	err := c.do(ctx, call{method: http.MethodGet, path: roomPath(room, "dead-letters"), query: pageQuery(page), out: &out, admin: true})
	return out.DeadLetters, out.Next, err
}

// Replay sends room's dead letters of ids again, or all of them when ids
// is empty, and returns how many (admin).
func (c *Client) Replay(ctx context.Context, room string, ids []string) (int, error) {
	var out struct {
		Replayed int `json:"replayed"`
	}
	// No ids is no field: the API refuses a null one.
	body := map[string][]string{}
	if ids != nil {
		body["ids"] = ids
	}
	err := c.do(ctx, call{method: http.MethodPost, path: roomPath(room, "dead-letters", "replay"), body: body, out: &out, admin: true})
	return out.Replayed, err
}
