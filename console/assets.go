package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/waitroom/waitroom"
)

// files is the console page: no build step, nothing loaded from elsewhere.
//
//go:embed assets
var files embed.FS

// asset is one static file of the page.
type asset struct {
	contentType string
	body        []byte
	etag        string // quoted strong validator
	hashed      string // the path under which it is cached for good; "" for index.html
}

func mustRead(name string) []byte {
	b, err := files.ReadFile("assets/" + name)
	if err != nil {
		panic("console: embedded asset missing: " + err.Error())
	}
	return b
}

func newAsset(body []byte, contentType string) *asset {
	sum := sha256.Sum256(body)
	v := hex.EncodeToString(sum[:6])
	return &asset{contentType: contentType, body: body, etag: `"` + v + `"`}
}

// withHash gives a its content-hashed path, name.<hash>.ext under Prefix.
func (a *asset) withHash(name string) *asset {
	base, ext, _ := strings.Cut(name, ".")
	a.hashed = Prefix + base + "." + strings.Trim(a.etag, `"`) + "." + ext
	return a
}

// The page's files. index.html links the scripts and styles by their
// hashed names, so a new release is fetched at once while an unchanged
// file is cached for a year; everything else is revalidated each time.
var (
	appJS     = newAsset(mustRead("app.js"), "text/javascript; charset=utf-8").withHash("app.js")
	appCSS    = newAsset(mustRead("app.css"), "text/css; charset=utf-8").withHash("app.css")
	indexHTML = newAsset([]byte(strings.NewReplacer(
		"{{app.js}}", appJS.hashed,
		"{{app.css}}", appCSS.hashed,
	).Replace(string(mustRead("index.html")))), "text/html; charset=utf-8")

	assetsByPath = map[string]*asset{
		Prefix:                indexHTML,
		Prefix + "index.html": indexHTML,
		Prefix + "app.js":     appJS,
		Prefix + "app.css":    appCSS,
		appJS.hashed:          appJS,
		appCSS.hashed:         appCSS,
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
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("ETag", a.etag)
	if r.URL.Path == a.hashed {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	if a.matches(r.Header.Get("If-None-Match")) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.body)
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
