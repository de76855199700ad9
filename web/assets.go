package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"net/http"
	"strconv"
	"strings"
)

// files holds everything the pages need; nothing is loaded from elsewhere
// (no CDN, no web fonts), so the pages work behind any firewall.
//
//go:embed assets
var files embed.FS

// asset is one static file served with a content hash for caching.
type asset struct {
	name        string // file name under assets/ and under AssetPrefix
	path        string // URL path
	contentType string
	body        []byte
	etag        string // quoted strong validator
	version     string // short hash, the ?v= of versioned URLs
}

func mustAsset(name, path, contentType string) *asset {
	b, err := files.ReadFile("assets/" + name)
	if err != nil {
		panic("web: embedded asset missing: " + err.Error())
	}
	sum := sha256.Sum256(b)
	v := hex.EncodeToString(sum[:6])
	return &asset{name: name, path: path, contentType: contentType, body: b, etag: `"` + v + `"`, version: v}
}

// The static files. Pages link them with ?v=<hash>, so a new release is
// fetched at once while an unchanged file is cached for a year.
var (
	clientJS   = mustAsset("waitroom.js", ClientPath, "text/javascript; charset=utf-8")
	pageJS     = mustAsset("page.js", AssetPrefix+"page.js", "text/javascript; charset=utf-8")
	styleCSS   = mustAsset("page.css", AssetPrefix+"page.css", "text/css; charset=utf-8")
	demoJS     = mustAsset("demo.js", AssetPrefix+"demo.js", "text/javascript; charset=utf-8")
	pageAssets = []*asset{pageJS, styleCSS, demoJS}
)

// url is the versioned URL of a, for pages to link.
func (a *asset) url() template.URL {
	return template.URL(a.path + "?v=" + a.version)
}

// asset serves a static file. A request for the current version (?v=hash)
// may be cached for a year; any other for five minutes, after which the
// browser revalidates with the ETag. The files are public and usable from
// any origin (apps embed /waitroom.js in their own pages).
func (h *Handler) asset(a *asset) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Type", a.contentType)
		hd.Set("ETag", a.etag)
		hd.Set("Cross-Origin-Resource-Policy", "cross-origin")
		if r.URL.Query().Get("v") == a.version {
			hd.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			hd.Set("Cache-Control", "public, max-age=300")
		}
		if a.matches(r.Header.Get("If-None-Match")) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		hd.Set("Content-Length", strconv.Itoa(len(a.body)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(a.body)
		}
	}
}

// matches reports whether an If-None-Match header names a's ETag (weak
// comparison, as RFC 9110 asks for this header).
func (a *asset) matches(header string) bool {
	for tag := range strings.SplitSeq(header, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == a.etag || tag == "*" {
			return true
		}
	}
	return false
}
