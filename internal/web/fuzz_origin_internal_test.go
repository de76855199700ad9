package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzCrossOrigin feeds arbitrary Sec-Fetch-Site, Origin and Host values
// to the page's check of a POST: it never panics; a browser's word wins
// (cross-site and same-site refused, same-origin and none let through);
// without it an Origin naming the request's own host, or none at all, is
// let through, and an Origin of any other host is refused.
func FuzzCrossOrigin(f *testing.F) {
	f.Add("", "", "waitroom.example")
	f.Add("cross-site", "https://waitroom.example", "waitroom.example")
	f.Add("", "https://evil.example", "waitroom.example")
	f.Add("", "null", "waitroom.example")
	f.Add("", "http://WAITROOM.example:8080", "waitroom.example:8080")
	f.Add("", "https://waitroom.example@evil.example", "waitroom.example")
	f.Add("", "javascript://waitroom.example", "waitroom.example")
	h := &Handler{public: "https://public.example"}
	f.Fuzz(func(t *testing.T, site, origin, host string) {
		r := &http.Request{Method: http.MethodPost, Host: host, Header: http.Header{}}
		if site != "" {
			r.Header.Set("Sec-Fetch-Site", site)
		}
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		got := h.crossOrigin(r)
		switch site {
		case "cross-site", "same-site":
			if !got {
				t.Fatalf("Sec-Fetch-Site %q let through", site)
			}
			return
		case "same-origin", "none":
			if got {
				t.Fatalf("Sec-Fetch-Site %q refused", site)
			}
			return
		case "":
		default:
			return
		}
		if origin == "" && got {
			t.Fatal("a request without Sec-Fetch-Site and Origin (no browser's) refused")
		}
		u, err := url.Parse(origin)
		if origin != "" && origin != "null" && !strings.EqualFold(origin, h.public) {
			own := err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && strings.EqualFold(u.Host, host)
			if got == own {
				t.Fatalf("Origin %q on host %q: refused=%v, want %v", origin, host, got, !own)
			}
		}
	})
}
