package webhook_test

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/webhook"
)

func TestCheckTarget(t *testing.T) {
	for _, tc := range []struct {
		url     string
		private bool // allowed only with --webhook-allow-private
		bad     bool // never allowed
	}{
		{url: "https://hooks.example.com/waitroom"},
		{url: "http://8.8.8.8:8080/x?y=1"},
		{url: "https://[2001:db8::1]/"},
		{url: "http://127.0.0.1:9000/", private: true},
		{url: "http://localhost/", private: true},
		{url: "http://app.localhost./", private: true},
		{url: "http://10.1.2.3/", private: true},
		{url: "http://172.31.0.1/", private: true},
		{url: "http://192.168.1.1/", private: true},
		{url: "http://169.254.169.254/latest/meta-data/", private: true},
		{url: "http://100.64.0.1/", private: true},
		{url: "http://0.0.0.0/", private: true},
		{url: "http://[::1]/", private: true},
		{url: "http://[::ffff:127.0.0.1]/", private: true},
		{url: "http://[fd00::1]/", private: true},
		{url: "http://[fe80::1]/", private: true},
		{url: "http://2130706433/", private: true},
		{url: "http://0x7f.1/", private: true},
		{url: "ftp://example.com/", bad: true},
		{url: "file:///etc/passwd", bad: true},
		{url: "gopher://example.com/", bad: true},
		{url: "javascript:alert(1)", bad: true},
		{url: "//example.com/x", bad: true},
		{url: "https://user:pw@example.com/", bad: true},
		{url: "https://example.com/#frag", bad: true},
		{url: "https://exa mple.com/", bad: true},
		{url: "https://example.com/\n", bad: true},
		{url: "https://" + strings.Repeat("a", 2100) + ".com/", bad: true},
		{url: "", bad: true},
	} {
		err := webhook.CheckTarget(tc.url, false)
		if (err == nil) != (!tc.private && !tc.bad) {
			t.Errorf("CheckTarget(%q) = %v, want refused %v", tc.url, err, tc.private || tc.bad)
		}
		if err != nil && waitroom.ErrorCode(err) != waitroom.CodeInvalidRequest {
			t.Errorf("CheckTarget(%q) code %s, want invalid_request", tc.url, waitroom.ErrorCode(err))
		}
		if err := webhook.CheckTarget(tc.url, true); (err == nil) != !tc.bad {
			t.Errorf("CheckTarget(%q, allow private) = %v, want refused %v", tc.url, err, tc.bad)
		}
	}
}

func TestPrivateAddr(t *testing.T) {
	for s, want := range map[string]bool{"127.0.0.2": true, "::1": true, "93.184.216.34": false, "2606:4700::1111": false,
		"::ffff:10.0.0.1": true, "169.254.169.254": true, "224.0.0.1": true} {
		if got := webhook.PrivateAddr(netip.MustParseAddr(s)); got != want {
			t.Errorf("PrivateAddr(%s) = %v, want %v", s, got, want)
		}
	}
}

// FuzzCheckTarget: any string gets an answer, never a panic; one accepted
// without private targets is an absolute http(s) URL whose host is no
// literal private address.
func FuzzCheckTarget(f *testing.F) {
	for _, s := range []string{"https://example.com/", "http://127.0.0.1/", "http://[::1]:80/", "http://0x7f.1/", "https://a@b/", "http://%31%32%37.0.0.1/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if webhook.CheckTarget(raw, false) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			t.Fatalf("accepted %q: %v", raw, err)
		}
		if a, err := netip.ParseAddr(u.Hostname()); err == nil && webhook.PrivateAddr(a) {
			t.Fatalf("accepted %q, a private address", raw)
		}
		if webhook.CheckTarget(raw, true) != nil {
			t.Fatalf("accepted %q without private targets but not with them", raw)
		}
	})
}
