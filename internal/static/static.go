// Package static serves static files held in memory (embedded in the
// binary) with a strong ETag made from their content, answering a matching
// If-None-Match with 304 and HEAD without the body. The pages (web) and the
// operator console (console) serve their scripts and styles through it.
package static

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
)

// Immutable is the Cache-Control of a file requested under a URL that
// names its current version: it may be cached for a year.
const Immutable = "public, max-age=31536000, immutable"

// File is one static file.
type File struct {
	// ContentType is the file's Content-Type.
	ContentType string
	// Body is the file's content.
	Body []byte
	// Version is a short hash of Body (12 hex digits), for versioned URLs.
	Version string
	// ETag is Version quoted, a strong validator.
	ETag string
}

// New returns the File of body, with its version computed.
func New(body []byte, contentType string) *File {
	sum := sha256.Sum256(body)
	v := hex.EncodeToString(sum[:6])
	return &File{ContentType: contentType, Body: body, Version: v, ETag: `"` + v + `"`}
}

// Serve writes f with cacheControl as its Cache-Control: 304 without a
// body if the request's If-None-Match names f, else 200 with the body
// (none for HEAD). Other headers the caller set on w are kept.
func (f *File) Serve(w http.ResponseWriter, r *http.Request, cacheControl string) {
	h := w.Header()
	h.Set("Content-Type", f.ContentType)
	h.Set("ETag", f.ETag)
	h.Set("Cache-Control", cacheControl)
	if f.Matches(r.Header.Get("If-None-Match")) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(f.Body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		// A failed write means the client went away; there is no one to tell.
		_, _ = w.Write(f.Body)
	}
}

// Matches reports whether an If-None-Match header names f's ETag (weak
// comparison, as RFC 9110 asks for this header).
func (f *File) Matches(header string) bool {
	for tag := range strings.SplitSeq(header, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == f.ETag || tag == "*" {
			return true
		}
	}
	return false
}
