package console

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/memstore"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestCookieRoundTrip(t *testing.T) {
	k := newKeys("tok")
	exp := t0.Add(12 * time.Hour)
	id, err := newID(exp)
	if err != nil {
		t.Fatal(err)
	}
	v := k.cookieValue(id)
	gotID, mac, ok := parseCookie(v)
	if !ok || gotID != id || len(mac) != 32 {
		t.Fatalf("parseCookie(%q) = %q, %d bytes, %v", v, gotID, len(mac), ok)
	}
	if got, _ := idExpiry(id); !got.Equal(exp) {
		t.Errorf("expiry %v, want %v", got, exp)
	}
	if k.csrfToken(id) == v[idLen+1:] {
		t.Errorf("the CSRF token equals the cookie's MAC")
	}
	other, _ := newID(exp)
	if other == id {
		t.Errorf("two ids alike")
	}
}

func TestBodyTooLargeWithoutLength(t *testing.T) {
	c := New(Options{AdminToken: "tok", Ledger: memstore.New()})
	body := `{"token":"` + strings.Repeat("a", maxBody) + `"}`
	r := httptest.NewRequest("POST", sessionPath, io.NopCloser(strings.NewReader(body)))
	r.ContentLength = -1
	w := httptest.NewRecorder()
	c.Handler().ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), `"body_too_large"`) {
		t.Errorf("chunked body over %d bytes: %d %s, want 413 body_too_large", maxBody, w.Code, w.Body)
	}
}

// FuzzParseCookie checks the cookie parser on any value: it never panics,
// and what it accepts is exactly an id of the right form and a 32-byte MAC
// that encode back to the input.
func FuzzParseCookie(f *testing.F) {
	k := newKeys("tok")
	id, _ := newID(t0)
	f.Add(k.cookieValue(id))
	f.Add("")
	f.Add(".")
	f.Add(strings.Repeat("A", idLen) + "." + strings.Repeat("A", macLen))
	f.Add(strings.Repeat("_", idLen) + "." + strings.Repeat("-", macLen))
	f.Fuzz(func(t *testing.T, v string) {
		id, mac, ok := parseCookie(v)
		if !ok {
			return
		}
		if len(mac) != 32 || id+"."+b64.EncodeToString(mac) != v {
			t.Fatalf("parseCookie(%q) = %q, %x: does not encode back", v, id, mac)
		}
		if _, ok := idExpiry(id); !ok {
			t.Fatalf("parseCookie(%q) accepted an id with no expiry", v)
		}
		// Whatever it accepts, only the right MAC authorizes.
		r := httptest.NewRequest("GET", "/v1/rooms", nil)
		r.AddCookie(&http.Cookie{Name: CookieName, Value: v})
		c := New(Options{AdminToken: "tok", Ledger: memstore.New(), Clock: waitroom.NewManualClock(t0.Add(-time.Hour))})
		if err := c.Authorize(r); err == nil {
			t.Fatalf("a cookie never issued authorizes: %q", v)
		}
	})
}

// FuzzParseSignIn checks the sign-in body parser: it never panics, every
// refusal is invalid_json, and an accepted token survives a round trip.
func FuzzParseSignIn(f *testing.F) {
	for _, s := range []string{`{"token":"abc"}`, `{"token":""}`, `{}`, `{"token":"a","x":1}`, `[]`, `{"token":"\u00e9\ud800"}`, `{"token":1}`, ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, err := parseSignIn(b)
		if err != nil {
			var e *waitroom.Error
			if !errors.As(err, &e) || e.Code != waitroom.CodeInvalidJSON || e.Message == "" {
				t.Fatalf("parseSignIn(%q): %v, want an invalid_json *waitroom.Error", b, err)
			}
			return
		}
		again, err := json.Marshal(signInBody{Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		if tok2, err := parseSignIn(again); err != nil || tok2 != tok {
			t.Fatalf("parseSignIn(%q) = %q, which reads back as %q, %v", b, tok, tok2, err)
		}
	})
}
