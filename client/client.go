// Package client is a Go client for waitroom's HTTP API v1.
//
// Errors the server answers come back as *waitroom.Error with the server's
// code and message (and, for already_joined, the live Session when the
// caller is entitled to it: the admin token), so callers
// use waitroom.ErrorCode just as they would against a Store. Transport
// failures come back wrapped, with the cause reachable by errors.Is/As.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/waitroom/waitroom"
)

// maxResponse bounds how much of an answer is read, so a broken or hostile
// server cannot make the client allocate without limit.
const maxResponse = 4 << 20

// Client calls one waitroom server. It is safe for concurrent use.
type Client struct {
	base  string
	http  *http.Client
	token string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the http.Client used for requests (default
// http.DefaultClient). Set timeouts there or on each call's context.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// WithAdminToken sets the admin token sent with admin calls (and with Join
// and Revoke). Leave never sends it, since with it the server would revoke.
func WithAdminToken(token string) Option {
	return func(c *Client) { c.token = token }
}

// New returns a client for the server at baseURL, such as
// "https://wait.example.com". A path prefix in baseURL is kept, for servers
// mounted below the root.
func New(baseURL string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), http: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c
}

// call is one request: what to send and where the answer goes.
type call struct {
	method string
	path   string // already escaped
	query  url.Values
	body   any  // encoded as JSON when not nil
	admin  bool // send the admin token
	out    any  // decoded from a 2xx answer when not nil
	status *int // receives the 2xx status when not nil
	// contentType replaces application/json for the body; header adds
	// request headers (If-Match); etag receives the answer's ETag.
	contentType string
	header      http.Header
	etag        *string
}

// do runs c and turns error answers into *waitroom.Error.
func (c *Client) do(ctx context.Context, k call) error {
	u := c.base + k.path
	if len(k.query) > 0 {
		u += "?" + k.query.Encode()
	}
	var body io.Reader
	if k.body != nil {
		b, err := json.Marshal(k.body)
		if err != nil {
			return fmt.Errorf("waitroom client: encoding %s %s: %w", k.method, k.path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, k.method, u, body)
	if err != nil {
		return fmt.Errorf("waitroom client: %s %s: %w", k.method, k.path, err)
	}
	req.Header.Set("Accept", "application/json")
	if k.body != nil {
		ct := "application/json"
		if k.contentType != "" {
			ct = k.contentType
		}
		req.Header.Set("Content-Type", ct)
	}
	for name, vs := range k.header {
		req.Header[name] = vs
	}
	if k.admin && c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("waitroom client: %s %s: %w", k.method, k.path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return fmt.Errorf("waitroom client: %s %s: reading answer: %w", k.method, k.path, err)
	}
	if len(data) > maxResponse {
		return fmt.Errorf("waitroom client: %s %s: answer larger than %d bytes", k.method, k.path, maxResponse)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return answerError(resp.StatusCode, data)
	}
	if k.status != nil {
		*k.status = resp.StatusCode
	}
	if k.etag != nil {
		*k.etag = resp.Header.Get("ETag")
	}
	if k.out != nil {
		if err := json.Unmarshal(data, k.out); err != nil {
			return fmt.Errorf("waitroom client: %s %s: decoding answer: %w", k.method, k.path, err)
		}
	}
	return nil
}

// errorAnswer is the JSON form of an error answer.
type errorAnswer struct {
	Error *struct {
		Code    waitroom.Code `json:"code"`
		Message string        `json:"message"`
	} `json:"error"`
	Session   *waitroom.Session `json:"session"`
	Challenge json.RawMessage   `json:"challenge"`
}

// answerError turns an error answer into a *waitroom.Error. An answer that
// is not the API's error shape (a proxy's error page, say) gets a code
// guessed from its status.
func answerError(status int, data []byte) error {
	var a errorAnswer
	if err := json.Unmarshal(data, &a); err == nil && a.Error != nil && a.Error.Code != "" {
		e := &waitroom.Error{Code: a.Error.Code, Message: a.Error.Message, Session: a.Session}
		if len(a.Challenge) > 0 && string(a.Challenge) != "null" {
			var ch waitroom.ChallengeDetail
			if json.Unmarshal(a.Challenge, &ch) == nil {
				e.Challenge = &ch
			}
		}
		return e
	}
	return &waitroom.Error{
		Code:    codeForStatus(status),
		Message: fmt.Sprintf("The server answered %d %s.", status, http.StatusText(status)),
		Err:     errors.New("answer is not a waitroom error"),
	}
}

// codeForStatus guesses a code for an error answer without one.
func codeForStatus(status int) waitroom.Code {
	switch {
	case status == http.StatusUnauthorized:
		return waitroom.CodeUnauthorized
	case status == http.StatusNotFound:
		return waitroom.CodeNotFound
	case status == http.StatusMethodNotAllowed:
		return waitroom.CodeMethodNotAllowed
	case status == http.StatusPreconditionFailed:
		return waitroom.CodePreconditionFailed
	case status == http.StatusRequestEntityTooLarge:
		return waitroom.CodeBodyTooLarge
	case status == http.StatusTooManyRequests:
		return waitroom.CodeRateLimited
	case status >= 500:
		return waitroom.CodeUnavailable
	case status >= 400:
		return waitroom.CodeInvalidRequest
	}
	return waitroom.CodeInternal
}

// roomPath returns the escaped path of a room, with more segments appended.
func roomPath(room string, more ...string) string {
	p := "/v1/rooms/" + url.PathEscape(room)
	for _, m := range more {
		p += "/" + url.PathEscape(m)
	}
	return p
}
