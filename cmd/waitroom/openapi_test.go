package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/openapi/openapitest"
)

// The end-to-end tests' answers are checked against the OpenAPI document
// (openapi/openapi.json): http.DefaultClient (which client.New uses by
// default, as do http.Get and the WebSocket dialer) and the crash tests'
// clients check every answer of a server the test started (watch), so a
// status, header, field or error code the document does not describe fails
// the test.
func init() { openapitest.Install() }

// watch checks, for the rest of t, the answers of the server at url,
// started with args. With --upstream, `/` and the paths the document does not list
// are the protected app's.
func watch(t *testing.T, url string, args []string) {
	t.Helper()
	var opts []openapitest.Option
	if slices.ContainsFunc(args, func(a string) bool {
		return strings.TrimLeft(a, "-") == "upstream" || strings.HasPrefix(strings.TrimLeft(a, "-"), "upstream=")
	}) {
		opts = append(opts, openapitest.Outside("/"), openapitest.App("/"))
	}
	openapitest.Watch(t, url, opts...)
}
