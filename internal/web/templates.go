package web

import (
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
)

// builtin is the built-in set: page.html, error.html, demo.html and the
// partials in base.html.
var builtin = mustBuiltin()

func mustBuiltin() *template.Template {
	t, err := parseBuiltin()
	if err != nil {
		panic("web: built-in templates: " + err.Error())
	}
	return t
}

// parseBuiltin parses the built-in templates afresh. Operator templates are
// parsed into their own copy, so they can use the partials (and a template
// that has run can no longer be cloned).
func parseBuiltin() (*template.Template, error) {
	return template.New("").ParseFS(files, "assets/templates/*.html")
}

// pageTemplates chooses the template of a room's waiting page.
type pageTemplates struct {
	// all replaces the built-in page in every room without its own; nil
	// when the operator gave none.
	all *template.Template
	// rooms holds the operator's per-room pages, by room name.
	rooms map[string]*template.Template
}

// forRoom returns the template set and the name to execute for room.
func (p *pageTemplates) forRoom(room string) (*template.Template, string) {
	if t, ok := p.rooms[room]; ok {
		return t, room + ".html"
	}
	if p.all != nil {
		return p.all, "page.html"
	}
	return builtin, "page.html"
}

// loadTemplates reads the operator's templates from dir ("" for none):
// page.html for every room, <room>.html for one room, and _*.html partials
// available to both. Each page is parsed together with the built-in
// partials and the operator's, then run on sample data for every state the
// page can be in, so mistakes such as a misspelt field are reported at
// startup rather than to a visitor.
func loadTemplates(dir string) (*pageTemplates, error) {
	p := &pageTemplates{rooms: make(map[string]*template.Template)}
	if dir == "" {
		return p, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("web: templates folder: %w", err)
	}
	var pages, partials []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".html") {
			continue
		}
		if strings.HasPrefix(name, "_") {
			partials = append(partials, filepath.Join(dir, name))
			continue
		}
		room := strings.TrimSuffix(name, ".html")
		if room != "page" && !waitroom.ValidRoomName(room) {
			return nil, fmt.Errorf("web: template %s: the name must be page.html (every room), <room>.html for a room name of a-z, 0-9, '.', '_' and '-', or _<name>.html for a partial", filepath.Join(dir, name))
		}
		pages = append(pages, name)
	}
	sort.Strings(pages)
	for _, name := range pages {
		path := filepath.Join(dir, name)
		t, err := parseBuiltin()
		if err != nil {
			return nil, fmt.Errorf("web: built-in templates: %w", err)
		}
		if len(partials) > 0 {
			if t, err = t.ParseFiles(partials...); err != nil {
				return nil, fmt.Errorf("web: template partials in %s: %w", dir, err)
			}
		}
		if t, err = t.ParseFiles(path); err != nil {
			return nil, fmt.Errorf("web: template %s: %w", path, err)
		}
		for _, d := range samplePages() {
			if err := t.ExecuteTemplate(io.Discard, name, d); err != nil {
				return nil, fmt.Errorf("web: template %s does not run on a sample %s page: %w", path, d.Status, err)
			}
		}
		if name == "page.html" {
			p.all = t
		} else {
			p.rooms[strings.TrimSuffix(name, ".html")] = t
		}
	}
	return p, nil
}

// samplePages are a page in every state, for checking templates at startup:
// waiting with and without an estimate, in a pre-queue, drawn, with stock,
// admitted and served.
func samplePages() []*Page {
	t := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	waiting := waitroom.Session{ID: "AAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAA", Room: "sample", Status: waitroom.StatusWaiting,
		Ticket: 7, Position: 3, Waiting: 5, Active: 10, Capacity: 10, JoinedAt: t,
		ETA: &waitroom.ETA{Seconds: 120, Low: 60, High: 240}}
	noETA := waiting
	noETA.ETA = nil
	active := waiting
	active.Status, active.Position, active.ETA, active.AdmittedAt = waitroom.StatusActive, 0, nil, t
	served := active
	served.Status, served.EndedAt, served.EndReason = waitroom.StatusServed, t, waitroom.ReasonServed
	// A scheduled room: waiting for the draw, then drawn.
	preQueue := noETA
	preQueue.Ticket, preQueue.Position, preQueue.Waiting = 0, 0, 0
	preQueue.OpensAt, preQueue.Entrants, preQueue.Entry = t.Add(time.Hour), 1234, "s:AAAAAAAAAAAAAAAAAAAAAA"
	drawn := waiting
	drawn.Entry = preQueue.Entry
	// A room with an inventory: more people ahead than units left.
	stocked := waiting
	stocked.Stocked, stocked.Remaining = true, 2
	var pages []*Page
	for _, s := range []waitroom.Session{waiting, noETA, preQueue, drawn, stocked, active, served} {
		pages = append(pages, newPage(&english, s, "", 10, t.Add(time.Minute), "sample-nonce"))
	}
	return pages
}
