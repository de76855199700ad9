package waitroom_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/waitroom/waitroom"
)

// FuzzParseOrigin: an accepted origin is canonical (parsing it again gives
// itself), lower-case, http(s), with a host and nothing after it.
func FuzzParseOrigin(f *testing.F) {
	for _, s := range []string{"https://shop.example", "HTTPS://Shop.Example:443", "http://localhost:3000/", "https://shop.example/cart",
		"https://u:p@shop.example", "javascript:alert(1)", "//evil.example", "https://", "https://a.example?x", "https://a.example#f",
		"https://[::1]:8080", "https://a.example\t", "", strings.Repeat("a", 3000),
		"https://a.example" + strings.Repeat("\xaa", 1000), "https://bücher.example", "HTTP://%80", "https://a%2eexample"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := waitroom.ParseOrigin(s)
		if err != nil {
			if o != "" {
				t.Fatalf("ParseOrigin(%q) failed but returned %q", s, o)
			}
			return
		}
		if o != strings.ToLower(o) {
			t.Fatalf("ParseOrigin(%q) = %q, not lower-case", s, o)
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
			t.Fatalf("ParseOrigin(%q) = %q, which is not scheme://host[:port]", s, o)
		}
		again, err := waitroom.ParseOrigin(o)
		if err != nil || again != o {
			t.Fatalf("ParseOrigin(%q) = %q, but ParseOrigin of that = %q, %v", s, o, again, err)
		}
	})
}

// FuzzTargetURL: a room accepts as target_url only an absolute http(s) URL
// with a host and without credentials, or a path on this server that no
// browser reads as another host (no "//" start, no backslash).
func FuzzTargetURL(f *testing.F) {
	for _, s := range []string{"/target/", "https://shop.example/cart?x=1", "//evil.example/", "/\\evil.example", "javascript:alert(1)",
		"https://u:p@shop.example/", "ftp://shop.example/", "https:shop.example", "/a b", "", "http://[::1]:80/x", "/%2F%2Fevil"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		body, err := json.Marshal(map[string]string{"target_url": target})
		if err != nil {
			return
		}
		c, err := waitroom.ParseRoomConfig(body)
		if err != nil {
			if code := waitroom.ErrorCode(err); code != waitroom.CodeInvalidConfig {
				t.Fatalf("target_url %q: code %s, want invalid_config", target, code)
			}
			return
		}
		// json.Marshal turned invalid UTF-8 into U+FFFD; compare with what was stored.
		v := c.TargetURL
		if v == "" {
			return // empty means no target
		}
		if !utf8.ValidString(v) || len(v) > waitroom.MaxURLLen {
			t.Fatalf("target_url %q accepted as %q: invalid UTF-8 or too long", target, v)
		}
		u, err := url.Parse(v)
		if err != nil {
			t.Fatalf("target_url %q accepted but does not parse: %v", v, err)
		}
		switch {
		case u.Scheme == "" && u.Host == "":
			if !strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//") || strings.Contains(v, "\\") {
				t.Fatalf("target_url %q accepted: a relative target a browser may read as another host", v)
			}
		case u.Scheme == "http" || u.Scheme == "https":
			if u.Host == "" || u.User != nil {
				t.Fatalf("target_url %q accepted without a host or with credentials", v)
			}
		default:
			t.Fatalf("target_url %q accepted with scheme %q", v, u.Scheme)
		}
	})
}

// FuzzDecodeJSON: the strict decoder behind every JSON body either decodes
// one object of valid JSON or fails with invalid_json and a message. (The
// message may quote an unknown field name at any length; httpapi clips every
// error message it sends to 300 bytes.)
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"key":"u"}`, `{"key":1}`, `{"x":1}`, `{} {}`, `[]`, `null`, `{"key":"` + strings.Repeat("a", 500) + `"}`,
		`{"key":"\ud800"}`, "{\"key\":\"\xff\"}", `{"n":1e400}`, `{"key":"a","key":"b"}`, "", `{`, `{"` + strings.Repeat("k", 500) + `":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v struct {
			Key *string `json:"key"`
			N   *int    `json:"n"`
		}
		err := waitroom.DecodeJSON(data, &v)
		if err == nil {
			if !json.Valid(data) {
				t.Fatalf("DecodeJSON accepted %q, which is not valid JSON", data)
			}
			return
		}
		if code := waitroom.ErrorCode(err); code != waitroom.CodeInvalidJSON {
			t.Fatalf("DecodeJSON(%q) code = %s, want invalid_json", data, code)
		}
		if m := waitroom.ErrorMessage(err); m == "" || !utf8.ValidString(m) && utf8.Valid(data) {
			t.Fatalf("DecodeJSON(%q) message %q: empty, or invalid UTF-8 from valid input", data, m)
		}
	})
}
