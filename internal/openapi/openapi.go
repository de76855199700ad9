// Package openapi holds the OpenAPI 3.1 description of every route a
// waitroom server answers: the JSON API v1 (with every error each route can
// give, and the event streams' formats), the gate's endpoints and key set,
// the waiting and claim pages, the operator console's page and sign-in API,
// and the operations endpoints. The server publishes it, byte for byte, at
// GET /v1/openapi.json (Path).
//
// openapi.json is maintained by hand, next to this file. Package
// openapitest checks it: it loads and validates the document, and its
// transport and handler wrappers fail a test whose answers the document
// does not describe (a status, a field, an error code, a content type).
package openapi

import _ "embed" // the document

// Path is where the server publishes the document.
const Path = "/v1/openapi.json"

// ContentType is the Content-Type it is served with.
const ContentType = "application/json; charset=utf-8"

//go:embed openapi.json
var document []byte

// JSON returns the document. The slice is shared: callers must not change it.
func JSON() []byte { return document }
