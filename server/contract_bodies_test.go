package server_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/openapi"
	"github.com/waitroom/waitroom/internal/openapi/openapitest"
)

// bodyOp is one documented operation with a JSON body, as the property
// test sends it.
type bodyOp struct {
	method, tmpl string
	// path returns the path to send the next body to (a fresh session
	// where one must be).
	path func() string
	// base is a body the server accepts, which each field's values replace
	// one at a time.
	base map[string]any
	// inexact names the fields whose acceptance the schema cannot decide
	// (a token's signature, a URL's resolution, a tier the room has, a
	// time's range, another field's value), with why: for those only a
	// body the schema refuses must be refused.
	inexact map[string]string
}

// TestBodiesRefusedExactlyWhenTheSchemaRefuses sends generated bodies to
// every documented JSON request body of the API: nulls, wrong types,
// values around each bound, durations in and out of range and form,
// printable and non-printable text, strings one past their length, and
// whole bodies that are no object. Each body is judged by the document's
// schema (openapitest.ValidateRequestBody, with its duration formats); the
// server must refuse with 400 every body the schema refuses, accept (no
// 400) every body it accepts in a field it can judge, and never answer 5xx.
// The values are drawn with a fixed seed, so a failure repeats.
func TestBodiesRefusedExactlyWhenTheSchemaRefuses(t *testing.T) {
	c := newContractServer(t)
	for room, body := range map[string]string{
		"cfg":   `{}`,
		"holds": `{"hold_places":true,"capacity":1000000}`,
		"adv":   `{"mode":"manual"}`,
		"stock": `{"inventory":1000000000,"capacity":0}`,
		"inv":   `{}`,
		"front": `{"capacity":0}`,
		"ext":   `{"capacity":1000000000}`,
		"wh":    `{}`,
		"dl":    `{}`,
		"pz":    `{}`,
	} {
		c.mustStatus("PUT", "/v1/rooms/"+room, body, http.StatusCreated)
	}
	join := func(room string) string {
		var s struct{ ID, Status string }
		_ = json.Unmarshal(c.mustStatus("POST", "/v1/rooms/"+room+"/sessions", "", http.StatusCreated), &s)
		return s.ID
	}
	waiting := join("front")
	fixed := func(p string) func() string { return func() string { return p } }
	ops := []bodyOp{
		{method: "PUT", tmpl: "/v1/rooms/{room}", path: fixed("/v1/rooms/cfg"), base: map[string]any{},
			inexact: map[string]string{
				"target_url":     "a URL's form",
				"return_origins": "an origin's form",
				"invite_keys":    "an Ed25519 key's encoding",
				"opens_at":       "the years 2000 to 9999",
				"closes_at":      "the years 2000 to 9999",
				"tier_policy":    "needs tiers",
				"tiers":          "names used twice",
			}},
		{method: "POST", tmpl: "/v1/rooms/{room}/sessions", path: fixed("/v1/rooms/holds/sessions"), base: map[string]any{},
			inexact: map[string]string{"invite": "a token's signature", "challenge": "a solved challenge"}},
		{method: "POST", tmpl: "/v1/rooms/{room}/advance", path: fixed("/v1/rooms/adv/advance"), base: map[string]any{}},
		{method: "POST", tmpl: "/v1/rooms/{room}/inventory", path: fixed("/v1/rooms/stock/inventory"), base: map[string]any{"sold": 1}},
		{method: "POST", tmpl: "/v1/rooms/{room}/invites", path: fixed("/v1/rooms/inv/invites"), base: map[string]any{},
			inexact: map[string]string{"tier": "a tier the room has", "expiry": "a time within 366 days of now"}},
		{method: "POST", tmpl: "/v1/rooms/{room}/sessions/{id}/front", path: fixed("/v1/rooms/front/sessions/" + waiting + "/front"),
			base: map[string]any{"reason": "a bug"}},
		{method: "POST", tmpl: "/v1/rooms/{room}/sessions/{id}/extend", path: func() string { return "/v1/rooms/ext/sessions/" + join("ext") + "/extend" },
			base: map[string]any{"by": "10m"}},
		{method: "PUT", tmpl: "/v1/rooms/{room}/webhooks/{name}", path: fixed("/v1/rooms/wh/webhooks/h"),
			base:    map[string]any{"url": "http://127.0.0.1:9/hook", "events": []any{"*"}},
			inexact: map[string]string{"url": "a URL's form and where it points"}},
		{method: "POST", tmpl: "/v1/rooms/{room}/dead-letters/replay", path: fixed("/v1/rooms/dl/dead-letters/replay"), base: map[string]any{}},
		{method: "POST", tmpl: "/v1/rooms/{room}/pause", path: fixed("/v1/rooms/pz/pause"), base: map[string]any{}},
		{method: "POST", tmpl: "/v1/rooms/{room}/resume", path: fixed("/v1/rooms/pz/resume"), base: map[string]any{}},
	}
	// Every documented JSON body is sent, but these, with why.
	notSent := map[string]string{
		"POST /admin/api/session": "the console's sign-in: five wrong tokens a minute and it answers 429",
		"PATCH /v1/rooms/{room}":  "a JSON merge patch, where null removes a field",
	}
	doc := docBodies(t)
	for _, op := range ops {
		doc = slices.DeleteFunc(doc, func(k string) bool { return k == op.method+" "+op.tmpl })
	}
	for _, k := range doc {
		if why, ok := notSent[k]; ok {
			t.Logf("not sent: %s (%s)", k, why)
			continue
		}
		t.Errorf("not sent: %s has no case here: add one (or say in notSent why not)", k)
	}

	rng := mrand.New(mrand.NewPCG(24, 8))
	sent, refused := 0, 0
	for _, op := range ops {
		props := docProperties(t, op.method, op.tmpl)
		send := func(body []byte, field string) {
			t.Helper()
			want := openapitest.ValidateRequestBody(op.method, op.tmpl, body)
			path := op.path()
			req := httptest.NewRequest(op.method, path, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+c.token)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			c.h.ServeHTTP(rec, req)
			sent++
			got := rec.Code
			if got == http.StatusBadRequest {
				refused++
			}
			switch {
			case got >= 500:
				t.Errorf("%s %s %.300s: %d %.300s", op.method, path, body, got, rec.Body.String())
			case want != nil && got != http.StatusBadRequest:
				t.Errorf("%s %s %.300s: %d, but the document refuses it: %v", op.method, path, body, got, firstLine(want))
			case want == nil && got == http.StatusBadRequest && op.inexact[field] == "":
				t.Errorf("%s %s %.300s: 400 %.300s, but the document accepts it", op.method, path, body, rec.Body.String())
			}
		}
		// Whole bodies.
		for _, b := range []string{"", "null", "[]", `"x"`, "1", "true", "{}", `{"unknown":1}`, "{} {}", "{"} {
			send([]byte(b), "")
		}
		for _, field := range sortedKeys(props) {
			for _, v := range values(rng, props[field]) {
				with := map[string]any{}
				for k, x := range op.base {
					with[k] = x
				}
				with[field] = v
				send(marshal(t, with), field)
				send(marshal(t, map[string]any{field: v}), field)
			}
		}
	}
	if sent < 2000 || refused < sent/4 || refused == sent {
		t.Errorf("sent %d bodies, %d refused: the generator no longer reads the document as expected", sent, refused)
	}
	t.Logf("sent %d bodies to %d operations, %d refused with 400", sent, len(ops), refused)
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func marshal(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// rawDoc is the document as plain JSON.
func rawDoc(t *testing.T) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(openapi.JSON(), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// docBodies lists "METHOD /template" of every operation with a JSON body.
func docBodies(t *testing.T) []string {
	var out []string
	for p, item := range rawDoc(t)["paths"].(map[string]any) {
		for m, op := range item.(map[string]any) {
			o, ok := op.(map[string]any)
			if !ok {
				continue
			}
			rb, _ := o["requestBody"].(map[string]any)
			content, _ := rb["content"].(map[string]any)
			if _, ok := content["application/json"]; ok {
				out = append(out, strings.ToUpper(m)+" "+p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// field is what the generator knows of one property's schema: its own
// keywords merged over those of what it refers to, and that name.
type field struct {
	s   map[string]any
	ref string // the last schema name it refers to, "" for none
}

// resolve merges a schema over the ones its $ref and allOf name.
func resolve(d map[string]any, s map[string]any) field {
	out := map[string]any{}
	ref := ""
	if r, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(r, "#/components/schemas/")
		inner := resolve(d, d["components"].(map[string]any)["schemas"].(map[string]any)[name].(map[string]any))
		for k, v := range inner.s {
			out[k] = v
		}
		ref = name
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, a := range all {
			inner := resolve(d, a.(map[string]any))
			for k, v := range inner.s {
				out[k] = v
			}
		}
	}
	for k, v := range s {
		if k == "properties" {
			if m, ok := out[k].(map[string]any); ok {
				merged := map[string]any{}
				for pk, pv := range m {
					merged[pk] = pv
				}
				for pk, pv := range v.(map[string]any) {
					merged[pk] = pv
				}
				out[k] = merged
				continue
			}
		}
		out[k] = v
	}
	return field{s: out, ref: ref}
}

// docProperties returns the properties of an operation's JSON body.
func docProperties(t *testing.T, method, tmpl string) map[string]field {
	t.Helper()
	d := rawDoc(t)
	op := d["paths"].(map[string]any)[tmpl].(map[string]any)[strings.ToLower(method)].(map[string]any)
	sch := op["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
	props, _ := resolve(d, sch).s["properties"].(map[string]any)
	out := map[string]field{}
	for k, v := range props {
		out[k] = resolve(d, v.(map[string]any))
	}
	if len(out) == 0 {
		t.Fatalf("%s %s: no properties in the document", method, tmpl)
	}
	return out
}

// The values every field is tried with: each kind's valid and invalid
// forms, for the schema to judge.
var (
	durations = []string{"0", "0s", "1ms", "90s", "5m", "1h30m", "8784h", "8784h0m0.001s", "8785h", "500us", "999us",
		"1500us", "1500µs", "1.5s", "0.0005s", "1h0m0.0005s", "+5s", ".5s", "5.s", "-1s", "-0s", "5μs", "1e3s", "5",
		"1h 30m", strings.Repeat("1", 30) + "ms", strings.Repeat("0", 31) + "1s"}
	printable = []string{"a", "user-1", "Zoë Ådams", "日本語", "🎉 party", "x y", "  spaced  ", "mailto:ada@example.com", "#42", "\u00e9\u0301"}
	hidden    = []string{" ", "   ", "\x00", "a\x01b", "tab\there", "line\nbreak", "\x7f", "a\u202eb", "zero\u200bwidth", "\u00a0",
		"\ufffd", "\u2800", "a\ufe0f", "\u3164", "\ue000", "\U000e0041", "\u2028", "\ufeff", "\u034f"}
	words  = []string{"", "auto", "manual", "pow", "strict", "weighted", "*", "session.joined", "room.paused", "draw.completed", "nope", "vip", "tier-1", "UPPER", "a.b"}
	others = []string{"http://127.0.0.1:9/hook", "https://example.com/x?y=1", "ftp://example.com/", "/local/path", "2030-01-01T00:00:00Z",
		"not a time", "whsec_", "whsec_short", "AAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "gAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAA",
		"//////////////////////////////AA", "QAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "QAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAA"}
	wrongTypes = []any{nil, []any{}, map[string]any{}, true, 1.5, "1"}
)

// secrets returns webhook secrets of n bytes around the bounds.
func secrets() []any {
	var out []any
	for _, n := range []int{23, 24, 25, 26, 40, 62, 63, 64, 65} {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		out = append(out, "whsec_"+base64.StdEncoding.EncodeToString(b))
	}
	out = append(out, "whsec_"+base64.RawStdEncoding.EncodeToString(make([]byte, 32)), "whsec_"+base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)),
		"whsec_"+base64.StdEncoding.EncodeToString(make([]byte, 30))[:20]+"\n"+base64.StdEncoding.EncodeToString(make([]byte, 30))[20:])
	return out
}

// values returns the values to try for one field: every kind's samples
// (whatever the field's type: the schema judges), and for its own kind
// the values around its bounds.
func values(rng *mrand.Rand, f field) []any {
	var out []any
	out = append(out, wrongTypes...)
	for _, group := range [][]string{durations, printable, hidden, words, others} {
		for _, s := range group {
			out = append(out, s)
		}
	}
	out = append(out, secrets()...)
	for _, n := range []float64{-1, 0, 1, 2, 7, 1000, 10000, 10001, 1e6, 1e6 + 1, 1e8, 1e8 + 1, 1e9, 1e9 + 1} {
		out = append(out, n)
	}
	// Bounds of this field.
	for _, k := range []string{"minimum", "maximum"} {
		if v, ok := f.s[k].(float64); ok {
			out = append(out, v-1, v, v+1)
			if k == "maximum" {
				out = append(out, math.Ldexp(1, 70)) // past any integer type
			}
		}
	}
	if v, ok := f.s["maxLength"].(float64); ok {
		n := int(v)
		out = append(out, strings.Repeat("a", n-1), strings.Repeat("a", n), strings.Repeat("a", n+1))
	}
	if v, ok := f.s["minLength"].(float64); ok && v > 1 {
		out = append(out, strings.Repeat("a", int(v)-1))
	}
	// Arrays: one item of each kind (a few, drawn), the same twice, and
	// one past the most.
	if f.s["type"] == "array" {
		items := []any{"*", "session.joined", "room.paused", "nope", nil, "https://example.com", "msg_1", "",
			strings.Repeat("m", 200), strings.Repeat("m", 201), map[string]any{"name": "vip"}, map[string]any{"name": "vip", "share": 0.5},
			map[string]any{"name": "BAD"}, map[string]any{}, map[string]any{"name": "vip", "share": 2}, map[string]any{"name": nil},
			map[string]any{"name": "vip", "x": 1}, 3}
		for range 8 {
			out = append(out, []any{items[rng.IntN(len(items))]})
		}
		out = append(out, []any{"*", "*"}, []any{map[string]any{"name": "a"}, map[string]any{"name": "a"}})
		if n, ok := f.s["maxItems"].(float64); ok {
			for _, size := range []int{int(n), int(n) + 1} {
				var many []any
				for i := range size {
					many = append(many, map[string]any{"name": "t" + strconv.Itoa(i)})
				}
				out = append(out, many)
				many = nil
				for i := range size {
					many = append(many, "msg_"+strconv.Itoa(i))
				}
				out = append(out, many)
			}
			all := []any{"session.joined", "session.admitted", "session.ended", "session.near", "session.invited", "session.claimed",
				"room.paused", "room.resumed", "room.closed", "room.sold_out", "draw.completed"}
			out = append(out, all, append(slices.Clone(all), "*"))
		}
	}
	return out
}
