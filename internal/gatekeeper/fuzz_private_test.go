package gatekeeper

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzGateHeader: gateHeader, which allocates nothing, says what a slow and
// plain reading says: the name, in lower case with '_' for '-' and without
// an "x-" in front, starts with "waitroom-".
func FuzzGateHeader(f *testing.F) {
	for _, s := range []string{"Waitroom-Session", "WAITROOM_SESSION", "X_Waitroom-Room", "x-waitroom", "Waitroom", "Xwaitroom-a", "X-", "", "wAiTrOoM_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		n := strings.ReplaceAll(name, "_", "-")
		if len(n) > 2 && strings.EqualFold(n[:2], "x-") {
			n = n[2:]
		}
		want := len(n) >= len("waitroom-") && strings.EqualFold(n[:len("waitroom-")], "waitroom-")
		if got := gateHeader(name); got != want {
			t.Fatalf("gateHeader(%q) = %v, want %v", name, got, want)
		}
	})
}

// FuzzStripCookies: whatever Cookie headers a client sends, the app gets
// none of waitroom's private cookies, and every other cookie as it came.
func FuzzStripCookies(f *testing.F) {
	f.Add("a=1; waitroom_console=x; waitroom-sid-r=y; waitroom-r=pass", "b=2")
	f.Add("waitroom_console=x", "")
	f.Add(";;; waitroom-sid-=; =waitroom_console; x=waitroom_console", " waitroom_console =1")
	f.Add(`a="b;waitroom_console=c"`, "waitroom-sid-a")
	f.Fuzz(func(t *testing.T, one, two string) {
		in := http.Header{"Cookie": {one, two}}
		before := (&http.Request{Header: in.Clone()}).Cookies()
		stripCookies(in)
		after := (&http.Request{Header: in}).Cookies()
		var want []string
		for _, c := range before {
			if !privateCookie(c.Name) {
				want = append(want, c.Name+"="+c.Value)
			}
		}
		var got []string
		for _, c := range after {
			if privateCookie(c.Name) {
				t.Fatalf("Cookie %q, %q: the app still gets %s", one, two, c.Name)
			}
			got = append(got, c.Name+"="+c.Value)
		}
		if strings.Join(got, "; ") != strings.Join(want, "; ") {
			t.Fatalf("Cookie %q, %q: the app gets %q, want %q", one, two, got, want)
		}
	})
}
