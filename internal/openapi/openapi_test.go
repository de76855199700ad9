package openapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/apierror"
	"github.com/waitroom/waitroom/internal/console"
	"github.com/waitroom/waitroom/internal/door"
	"github.com/waitroom/waitroom/internal/gatekeeper"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/openapi"
	"github.com/waitroom/waitroom/internal/openapi/openapitest"
	"github.com/waitroom/waitroom/internal/roomview"
	"github.com/waitroom/waitroom/internal/web"
	"github.com/waitroom/waitroom/memstore"
)

// doc is the document as plain JSON.
func doc(t *testing.T) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(openapi.JSON(), &d); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	return d
}

func TestDocumentIsValidOpenAPI31(t *testing.T) {
	d, err := openapitest.Validate(openapi.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if d.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", d.OpenAPI)
	}
	// Every operation has an id, a summary and at least one answer.
	ids := map[string]string{}
	for p, item := range d.Paths.Map() {
		for m, op := range item.Operations() {
			if op.OperationID == "" || op.Summary == "" || op.Responses.Len() == 0 {
				t.Errorf("%s %s: operationId %q, summary %q, %d answers", m, p, op.OperationID, op.Summary, op.Responses.Len())
			}
			if other, dup := ids[op.OperationID]; dup {
				t.Errorf("operationId %s of %s %s is also %s's", op.OperationID, m, p, other)
			}
			ids[op.OperationID] = m + " " + p
		}
	}
}

// goPattern turns a ServeMux pattern's path into the document's template.
func goPattern(p string) string {
	return strings.TrimSuffix(p, "{$}")
}

// docOps returns "METHOD /path" of every operation of the document.
func docOps(t *testing.T) []string {
	var out []string
	for p, item := range doc(t)["paths"].(map[string]any) {
		for m := range item.(map[string]any) {
			switch m {
			case "get", "head", "post", "put", "patch", "delete", "options", "trace":
				out = append(out, strings.ToUpper(m)+" "+p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// apiRoutes reads the patterns of httpapi/routes.go, the one place that
// lists the API.
func apiRoutes(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("../httpapi/routes.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`m\.Handle(?:Func)?\("([A-Z]+) ([^"]+)"`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		out = append(out, m[1]+" "+goPattern(m[2]))
	}
	if len(out) < 30 {
		t.Fatalf("found %d routes in httpapi/routes.go; the pattern no longer reads it", len(out))
	}
	return out
}

// otherRoutes are the routes of the server beside the API's: the waiting
// pages (package web), the gate, which answers any method, and the console.
func otherRoutes() []string {
	out := []string{
		"GET " + web.PagePrefix + "{room}",
		"POST " + web.PagePrefix + "{room}",
		"POST " + web.PagePrefix + "{room}/join",
		"GET " + web.ClaimPrefix + "{room}/{id}",
		"POST " + web.ClaimPrefix + "{room}/{id}",
		"GET " + web.ClientPath,
		"GET /waitroom.d.ts", // web.TypesPath
		"GET " + web.AssetPrefix + "{asset}",
		"GET " + web.DemoPrefix,
		"GET " + web.DemoAppPath,
		"GET " + strings.TrimSuffix(web.HomePath, "{$}"),
		"GET " + gatekeeper.JWKSPath,
		"GET " + strings.TrimSuffix(console.Prefix, "/"),
		"GET " + console.Prefix,
		"GET " + console.Prefix + "{file}",
		"GET " + console.Prefix + "api/session",
		"POST " + console.Prefix + "api/session",
		"DELETE " + console.Prefix + "api/session",
	}
	for _, p := range []string{gatekeeper.ForwardAuthPath, gatekeeper.AuthRequestPath} {
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			out = append(out, m+" "+p)
		}
	}
	return out
}

func TestEveryRouteIsDocumentedAndNothingElse(t *testing.T) {
	routes := append(apiRoutes(t), otherRoutes()...)
	ops := docOps(t)
	for _, r := range apiRoutes(t) {
		if !slices.Contains(ops, r) {
			t.Errorf("httpapi/routes.go registers %s; openapi.json has no such operation", r)
		}
	}
	for _, r := range otherRoutes() {
		if !slices.Contains(ops, r) {
			t.Errorf("the server answers %s; openapi.json has no such operation", r)
		}
	}
	for _, op := range ops {
		if !slices.Contains(routes, op) {
			t.Errorf("openapi.json documents %s, which no handler registers", op)
		}
	}
	if !slices.Contains(apiRoutes(t), "GET "+openapi.Path) {
		t.Errorf("httpapi/routes.go does not serve the document at %s", openapi.Path)
	}
}

func TestEveryErrorCodeWithItsStatus(t *testing.T) {
	d := doc(t)
	schemas := d["components"].(map[string]any)["schemas"].(map[string]any)
	enum := func(v any) []string {
		var out []string
		for _, x := range v.([]any) {
			out = append(out, x.(string))
		}
		return out
	}
	all := enum(schemas["ErrorCode"].(map[string]any)["enum"])
	// byStatus: the codes the Error<status> schema lists.
	byStatus := map[int][]string{}
	for name, s := range schemas {
		st, err := strconv.Atoi(strings.TrimPrefix(name, "Error"))
		if !strings.HasPrefix(name, "Error") || err != nil {
			continue
		}
		parts := s.(map[string]any)["allOf"].([]any)
		codes := parts[1].(map[string]any)["properties"].(map[string]any)["error"].(map[string]any)["properties"].(map[string]any)["code"].(map[string]any)["enum"]
		byStatus[st] = enum(codes)
	}
	// Every code the server answers with: package waitroom's and
	// apierror's own (TestEveryCodeOneStatus in apierror holds the map to
	// errors.go).
	codes := apierror.Codes()
	for _, c := range codes {
		if !slices.Contains(all, string(c)) {
			t.Errorf("code %s is not in the document's ErrorCode", c)
		}
		st := apierror.Status(c)
		if !slices.Contains(byStatus[st], string(c)) {
			t.Errorf("code %s has status %d (apierror), but the document's Error%d does not list it", c, st, st)
		}
		for other, list := range byStatus {
			if other != st && slices.Contains(list, string(c)) {
				t.Errorf("code %s has status %d (apierror), but the document's Error%d lists it", c, st, other)
			}
		}
	}
	for _, c := range all {
		if !slices.Contains(codes, waitroom.Code(c)) {
			t.Errorf("the document's ErrorCode lists %s, which has no status in apierror", c)
		}
	}
	// Each status of an Error<status> schema is the status of its answers.
	responses := d["components"].(map[string]any)["responses"].(map[string]any)
	for name, r := range responses {
		content, _ := r.(map[string]any)["content"].(map[string]any)
		js, _ := content["application/json"].(map[string]any)
		schema, _ := js["schema"].(map[string]any)
		ref, _ := schema["$ref"].(string)
		if !strings.HasPrefix(ref, "#/components/schemas/Error") || ref == "#/components/schemas/Error" {
			continue
		}
		st, _ := strconv.Atoi(strings.TrimPrefix(ref, "#/components/schemas/Error"))
		for p, item := range d["paths"].(map[string]any) {
			for m, op := range item.(map[string]any) {
				ops, ok := op.(map[string]any)
				if !ok {
					continue
				}
				rs, _ := ops["responses"].(map[string]any)
				for status, v := range rs {
					if v.(map[string]any)["$ref"] == "#/components/responses/"+name && status != strconv.Itoa(st) {
						t.Errorf("%s %s answers %s with %s, whose codes have status %d", m, p, status, name, st)
					}
				}
			}
		}
	}
}

func TestServedByteForByte(t *testing.T) {
	store := memstore.New()
	rooms := roomview.New(roomview.Config{Store: store})
	dr := door.New(rooms, []byte("a test door secret of 32 bytes or more"))
	defer rooms.Close()
	h := httpapi.NewHandler(httpapi.Config{Store: store, Admit: admit.New(admit.Config{Store: store, Door: dr})})
	srv := httptest.NewServer(openapitest.Handler(t, h))
	defer srv.Close()
	resp, err := http.Get(srv.URL + openapi.Path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(b, openapi.JSON()) {
		t.Fatalf("GET %s: %d, %d bytes; want 200 and the document's %d bytes", openapi.Path, resp.StatusCode, len(b), len(openapi.JSON()))
	}
	if ct := resp.Header.Get("Content-Type"); ct != openapi.ContentType {
		t.Errorf("Content-Type %q, want %q", ct, openapi.ContentType)
	}
	if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "public") || !strings.Contains(cc, "max-age=") {
		t.Errorf("Cache-Control %q, want it cacheable", cc)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+openapi.Path, nil)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	again, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	again.Body.Close()
	if again.StatusCode != http.StatusNotModified {
		t.Errorf("GET with If-None-Match: %d, want 304", again.StatusCode)
	}
	// No admin token is needed, whatever the Authorization says.
	req, _ = http.NewRequest(http.MethodGet, srv.URL+openapi.Path, nil)
	req.Header.Set("Authorization", "Bearer wrong")
	third, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	third.Body.Close()
	if third.StatusCode != http.StatusOK {
		t.Errorf("GET with a wrong token: %d, want 200", third.StatusCode)
	}
}
