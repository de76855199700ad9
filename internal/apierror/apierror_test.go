package apierror_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/apierror"
	"github.com/waitroom/waitroom/internal/limit"
)

func TestWrite(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	long := strings.Repeat("é", 400)
	for _, tc := range []struct {
		name     string
		wr       apierror.Writer
		err      error
		status   int
		body     string
		hdr, val string
	}{
		{"unauthorized", apierror.Writer{Log: log}, waitroom.Errorf(waitroom.CodeUnauthorized, "No."),
			401, `{"error":{"code":"unauthorized","message":"No."}}`, "WWW-Authenticate", `Bearer realm="waitroom"`},
		{"context error", apierror.Writer{Log: log}, context.DeadlineExceeded,
			503, `{"error":{"code":"unavailable","message":"` + apierror.MsgUnavailable + `"}}`, "Retry-After", "1"},
		{"code not in the map", apierror.Writer{Log: log, CacheControl: "no-store"},
			waitroom.Errorf("no_such_code", "No."),
			500, `{"error":{"code":"internal","message":"` + apierror.MsgInternal + `"}}`, "Cache-Control", "no-store"},
		// 297 bytes fit before the "…", cut back to 296 on a character boundary.
		{"long message", apierror.Writer{Log: log}, waitroom.Errorf(waitroom.CodeInvalidRequest, "%s", long),
			400, `{"error":{"code":"invalid_request","message":"` + long[:296] + `…"}}`, "Content-Type", apierror.ContentType},
	} {
		w := httptest.NewRecorder()
		tc.wr.Write(w, httptest.NewRequest("GET", "/x", nil), tc.err)
		if w.Code != tc.status || w.Body.String() != tc.body+"\n" || w.Header().Get(tc.hdr) != tc.val {
			t.Errorf("%s: %d %s %v, want %d %s with %s: %s", tc.name, w.Code, w.Body, w.Header(), tc.status, tc.body, tc.hdr, tc.val)
		}
	}
}

// rootCodes reads the Code constants package waitroom declares.
func rootCodes(t *testing.T) []waitroom.Code {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../../errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []waitroom.Code
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for _, v := range vs.Values {
				s, err := strconv.Unquote(v.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, waitroom.Code(s))
			}
		}
	}
	if len(out) < 30 {
		t.Fatalf("found %d codes in errors.go; the reading no longer works", len(out))
	}
	return out
}

// TestEveryCodeOneStatus: every code of package waitroom has its status
// in the one map, and the map knows no code but those and this package's
// own.
func TestEveryCodeOneStatus(t *testing.T) {
	root := rootCodes(t)
	own := []waitroom.Code{apierror.CodeForbidden, apierror.CodeHeaderTooLarge, apierror.CodeExpectationFailed}
	known := apierror.Codes()
	for _, c := range append(root, own...) {
		if !slices.Contains(known, c) {
			t.Errorf("code %s has no status in the map", c)
		}
	}
	for _, c := range known {
		if !slices.Contains(root, c) && !slices.Contains(own, c) {
			t.Errorf("the map has a status for %s, which is neither package waitroom's nor apierror's", c)
		}
		if st := apierror.Status(c); st < 400 || st > 599 {
			t.Errorf("code %s has status %d, not an error", c, st)
		}
		if slices.Contains(root, c) && slices.Contains(own, c) {
			t.Errorf("code %s is both package waitroom's and apierror's", c)
		}
	}
	if st := apierror.Status("no_such_code"); st != http.StatusInternalServerError {
		t.Errorf("Status of an unknown code = %d, want 500", st)
	}
}

func TestWriteChallengeAndSession(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ch := &waitroom.ChallengeDetail{Algorithm: "SHA-256", Challenge: "c", MaxNumber: 7, Salt: "s", Signature: "g"}
	w := httptest.NewRecorder()
	apierror.Writer{Log: log}.Write(w, httptest.NewRequest("POST", "/x", nil),
		&waitroom.Error{Code: waitroom.CodeChallengeRequired, Message: "Solve it.", Challenge: ch})
	want := `{"error":{"code":"challenge_required","message":"Solve it."},"challenge":{"algorithm":"SHA-256","challenge":"c","maxnumber":7,"salt":"s","signature":"g"}}` + "\n"
	if w.Code != http.StatusPreconditionRequired || w.Body.String() != want {
		t.Errorf("challenge_required: %d %s, want 428 %s", w.Code, w.Body, want)
	}
	// A challenge on another code is not sent.
	w = httptest.NewRecorder()
	apierror.Writer{Log: log}.Write(w, httptest.NewRequest("POST", "/x", nil),
		&waitroom.Error{Code: waitroom.CodeChallengeInvalid, Message: "Wrong.", Challenge: ch})
	if want := `{"error":{"code":"challenge_invalid","message":"Wrong."}}` + "\n"; w.Code != 400 || w.Body.String() != want {
		t.Errorf("challenge_invalid: %d %s, want 400 %s", w.Code, w.Body, want)
	}
}

func TestRetryAfter(t *testing.T) {
	refused := &limit.RetryError{After: 2500 * time.Millisecond, Err: waitroom.Errorf(waitroom.CodeRateLimited, "Slow down.")}
	for _, tc := range []struct {
		status int
		err    error
		want   string
	}{
		{429, refused, "3"},
		{503, waitroom.Errorf(waitroom.CodeUnavailable, "Down."), "7"},
		{409, refused, ""},
	} {
		h := http.Header{}
		apierror.SetRetryAfter(h, tc.status, tc.err, 7)
		if got := h.Get("Retry-After"); got != tc.want {
			t.Errorf("%d %v: Retry-After %q, want %q", tc.status, tc.err, got, tc.want)
		}
	}
}

func TestRaw(t *testing.T) {
	got := string(apierror.Raw(waitroom.Errorf(waitroom.CodeUnavailable, "Full."), 5))
	want := "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nCache-Control: no-store\r\n" +
		"X-Content-Type-Options: nosniff\r\nRetry-After: 5\r\nConnection: close\r\nContent-Length: 51\r\n\r\n" +
		`{"error":{"code":"unavailable","message":"Full."}}` + "\n"
	if got != want {
		t.Errorf("Raw = %q, want %q", got, want)
	}
	got = string(apierror.Raw(waitroom.Errorf(apierror.CodeHeaderTooLarge, "Too long."), 5))
	if !strings.HasPrefix(got, "HTTP/1.1 431 Request Header Fields Too Large\r\n") || strings.Contains(got, "Retry-After") {
		t.Errorf("Raw of header_too_large = %q, want a 431 without Retry-After", got)
	}
}
