// Package openapitest checks HTTP answers against the OpenAPI document of
// package openapi, so that a test fails when the server answers with a
// status, a header, a field, an error code or a content type the document
// does not describe.
//
// Three ways in, for the three kinds of HTTP tests:
//
//   - Handler wraps a server's handler (a test's httptest.Server, or a
//     handler a test calls with a recorder) and checks every answer it
//     writes, hijacked event streams and WebSockets included, whatever the
//     client: a Go client, a browser or nginx.
//   - NewValidatingTransport wraps a client's RoundTripper and checks every
//     answer the client receives, event streams and WebSocket messages
//     included as they are read.
//   - Watch checks, for the rest of a test, the answers from one server (a
//     process the test started) that any client using Transport receives;
//     Install makes http.DefaultClient such a client.
//
// A request whose path no route of the document matches is checked
// against the document's NoRoute, NoMethod and CleanPath answers, unless
// its path starts with a prefix given to Outside: paths that are not the
// server's (a test's own pages, the app behind the gate's reverse proxy)
// are skipped by that explicit list, never silently.
//
// The document is loaded and validated with kin-openapi (OpenAPI 3.1); its
// schemas are JSON Schema 2020-12, compiled once each, in place in the
// document, with santhosh-tekuri/jsonschema, the validator kin-openapi uses
// for OpenAPI 3.1.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/waitroom/waitroom/internal/openapi"
)

// docURL names the document as a JSON Schema resource.
const docURL = "https://waitroom.invalid/openapi.json"

// spec is the loaded document: its routes, and its schemas compiled on
// first use.
type spec struct {
	raw    map[string]any
	routes []*route

	mu       sync.Mutex
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema
}

// route is one path of the document.
type route struct {
	template string
	segs     []string // literal segments, or param for a parameter
	ops      map[string]bool
}

// param stands for a path parameter among a route's segments.
const param = "\x00"

var (
	loadOnce sync.Once
	loaded   *spec
	loadErr  error
)

// load returns the document, loaded and validated once per process.
func load() (*spec, error) {
	loadOnce.Do(func() { loaded, loadErr = parse(openapi.JSON()) })
	return loaded, loadErr
}

// Validate loads b as an OpenAPI document with kin-openapi and validates it.
func Validate(b []byte) (*openapi3.T, error) {
	l := openapi3.NewLoader()
	doc, err := l.LoadFromData(b)
	if err != nil {
		return nil, fmt.Errorf("loading the OpenAPI document: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("the document is OpenAPI %s, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is invalid: %w", err)
	}
	return doc, nil
}

func parse(b []byte) (*spec, error) {
	if _, err := Validate(b); err != nil {
		return nil, err
	}
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	root, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the document is not a JSON object")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for _, f := range Formats() {
		c.RegisterFormat(f)
	}
	if err := c.AddResource(docURL, raw); err != nil {
		return nil, err
	}
	s := &spec{raw: root, compiler: c, schemas: map[string]*jsonschema.Schema{}}
	paths, _ := root["paths"].(map[string]any)
	for tmpl, item := range paths {
		r := &route{template: tmpl, ops: map[string]bool{}}
		for _, seg := range strings.Split(strings.TrimPrefix(tmpl, "/"), "/") {
			if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
				seg = param
			}
			r.segs = append(r.segs, seg)
		}
		for m := range item.(map[string]any) {
			switch m {
			case "get", "head", "post", "put", "patch", "delete", "options", "trace":
				r.ops[strings.ToUpper(m)] = true
			}
		}
		s.routes = append(s.routes, r)
	}
	// Most specific first: where two templates both match, the one with a
	// literal at the first segment where they differ wins, as in net/http's
	// ServeMux.
	sort.Slice(s.routes, func(i, j int) bool {
		a, b := s.routes[i].segs, s.routes[j].segs
		for k := 0; k < len(a) && k < len(b); k++ {
			if (a[k] == param) != (b[k] == param) {
				return a[k] != param
			}
		}
		return s.routes[i].template < s.routes[j].template
	})
	return s, nil
}

// match finds the route of an escaped request path.
func (s *spec) match(escapedPath string) *route {
	segs := strings.Split(strings.TrimPrefix(escapedPath, "/"), "/")
	for i, seg := range segs {
		if u, err := url.PathUnescape(seg); err == nil {
			segs[i] = u
		}
	}
next:
	for _, r := range s.routes {
		if len(r.segs) != len(segs) {
			continue
		}
		for i, seg := range r.segs {
			if seg == param {
				if segs[i] == "" {
					continue next
				}
				continue
			}
			if seg != segs[i] {
				continue next
			}
		}
		return r
	}
	return nil
}

// schema compiles the schema at pointer (a JSON pointer into the document).
func (s *spec) schema(pointer string) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.schemas[pointer]; ok {
		return sch, nil
	}
	sch, err := s.compiler.Compile(docURL + "#" + pointer)
	if err != nil {
		return nil, err
	}
	s.schemas[pointer] = sch
	return sch, nil
}

// at returns the value at pointer, following a "$ref" there, and the
// pointer it was found at.
func (s *spec) at(pointer string) (map[string]any, string, error) {
	for range 8 {
		var cur any = s.raw
		for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
			if pointer == "" {
				break
			}
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, pointer, fmt.Errorf("no %s in the document", pointer)
			}
			if cur, ok = m[tok]; !ok {
				return nil, pointer, fmt.Errorf("no %s in the document", pointer)
			}
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, pointer, fmt.Errorf("%s is not an object", pointer)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, pointer, nil
		}
		pointer = strings.TrimPrefix(ref, "#")
	}
	return nil, pointer, fmt.Errorf("too many $ref from %s", pointer)
}

// esc escapes a JSON pointer token.
func esc(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// answer is one HTTP answer to check.
type answer struct {
	method string
	path   string // escaped
	status int
	header http.Header
	body   []byte
	// noBody says the body was not captured (an event stream, checked as
	// it goes, or a switched protocol).
	noBody bool
}

// outcome is what check decided about an answer: the problems found, the
// response object it was checked against (its pointer), and whether it was
// skipped as outside the document.
type outcome struct {
	problems []string
	response string
	skipped  bool
}

func (o *outcome) addf(format string, args ...any) {
	o.problems = append(o.problems, fmt.Sprintf(format, args...))
}

// responseOf finds the response object the document gives for a's status:
// the operation's, or for a request that no operation serves, the
// document's NoRoute, NoMethod or CleanPath.
func (s *spec) responseOf(a answer, outside, serves []string) (string, string, bool) {
	method := a.method
	r := s.match(a.path)
	if r != nil && !hasPrefix(r.template, serves) {
		r = nil // another part of the server's route: unknown to this one
	}
	if r == nil {
		for _, p := range outside {
			if strings.HasPrefix(a.path, p) {
				return "", "", true
			}
		}
	}
	op := ""
	if r != nil {
		if !r.ops[method] && method == http.MethodHead && r.ops[http.MethodGet] {
			method = http.MethodGet // every GET answers HEAD
		}
		if r.ops[method] {
			op = "/paths/" + esc(r.template) + "/" + strings.ToLower(method)
		}
	}
	st := strconv.Itoa(a.status)
	if op != "" {
		ops, _, err := s.at(op + "/responses")
		if err == nil {
			if _, ok := ops[st]; ok {
				return op + "/responses/" + st, op, false
			}
			if _, ok := ops[st[:1]+"XX"]; ok {
				return op + "/responses/" + st[:1] + "XX", op, false
			}
			if _, ok := ops["default"]; ok {
				return op + "/responses/default", op, false
			}
		}
	}
	// No operation answers this status here: the answers of any path.
	clean := a.path == cleanPath(a.path)
	switch {
	case a.status == http.StatusMovedPermanently || a.status == http.StatusTemporaryRedirect || a.status == http.StatusPermanentRedirect:
		if !clean || op == "" {
			return "/components/responses/CleanPath", op, false
		}
	case a.status == http.StatusNotFound && op == "":
		return "/components/responses/NoRoute", op, false
	case a.status == http.StatusExpectationFailed:
		// Refused with the connection, before any route.
		return "/components/responses/HeadRefusedExpectation", op, false
	case a.status == http.StatusRequestHeaderFieldsTooLarge:
		return "/components/responses/HeadRefusedTooLarge", op, false
	case a.status == http.StatusBadRequest && (op == "" || strings.HasPrefix(a.header.Get("Content-Type"), "application/json")) && a.header.Get("Connection") == "close":
		return "/components/responses/HeadRefused", op, false
	case a.status == http.StatusRequestEntityTooLarge && op == "" && isAPIPath(a.path):
		// The API's body limit holds before any route is read.
		return "/components/responses/PayloadTooLarge", op, false
	case a.status == http.StatusMethodNotAllowed && op == "" && r != nil:
		return "/components/responses/NoMethod", op, false
	}
	return "", op, false
}

// isAPIPath reports whether p is one of the API's (package httpapi's)
// paths, which refuse a body over 1 MiB whatever their route.
func isAPIPath(p string) bool {
	return (strings.HasPrefix(p, "/v1/") && !strings.HasPrefix(p, "/v1/gate/")) || p == "/healthz" || p == "/readyz" || p == "/metrics"
}

// cleanPath is ServeMux's canonical form of p.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	np := path.Clean(p)
	if strings.HasSuffix(p, "/") && np != "/" {
		np += "/"
	}
	return np
}

// hasPrefix says whether path starts with one of prefixes; no prefixes at
// all stand for every path.
func hasPrefix(path string, prefixes []string) bool {
	if len(prefixes) == 0 {
		return true
	}
	for _, p := range prefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// check checks a against the document.
func (s *spec) check(a answer, outside, serves []string) outcome {
	var o outcome
	resp, op, skip := s.responseOf(a, outside, serves)
	if skip {
		o.skipped = true
		return o
	}
	if resp == "" {
		if op == "" {
			o.addf("no operation of the document serves %s %s, and status %d is none of the answers of an unknown route (404), method (405) or unclean path (301/307/308)", a.method, a.path, a.status)
		} else {
			o.addf("status %d is not documented for %s", a.status, strings.TrimPrefix(strings.ReplaceAll(op, "~1", "/"), "/paths/"))
		}
		return o
	}
	obj, ptr, err := s.at(resp)
	if err != nil {
		o.addf("%v", err)
		return o
	}
	o.response = ptr
	// Headers.
	if hs, ok := obj["headers"].(map[string]any); ok {
		for name := range hs {
			if strings.EqualFold(name, "Content-Type") {
				continue
			}
			h, hptr, err := s.at(ptr + "/headers/" + esc(name))
			if err != nil {
				o.addf("%v", err)
				continue
			}
			vals, present := a.header[http.CanonicalHeaderKey(name)]
			if !present || len(vals) == 0 {
				if req, _ := h["required"].(bool); req {
					o.addf("header %s is required by %s and missing", name, ptr)
				}
				continue
			}
			if _, ok := h["schema"]; ok {
				sch, err := s.schema(hptr + "/schema")
				if err != nil {
					o.addf("compiling %s/schema: %v", hptr, err)
					continue
				}
				if err := sch.Validate(vals[0]); err != nil {
					o.addf("header %s: %q does not match %s/schema: %v", name, vals[0], hptr, err)
				}
			}
		}
	}
	// Body.
	content, _ := obj["content"].(map[string]any)
	ct := a.header.Get("Content-Type")
	if len(content) == 0 {
		if len(a.body) > 0 {
			o.addf("a body (%s, %d bytes) where %s documents none", ct, len(a.body), ptr)
		}
		return o
	}
	if ct == "" {
		if len(a.body) > 0 {
			o.addf("a body without Content-Type where %s documents %s", ptr, keys(content))
		}
		return o
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		o.addf("Content-Type %q: %v", ct, err)
		return o
	}
	key := ""
	for k := range content {
		if strings.EqualFold(k, mt) {
			key = k
		}
	}
	if key == "" {
		o.addf("Content-Type %q is not documented by %s (it documents %s)", ct, ptr, keys(content))
		return o
	}
	if a.noBody || a.method == http.MethodHead {
		return o
	}
	media, _ := content[key].(map[string]any)
	if _, ok := media["schema"]; !ok {
		return o
	}
	schPtr := ptr + "/content/" + esc(key) + "/schema"
	switch {
	case isJSON(mt):
		if len(bytes.TrimSpace(a.body)) == 0 && (a.status == http.StatusNoContent || a.status == http.StatusNotModified) {
			return o
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(a.body))
		if err != nil {
			o.addf("the body is not JSON: %v", err)
			return o
		}
		s.validate(&o, schPtr, v)
	case mt == "text/event-stream":
		p := s.newEvents(schPtr)
		p.feed(a.body)
		o.problems = append(o.problems, p.problems...)
	}
	return o
}

// validate checks v against the schema at schPtr.
func (s *spec) validate(o *outcome, schPtr string, v any) {
	sch, err := s.schema(schPtr)
	if err != nil {
		o.addf("compiling %s: %v", schPtr, err)
		return
	}
	if err := sch.Validate(v); err != nil {
		o.addf("the body does not match %s: %v", schPtr, err)
	}
}

func isJSON(mt string) bool {
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

func keys(m map[string]any) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// events checks a Server-Sent Events stream as it arrives: each event, as
// {"event","id","data"} with data decoded from JSON, against a schema.
type events struct {
	s        *spec
	schema   string
	buf      []byte
	problems []string
	count    int
}

func (s *spec) newEvents(schema string) *events { return &events{s: s, schema: schema} }

// feed takes the next bytes of the stream and checks every event they
// complete. It returns the problems of those events.
func (e *events) feed(b []byte) []string {
	e.buf = append(e.buf, b...)
	var found []string
	for {
		i := bytes.Index(e.buf, []byte("\n\n"))
		if i < 0 {
			return found
		}
		block := string(e.buf[:i])
		e.buf = e.buf[i+2:]
		if p := e.event(block); p != "" {
			found = append(found, p)
			e.problems = append(e.problems, p)
		}
	}
}

// event checks one block of the stream.
func (e *events) event(block string) string {
	ev := map[string]any{}
	var data []string
	for _, line := range strings.Split(block, "\n") {
		if line == "" || strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev["event"] = value
		case "id":
			ev["id"] = value
		case "data":
			data = append(data, value)
		case "retry":
			if _, err := strconv.Atoi(value); err != nil {
				return fmt.Sprintf("event stream: retry %q is not a number", value)
			}
		default:
			return fmt.Sprintf("event stream: unknown field %q", field)
		}
	}
	if data == nil {
		if len(ev) > 0 {
			return fmt.Sprintf("event stream: an event without data: %.200s", block)
		}
		return ""
	}
	if _, ok := ev["event"]; !ok {
		ev["event"] = "message"
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(strings.Join(data, "\n")))
	if err != nil {
		return fmt.Sprintf("event stream: data is not JSON: %v: %.200s", err, block)
	}
	ev["data"] = v
	e.count++
	var o outcome
	e.s.validate(&o, e.schema, ev)
	if len(o.problems) > 0 {
		b, _ := json.Marshal(ev)
		return fmt.Sprintf("event stream: event %.300s: %s", b, strings.Join(o.problems, "; "))
	}
	return ""
}
