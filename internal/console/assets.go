package console

import (
	"embed"
	"net/http"
	"strings"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/static"
)

// files is the console page: no build step, nothing loaded from elsewhere.
//
//go:embed assets
var files embed.FS

// asset is one static file of the page.
type asset struct {
	*static.File
	hashed string // the path under which it is cached for good; "" for index.html
}

func mustRead(name string) []byte {
	b, err := files.ReadFile("assets/" + name)
	if err != nil {
		panic("console: embedded asset missing: " + err.Error())
	}
	return b
}

func newAsset(body []byte, contentType string) *asset {
	return &asset{File: static.New(body, contentType)}
}

// withHash gives a its content-hashed path, name.<hash>.ext under Prefix.
func (a *asset) withHash(name string) *asset {
	base, ext, _ := strings.Cut(name, ".")
	a.hashed = Prefix + base + "." + a.Version + "." + ext
	return a
}

// The page's files. index.html links the scripts and styles by their
// hashed names, so a new release is fetched at once while an unchanged
// file is cached for a year; everything else is revalidated each time.
var (
	appJS      = newAsset(mustRead("app.js"), "text/javascript; charset=utf-8").withHash("app.js")
	invitesJS  = newAsset(mustRead("invites.js"), "text/javascript; charset=utf-8").withHash("invites.js")
	webhooksJS = newAsset(mustRead("webhooks.js"), "text/javascript; charset=utf-8").withHash("webhooks.js")
	sessionsJS = newAsset(mustRead("sessions.js"), "text/javascript; charset=utf-8").withHash("sessions.js")
	appCSS     = newAsset(mustRead("app.css"), "text/css; charset=utf-8").withHash("app.css")
	indexHTML  = newAsset([]byte(strings.NewReplacer(
		"{{app.js}}", appJS.hashed,
		"{{invites.js}}", invitesJS.hashed,
		"{{webhooks.js}}", webhooksJS.hashed,
		"{{sessions.js}}", sessionsJS.hashed,
		"{{app.css}}", appCSS.hashed,
	).Replace(string(mustRead("index.html")))), "text/html; charset=utf-8")

	assetsByPath = map[string]*asset{
		Prefix:                 indexHTML,
		Prefix + "index.html":  indexHTML,
		Prefix + "app.js":      appJS,
		Prefix + "invites.js":  invitesJS,
		Prefix + "webhooks.js": webhooksJS,
		Prefix + "sessions.js": sessionsJS,
		Prefix + "app.css":     appCSS,
		appJS.hashed:           appJS,
		invitesJS.hashed:       invitesJS,
		webhooksJS.hashed:      webhooksJS,
		sessionsJS.hashed:      sessionsJS,
		appCSS.hashed:          appCSS,
	}
)

// serveFile serves the page's files; any other path under Prefix is 404.
func (c *Console) serveFile(w http.ResponseWriter, r *http.Request) {
	a, ok := assetsByPath[r.URL.Path]
	if !ok {
		c.writeError(w, r, waitroom.Errorf(waitroom.CodeNotFound, "There is no console page at this path."))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		c.writeError(w, r, waitroom.Errorf(waitroom.CodeMethodNotAllowed, "%s is not allowed here; use GET.", clipMethod(r.Method)))
		return
	}
	if r.URL.Path == a.hashed {
		a.Serve(w, r, static.Immutable)
	} else {
		a.Serve(w, r, "no-cache")
	}
}
