package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
	"github.com/waitroom/waitroom/internal/door"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/openapi"
	"github.com/waitroom/waitroom/internal/roomview"
	"github.com/waitroom/waitroom/memstore"
)

// The client checked against the OpenAPI document (openapi/openapi.json,
// as package openapi embeds it): TestClientAgainstOpenAPI calls every
// method of Client against a real server and checks each request and what
// the method decoded against the document; TestClientTypesAgainstOpenAPI
// checks the Go types the client decodes and sends, field by field.

// exchange is one request the client made and the answer it got.
type exchange struct {
	method, path string // path as sent (escaped)
	query        url.Values
	reqBody      []byte
	status       int
	respBody     []byte
}

// recording is a RoundTripper that keeps every exchange.
type recording struct {
	mu  sync.Mutex
	log []exchange
}

func (r *recording) RoundTrip(req *http.Request) (*http.Response, error) {
	x := exchange{method: req.Method, path: req.URL.EscapedPath(), query: req.URL.Query()}
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		x.reqBody = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	x.status, x.respBody = resp.StatusCode, b
	r.mu.Lock()
	r.log = append(r.log, x)
	r.mu.Unlock()
	return resp, nil
}

func (r *recording) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.log)
}

func (r *recording) since(n int) []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log[n:])
}

// document is the OpenAPI document, decoded.
type document struct {
	root map[string]any
}

func loadDocument(t *testing.T) *document {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(openapi.JSON(), &root); err != nil {
		t.Fatalf("the OpenAPI document does not decode: %v", err)
	}
	return &document{root: root}
}

// resolve follows $ref until it reaches a node that is not a reference.
func (d *document) resolve(node any) map[string]any {
	m, _ := node.(map[string]any)
	for i := 0; m != nil && i < 32; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		var cur any = d.root
		for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
			cur = cur.(map[string]any)[tok]
		}
		m, _ = cur.(map[string]any)
	}
	return m
}

// operation finds the operation that answers method on path (escaped): the
// path template that matches with the most literal segments.
func (d *document) operation(method, path string) (template string, op, item map[string]any) {
	segs := strings.Split(path, "/")
	best := -1
	for tmpl, v := range d.root["paths"].(map[string]any) {
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		literal, ok := 0, true
		for i, s := range ts {
			switch {
			case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
				ok = ok && segs[i] != ""
			case s == segs[i]:
				literal++
			default:
				ok = false
			}
		}
		if ok && literal > best {
			best, template, item = literal, tmpl, d.resolve(v)
		}
	}
	if item == nil {
		return "", nil, nil
	}
	op, _ = item[strings.ToLower(method)].(map[string]any)
	return template, op, item
}

// queryParams returns the names of the query parameters of an operation.
func (d *document) queryParams(item, op map[string]any) []string {
	var names []string
	for _, holder := range []map[string]any{item, op} {
		ps, _ := holder["parameters"].([]any)
		for _, p := range ps {
			if m := d.resolve(p); m["in"] == "query" {
				names = append(names, m["name"].(string))
			}
		}
	}
	return names
}

// jsonSchema returns the schema of the application/json content of a
// response or request body node.
func (d *document) jsonSchema(node any) map[string]any {
	m := d.resolve(node)
	content, _ := m["content"].(map[string]any)
	for mt, c := range content {
		if strings.HasPrefix(mt, "application/json") {
			return d.resolve(c.(map[string]any)["schema"])
		}
	}
	return nil
}

// properties returns the properties a schema allows, with those of its
// allOf, oneOf and anyOf parts; open says whether it allows others.
func (d *document) properties(schema map[string]any) (props map[string]any, open bool) {
	props = map[string]any{}
	open = true
	var walk func(s map[string]any, top bool)
	walk = func(s map[string]any, top bool) {
		s = d.resolve(s)
		if s == nil {
			return
		}
		if p, ok := s["properties"].(map[string]any); ok {
			for k, v := range p {
				props[k] = v
			}
		}
		if ap, ok := s["additionalProperties"].(bool); ok && !ap && top {
			open = false
		}
		for _, kw := range []string{"allOf", "oneOf", "anyOf"} {
			parts, _ := s[kw].([]any)
			for _, part := range parts {
				walk(d.resolve(part), false)
			}
		}
	}
	walk(schema, true)
	return props, open
}

// child returns the schema of property key of schema, or of its items
// when key is "[]"; nil when the document has none.
func (d *document) child(schema map[string]any, key string) map[string]any {
	if schema == nil {
		return nil
	}
	if key == "[]" {
		return d.resolve(schema["items"])
	}
	props, _ := d.properties(schema)
	return d.resolve(props[key])
}

// at walks a JSON pointer ("/rooms", "" for the whole) from schema, where
// each array step is implicit: "/sessions" of {"sessions":[…]} is the list.
func (d *document) at(schema map[string]any, pointer string) map[string]any {
	if pointer == "" {
		return schema
	}
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		schema = d.child(schema, tok)
	}
	return schema
}

// clientMethod is one Client method called the way an app would.
type clientMethod struct {
	name string
	// call calls it and returns what it decoded (its first result), or
	// nil for a method that decodes nothing.
	call func() (any, error)
	// answer is where in the answer body the result was decoded from: a
	// JSON pointer ("" the whole body), or "-" when the method reads no
	// body.
	answer string
}

// TestClientAgainstOpenAPI calls every exported method of Client against
// a real server (the API over a memstore) through a recording transport
// and checks every request each one makes against the OpenAPI document:
// its path and method are an operation there, its query parameters are
// documented, its JSON body's fields are the request body's properties,
// and the answer's status is one the operation documents. What a method
// decoded, encoded again, must be the answer it was decoded from: the
// client keeps every field the server sent (values compared as JSON, times
// as instants), and adds only documented ones.
func TestClientAgainstOpenAPI(t *testing.T) {
	doc := loadDocument(t)
	ctx := context.Background()
	store := memstore.New()
	clock := waitroom.NewManualClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	rooms := roomview.New(roomview.Config{Store: store})
	dr := door.New(rooms, []byte("a test door secret of 32 bytes or more"))
	srv := httptest.NewServer(httpapi.NewHandler(httpapi.Config{Store: store, AdminToken: "openapi-test-token", Clock: clock,
		Admit: admit.New(admit.Config{Store: store, Door: dr})}))
	t.Cleanup(func() {
		srv.Close()
		rooms.Close()
		_ = store.Close()
	})
	rec := &recording{}
	hc := &http.Client{Transport: rec}
	pub := New(srv.URL, WithHTTPClient(hc))
	adm := New(srv.URL, WithHTTPClient(hc), WithAdminToken("openapi-test-token"))

	// The rooms the calls use.
	shop := waitroom.DefaultConfig()
	shop.Capacity = 1
	inv := int64(10)
	shop.Inventory = &inv
	held := waitroom.DefaultConfig()
	held.Capacity = 1
	held.HoldPlaces, held.ClaimWindow = true, waitroom.Duration(5*time.Minute)
	pow := waitroom.DefaultConfig()
	pow.Challenge, pow.ChallengeMin, pow.ChallengeMax = waitroom.ChallengePoW, 1000, 1000
	pow.Tiers = []waitroom.Tier{{Name: "vip"}, {Name: "general"}}
	drop := waitroom.DefaultConfig()
	drop.OpensAt = clock.Now().Add(time.Hour)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for name, cfg := range map[string]waitroom.RoomConfig{"held": held, "pow": pow, "drop": drop, "gone": waitroom.DefaultConfig()} {
		_, _, err := adm.PutRoom(ctx, name, cfg)
		must(err)
	}
	_, err := adm.Join(ctx, "drop", "")
	must(err)

	// Sessions the calls need, made as they go.
	var first, second, third waitroom.Session
	var heldPlace waitroom.Session
	var invites []Invite

	methods := []clientMethod{
		{"PutRoom", func() (any, error) { r, _, err := adm.PutRoom(ctx, "shop", shop); return r, err }, ""},
		{"Rooms", func() (any, error) { return adm.Rooms(ctx) }, "/rooms"},
		{"Room", func() (any, error) { return pub.Room(ctx, "shop") }, ""},
		{"Join", func() (any, error) { s, err := adm.Join(ctx, "shop", "user-1"); first = s; return s, err }, ""},
		{"JoinWith", func() (any, error) {
			// Twice: solving the room's challenge, and a held place.
			if _, err := pub.JoinWith(ctx, "pow", JoinOptions{Solve: true}); err != nil {
				return nil, err
			}
			s, err := adm.JoinWith(ctx, "held", JoinOptions{Contact: "mailto:ada@example.com"})
			heldPlace = s
			return s, err
		}, ""},
		{"Session", func() (any, error) {
			var err error
			if second, err = pub.Join(ctx, "shop", ""); err != nil {
				return nil, err
			}
			if third, err = pub.Join(ctx, "shop", ""); err != nil {
				return nil, err
			}
			return pub.Session(ctx, "shop", second.ID)
		}, ""},
		{"Heartbeat", func() (any, error) { return pub.Heartbeat(ctx, "shop", first.ID) }, ""},
		{"Away", func() (any, error) { return nil, pub.Away(ctx, "shop", second.ID) }, "-"},
		{"Waiting", func() (any, error) { s, _, err := adm.Waiting(ctx, "shop", waitroom.Page{Limit: 1}); return s, err }, "/sessions"},
		{"Stock", func() (any, error) { return adm.Stock(ctx, "shop", waitroom.StockSold, 1, "") }, ""},
		{"PatchRoom", func() (any, error) {
			return adm.PatchRoom(ctx, "shop", map[string]any{"rate_per_minute": 600, "target_url": nil})
		}, ""},
		{"Pause", func() (any, error) { return adm.Pause(ctx, "shop", "a stock count") }, ""},
		{"Resume", func() (any, error) {
			st, err := pub.Room(ctx, "shop")
			if err != nil {
				return nil, err
			}
			return adm.Resume(ctx, "shop", "", IfMatch(st.ETag))
		}, ""},
		{"Claim", func() (any, error) { return pub.Claim(ctx, "held", heldPlace.ID) }, ""},
		{"Advance", func() (any, error) { return adm.Advance(ctx, "shop", 1) }, "/sessions"},
		{"Leave", func() (any, error) { return pub.Leave(ctx, "shop", first.ID) }, ""},
		{"Revoke", func() (any, error) { return adm.Revoke(ctx, "shop", third.ID) }, ""},
		{"History", func() (any, error) {
			s, _, err := adm.History(ctx, "shop", waitroom.StatusLeft, waitroom.Page{Limit: 10})
			return s, err
		}, "/sessions"},
		{"Draw", func() (any, error) { return pub.Draw(ctx, "drop") }, ""},
		{"Invites", func() (any, error) {
			var err error
			invites, err = adm.Invites(ctx, "pow", InviteRequest{Count: 1, Tier: "vip", Uses: 2, Expiry: "1h"})
			return invites, err
		}, "/invites"},
		{"PutWebhook", func() (any, error) {
			w, _, err := adm.PutWebhook(ctx, "shop", "mail", WebhookRequest{URL: "https://hooks.example.com/waitroom", Events: []string{"*"}})
			return w, err
		}, ""},
		{"Webhooks", func() (any, error) { return adm.Webhooks(ctx, "shop") }, "/webhooks"},
		{"DeadLetters", func() (any, error) {
			// A dead letter: an event of the webhook, given up on.
			if _, err := pub.Join(ctx, "shop", ""); err != nil {
				return nil, err
			}
			ds, err := store.ClaimDeliveries(ctx, "shop", "mail", clock.Now(), time.Minute, 1)
			if err != nil || len(ds) != 1 {
				return nil, fmt.Errorf("claim a delivery: %v, %v", ds, err)
			}
			out := waitroom.DeliveryOutcome{Hook: "mail", ID: ds[0].Message.ID, Error: "503 from the receiver", Dead: true}
			if err := store.SettleDeliveries(ctx, "shop", []waitroom.DeliveryOutcome{out}, clock.Now()); err != nil {
				return nil, err
			}
			d, _, err := adm.DeadLetters(ctx, "shop", waitroom.Page{Limit: 5})
			return d, err
		}, "/dead_letters"},
		{"Replay", func() (any, error) { return adm.Replay(ctx, "shop", nil) }, "/replayed"},
		{"DeleteWebhook", func() (any, error) { return nil, adm.DeleteWebhook(ctx, "shop", "mail") }, "-"},
		{"DeleteRoom", func() (any, error) { return nil, adm.DeleteRoom(ctx, "gone", true) }, "-"},
		{"Healthz", func() (any, error) { return nil, pub.Healthz(ctx) }, "-"},
		{"Ready", func() (any, error) { return nil, pub.Ready(ctx) }, "-"},
	}

	// Every exported method, and nothing else, is in the table.
	var want, got []string
	ct := reflect.TypeFor[*Client]()
	for i := range ct.NumMethod() {
		want = append(want, ct.Method(i).Name)
	}
	for _, m := range methods {
		got = append(got, m.name)
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the methods called here: %v\nthe methods of Client: %v", got, want)
	}

	for _, m := range methods {
		from := rec.len()
		result, err := m.call()
		xs := rec.since(from)
		for _, x := range xs {
			checkExchange(t, doc, m.name, x)
		}
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if len(xs) == 0 {
			t.Fatalf("%s made no request", m.name)
		}
		last := xs[len(xs)-1]
		if m.answer == "-" {
			continue
		}
		_, op, _ := doc.operation(last.method, last.path)
		schema := doc.at(doc.jsonSchema(responseOf(doc, op, last.status)), m.answer)
		if schema == nil {
			t.Errorf("%s: the document gives no JSON schema for %s of the %d answer", m.name, m.answer, last.status)
			continue
		}
		var raw any
		dec := json.NewDecoder(bytes.NewReader(last.respBody))
		dec.UseNumber()
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("%s: the answer is not JSON: %v", m.name, err)
		}
		for _, tok := range strings.Split(strings.TrimPrefix(m.answer, "/"), "/") {
			if tok != "" {
				raw = raw.(map[string]any)[tok]
			}
		}
		again, err := json.Marshal(result)
		if err != nil {
			t.Fatalf("%s: encoding what it decoded: %v", m.name, err)
		}
		var decoded any
		dec = json.NewDecoder(bytes.NewReader(again))
		dec.UseNumber()
		if err := dec.Decode(&decoded); err != nil {
			t.Fatal(err)
		}
		for _, p := range sameJSON(doc, m.name+m.answer, raw, decoded, schema) {
			t.Errorf("%s", p)
		}
	}
}

// responseOf returns the response an operation documents for status.
func responseOf(doc *document, op map[string]any, status int) map[string]any {
	rs, _ := op["responses"].(map[string]any)
	if r, ok := rs[fmt.Sprint(status)]; ok {
		return doc.resolve(r)
	}
	if r, ok := rs[fmt.Sprintf("%dXX", status/100)]; ok {
		return doc.resolve(r)
	}
	return doc.resolve(rs["default"])
}

// checkExchange checks one request of method name against the document.
func checkExchange(t *testing.T, doc *document, name string, x exchange) {
	t.Helper()
	tmpl, op, item := doc.operation(x.method, x.path)
	if item == nil {
		t.Errorf("%s: %s %s: no path of the document matches", name, x.method, x.path)
		return
	}
	if op == nil {
		t.Errorf("%s: %s %s: the document's %s has no %s", name, x.method, x.path, tmpl, x.method)
		return
	}
	where := fmt.Sprintf("%s: %s %s", name, x.method, tmpl)
	documented := doc.queryParams(item, op)
	for q := range x.query {
		if !slices.Contains(documented, q) {
			t.Errorf("%s: query parameter %q is not documented (documented: %v)", where, q, documented)
		}
	}
	if len(x.reqBody) > 0 {
		body := doc.jsonSchema(op["requestBody"])
		if body == nil {
			t.Errorf("%s: sends a body the operation does not take", where)
		} else {
			var sent map[string]any
			if err := json.Unmarshal(x.reqBody, &sent); err != nil {
				t.Errorf("%s: the body sent is not a JSON object: %v", where, err)
			}
			props, open := doc.properties(body)
			for k := range sent {
				if _, ok := props[k]; !ok && !open {
					t.Errorf("%s: sends %q, not a property of the documented request body", where, k)
				}
			}
		}
	}
	// Not only 2xx: JoinWith is told to solve a challenge first (428).
	if r := responseOf(doc, op, x.status); r == nil {
		t.Errorf("%s: answered %d, a status the operation does not document: %s", where, x.status, x.respBody)
	}
}

// sameJSON compares an answer (raw) with what the client decoded from it,
// encoded again (got): every field of raw must be in got with the same
// value; a field only in got must be one the schema documents.
func sameJSON(doc *document, where string, raw, got any, schema map[string]any) []string {
	var problems []string
	switch r := raw.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: the answer has an object, the client %T", where, got)}
		}
		props, _ := doc.properties(schema)
		for k, rv := range r {
			gv, ok := g[k]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: the client drops %q (%v)", where, k, rv))
				continue
			}
			problems = append(problems, sameJSON(doc, where+"."+k, rv, gv, doc.child(schema, k))...)
		}
		for k := range g {
			if _, ok := r[k]; ok {
				continue
			}
			if _, ok := props[k]; !ok && schema != nil {
				problems = append(problems, fmt.Sprintf("%s: the client has %q, which the document does not", where, k))
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(r) {
			return []string{fmt.Sprintf("%s: the answer has %d items, the client %v", where, len(r), got)}
		}
		for i := range r {
			problems = append(problems, sameJSON(doc, fmt.Sprintf("%s[%d]", where, i), r[i], g[i], doc.child(schema, "[]"))...)
		}
	case string:
		if g, ok := got.(string); ok && g != r {
			rt, err1 := time.Parse(time.RFC3339Nano, r)
			gt, err2 := time.Parse(time.RFC3339Nano, g)
			if err1 != nil || err2 != nil || !rt.Equal(gt) {
				problems = append(problems, fmt.Sprintf("%s: the answer has %q, the client %q", where, r, g))
			}
		} else if !ok {
			problems = append(problems, fmt.Sprintf("%s: the answer has %q, the client %v", where, r, got))
		}
	default:
		if fmt.Sprint(raw) != fmt.Sprint(got) {
			problems = append(problems, fmt.Sprintf("%s: the answer has %v, the client %v", where, raw, got))
		}
	}
	return problems
}

// TestClientTypesAgainstOpenAPI checks, by reflection, that the Go types
// the client decodes answers into have the fields the document gives their
// schemas, both ways, down through nested objects and lists: a field the
// client expects that the server does not document, or a documented field
// the client would drop, fails. waitroom.Session reads and writes its JSON
// by hand, so its fields are those its encoder writes, over every status.
// The error answer's shape is checked the same way.
func TestClientTypesAgainstOpenAPI(t *testing.T) {
	doc := loadDocument(t)
	schemas := doc.root["components"].(map[string]any)["schemas"].(map[string]any)
	schema := func(name string) map[string]any {
		s := doc.resolve(schemas[name])
		if s == nil {
			t.Fatalf("the document has no schema %s", name)
		}
		return s
	}
	for _, c := range []struct {
		typ    reflect.Type
		schema string
	}{
		{reflect.TypeFor[RoomStatus](), "RoomStatus"},
		{reflect.TypeFor[waitroom.Room](), "Room"},
		{reflect.TypeFor[waitroom.RoomConfig](), "RoomConfig"},
		{reflect.TypeFor[waitroom.DrawRecord](), "DrawRecord"},
		{reflect.TypeFor[Invite](), "Invite"},
		{reflect.TypeFor[Webhook](), "Webhook"},
		{reflect.TypeFor[waitroom.Delivery](), "Delivery"},
	} {
		for _, p := range fieldsMatch(doc, c.typ.String(), c.typ, schema(c.schema)) {
			t.Errorf("%s", p)
		}
	}

	// The request bodies the client sends.
	for _, c := range []struct {
		typ  reflect.Type
		path string
	}{
		{reflect.TypeFor[InviteRequest](), "/v1/rooms/{room}/invites"},
		{reflect.TypeFor[WebhookRequest](), "/v1/rooms/{room}/webhooks/{name}"},
		{reflect.TypeFor[waitroom.RoomConfig](), "/v1/rooms/{room}"},
	} {
		item := doc.resolve(doc.root["paths"].(map[string]any)[c.path])
		var body map[string]any
		for _, m := range []string{"post", "put"} {
			if op, ok := item[m].(map[string]any); ok {
				body = doc.jsonSchema(op["requestBody"])
			}
		}
		if body == nil {
			t.Errorf("%s: no JSON request body documented for %s", c.typ, c.path)
			continue
		}
		props, _ := doc.properties(body)
		for _, f := range jsonFields(c.typ) {
			if _, ok := props[f.name]; !ok {
				t.Errorf("%s sends %q, which the request body of %s does not document", c.typ, f.name, c.path)
			}
		}
	}

	// waitroom.Session: the fields its encoder writes, over every status.
	written := map[string]bool{}
	// A waiting session whose ETA is not known yet says why instead.
	noETA := fullSession(waitroom.StatusWaiting)
	noETA.ETA, noETA.ETAUnknown = nil, "starting"
	sessions := []waitroom.Session{noETA}
	for _, st := range []waitroom.Status{waitroom.StatusWaiting, waitroom.StatusInvited, waitroom.StatusActive, waitroom.StatusServed, waitroom.StatusLeft, waitroom.StatusExpired} {
		sessions = append(sessions, fullSession(st))
	}
	for _, x := range sessions {
		st := x.Status
		b, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for k := range m {
			written[k] = true
		}
		var back waitroom.Session
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if again, _ := json.Marshal(back); !bytes.Equal(again, b) {
			t.Errorf("a %s Session does not survive decoding:\n%s\n%s", st, b, again)
		}
	}
	props, _ := doc.properties(schema("Session"))
	for k := range written {
		if _, ok := props[k]; !ok {
			t.Errorf("waitroom.Session has %q, which the Session schema does not", k)
		}
	}
	for k := range props {
		if !written[k] {
			t.Errorf("the Session schema has %q, which waitroom.Session never reads or writes", k)
		}
	}

	// The error answer the client reads.
	for _, p := range fieldsMatch(doc, "errorAnswer", reflect.TypeFor[errorAnswer](), schema("Error")) {
		t.Errorf("%s", p)
	}
}

// fullSession is a Session with every field set, in status st.
func fullSession(st waitroom.Status) waitroom.Session {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6e6, time.UTC)
	return waitroom.Session{
		ID: "0123456789abcdef0123456789abcdef", Room: "shop", Status: st, Ticket: 7, Key: "user-7",
		Position: 3, Waiting: 9, Active: 2, Capacity: 2, ETA: &waitroom.ETA{Seconds: 60, Low: 30, High: 90},
		JoinedAt: at, AdmittedAt: at, EndedAt: at, EndReason: waitroom.ReasonLeft, OpensAt: at, Entrants: 4,
		Entry: "A7", Stocked: true, Remaining: 5, Unit: true, Place: -1, Tier: "vip", Extended: 15 * time.Minute,
		Contact: "mailto:ada@example.com", ClaimBy: at, Pass: "eyJ.pass.sig",
	}
}

// jsonField is one field of a Go type's JSON form.
type jsonField struct {
	name string
	typ  reflect.Type
}

// jsonFields lists the JSON fields of struct type t as encoding/json sees
// them (embedded structs without a tag flattened, "-" left out).
func jsonFields(t reflect.Type) []jsonField {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, jsonFields(ft)...)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name, f.Type})
	}
	return out
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	unmarshaler   = reflect.TypeFor[json.Unmarshaler]()
	rawMessage    = reflect.TypeFor[json.RawMessage]()
	interfaceType = reflect.TypeFor[any]()
)

// fieldsMatch compares the JSON fields of t with the properties of schema,
// both ways, and goes down into fields that are structs or lists of them.
func fieldsMatch(doc *document, where string, t reflect.Type, schema map[string]any) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if schema == nil {
		return []string{fmt.Sprintf("%s: the document has no schema here", where)}
	}
	if t.Kind() == reflect.Slice && t != rawMessage {
		return fieldsMatch(doc, where+"[]", t.Elem(), doc.child(schema, "[]"))
	}
	if t.Kind() != reflect.Struct || t == timeType || reflect.PointerTo(t).Implements(unmarshaler) {
		return nil // a value the document describes as one
	}
	props, _ := doc.properties(schema)
	var problems []string
	seen := map[string]bool{}
	for _, f := range jsonFields(t) {
		seen[f.name] = true
		p, ok := props[f.name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: the Go field %q is not a property of the document's schema", where, f.name))
			continue
		}
		if f.typ == rawMessage || f.typ == interfaceType {
			continue
		}
		problems = append(problems, fieldsMatch(doc, where+"."+f.name, f.typ, doc.resolve(p))...)
	}
	for k := range props {
		if !seen[k] {
			problems = append(problems, fmt.Sprintf("%s: the document's property %q is a field the client does not read", where, k))
		}
	}
	sort.Strings(problems)
	return problems
}
