package web

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzAllowedReturn: whatever return_to holds, the page only ever sends a
// person to an allowed origin, over http(s), without credentials.
func FuzzAllowedReturn(f *testing.F) {
	for _, s := range []string{
		"https://shop.example/cart?x=1", "https://shop.example.evil.test/", "//evil.test/",
		"https:/\\evil.test", "javascript:alert(1)", "https://user:pw@shop.example/",
		"HTTPS://SHOP.EXAMPLE:443/a", "https://shop.example\t.evil/", "https://shop.example@evil.test/",
	} {
		f.Add(s)
	}
	origins := []string{"https://shop.example", "http://localhost:3000"}
	f.Fuzz(func(t *testing.T, raw string) {
		got, ok := allowedReturn(raw, origins)
		if !ok {
			if got != "" {
				t.Fatalf("allowedReturn(%q) refused but returned %q", raw, got)
			}
			return
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("allowedReturn(%q) = %q, which does not parse: %v", raw, got, err)
		}
		origin := strings.ToLower(u.Scheme + "://" + u.Host)
		if origin != "https://shop.example" && origin != "http://localhost:3000" {
			t.Fatalf("allowedReturn(%q) = %q: origin %q is not allowed", raw, got, origin)
		}
		if u.User != nil || strings.ContainsAny(got, "\\\t\r\n ") {
			t.Fatalf("allowedReturn(%q) = %q: credentials or characters browsers read differently", raw, got)
		}
	})
}

// FuzzPickLanguage: any Accept-Language header picks one of the supported
// languages, never panics, and an empty or junk header means English.
func FuzzPickLanguage(f *testing.F) {
	for _, s := range []string{"", "de", "fr-CA;q=0.5, de;q=0.6", "*;q=0", "en;q=NaN", strings.Repeat("de,", 100), "\x00;q=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		m := pickLanguage(header)
		if m == nil {
			t.Fatalf("pickLanguage(%q) = nil", header)
		}
		found := false
		for _, l := range languages {
			found = found || l == m
		}
		if !found {
			t.Fatalf("pickLanguage(%q) returned a language not in the table", header)
		}
		if strings.TrimSpace(header) == "" && m != languages[0] {
			t.Fatalf("pickLanguage(%q) = %s, want the fallback %s", header, m.Lang, languages[0].Lang)
		}
	})
}
