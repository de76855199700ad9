package web

import (
	"embed"
	"html/template"
	"net/http"

	"github.com/waitroom/waitroom/internal/static"
)

// files holds everything the pages need; nothing is loaded from elsewhere
// (no CDN, no web fonts), so the pages work behind any firewall.
//
//go:embed assets
var files embed.FS

// asset is one static file served with a content hash for caching.
type asset struct {
	*static.File        // its Version is the ?v= of versioned URLs
	name         string // file name under assets/ and under AssetPrefix
	path         string // URL path
}

func mustAsset(name, path, contentType string) *asset {
	b, err := files.ReadFile("assets/" + name)
	if err != nil {
		panic("web: embedded asset missing: " + err.Error())
	}
	return &asset{File: static.New(b, contentType), name: name, path: path}
}

// The static files. Pages link them with ?v=<hash>, so a new release is
// fetched at once while an unchanged file is cached for a year.
var (
	clientJS   = mustAsset("waitroom.js", ClientPath, "text/javascript; charset=utf-8")
	pageJS     = mustAsset("page.js", AssetPrefix+"page.js", "text/javascript; charset=utf-8")
	styleCSS   = mustAsset("page.css", AssetPrefix+"page.css", "text/css; charset=utf-8")
	demoJS     = mustAsset("demo.js", AssetPrefix+"demo.js", "text/javascript; charset=utf-8")
	powJS      = mustAsset("pow-worker.js", AssetPrefix+"pow-worker.js", "text/javascript; charset=utf-8")
	doorJS     = mustAsset("door.js", AssetPrefix+"door.js", "text/javascript; charset=utf-8")
	pageAssets = []*asset{pageJS, styleCSS, demoJS, powJS, doorJS}
)

// clientTypes declares clientJS's API for TypeScript, at TypesPath (the
// Node tests in web/jstest check it against the script and a real server).
var clientTypes = mustAsset("waitroom.d.ts", TypesPath, "application/typescript; charset=utf-8")

// url is the versioned URL of a, for pages to link.
func (a *asset) url() template.URL {
	return template.URL(a.path + "?v=" + a.Version)
}

// asset serves a static file. A request for the current version (?v=hash)
// may be cached for a year; any other for five minutes, after which the
// browser revalidates with the ETag. The files are public and usable from
// any origin (apps embed /waitroom.js in their own pages).
func (h *Handler) asset(a *asset) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cross-Origin-Resource-Policy", "cross-origin")
		if r.URL.Query().Get("v") == a.Version {
			a.Serve(w, r, static.Immutable)
		} else {
			a.Serve(w, r, "public, max-age=300")
		}
	}
}
