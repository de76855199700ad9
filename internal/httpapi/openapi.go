package httpapi

import (
	"net/http"

	"github.com/waitroom/waitroom/internal/openapi"
	"github.com/waitroom/waitroom/internal/static"
)

// openapiDoc is the OpenAPI document, with its ETag.
var openapiDoc = static.New(openapi.JSON(), openapi.ContentType)

// openapiCache lets clients and proxies keep the document for five
// minutes, then revalidate it with its ETag.
const openapiCache = "public, max-age=300"

// openapiJSON: GET /v1/openapi.json, public. The OpenAPI 3.1 description of
// every route, served byte for byte.
func (s *server) openapiJSON(w http.ResponseWriter, r *http.Request) {
	openapiDoc.Serve(w, r, openapiCache)
}
