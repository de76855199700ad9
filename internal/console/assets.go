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

// linked are the files index.html links, each as {{name}} there: the parts
// of the page's script, which index.html loads in order (app.js last, as
// it starts the others), and its styles.
var linked = []string{
	"core.js", "rooms.js", "room.js", "charts.js", "config.js", "finder.js", "audit.js",
	"invites.js", "webhooks.js", "sessions.js", "app.js", "app.css",
}

// assetsByPath are the page's files by path. index.html links the scripts
// and styles by their hashed names, so a new release is fetched at once
// while an unchanged file is cached for a year; everything else is
// revalidated each time.
var assetsByPath = pageAssets()

// pageAssets reads the linked files and index.html, with the links filled
// in, and maps every path each is served under to it.
func pageAssets() map[string]*asset {
	byPath := make(map[string]*asset, 2*len(linked)+2)
	links := make([]string, 0, 2*len(linked))
	for _, name := range linked {
		contentType := "text/javascript; charset=utf-8"
		if strings.HasSuffix(name, ".css") {
			contentType = "text/css; charset=utf-8"
		}
		a := newAsset(mustRead(name), contentType).withHash(name)
		byPath[Prefix+name] = a
		byPath[a.hashed] = a
		links = append(links, "{{"+name+"}}", a.hashed)
	}
	index := newAsset([]byte(strings.NewReplacer(links...).Replace(string(mustRead("index.html")))), "text/html; charset=utf-8")
	byPath[Prefix] = index
	byPath[Prefix+"index.html"] = index
	return byPath
}

// serveFile serves the page's files; any other path under Prefix is 404.
func (c *Console) serveFile(w http.ResponseWriter, r *http.Request) {
	// The method first, as every route does: /admin/{file} is a GET route
	// whatever the file.
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		c.methodNotAllowed(w, r)
		return
	}
	a, ok := assetsByPath[r.URL.Path]
	if !ok {
		c.writeError(w, r, waitroom.Errorf(waitroom.CodeNotFound, "There is no console page at this path."))
		return
	}
	if r.URL.Path == a.hashed {
		a.Serve(w, r, static.Immutable)
	} else {
		a.Serve(w, r, "no-cache")
	}
}

// methodNotAllowed answers a method other than GET and HEAD on a page or
// file of the console: 405 with Allow.
func (c *Console) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", "GET, HEAD")
	c.writeError(w, r, waitroom.Errorf(waitroom.CodeMethodNotAllowed, "%s is not allowed here; use GET.", clipMethod(r.Method)))
}
