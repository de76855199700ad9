// Package layout_test holds the house's shape (issue 23, "the front hall";
// docs/ARCHITECTURE.md): a small public surface, one place that assembles
// a server, one admission path, one trusted-proxy parser, one session
// cookie, one room view, one error map, and a serve command that only
// turns flags into a server.Config. `make layout` runs it alone; `make
// test` runs it with everything else. Each rule reads the source with
// go/parser, so breaking one fails here with the file and line.
package layout_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// module is this module's path; every rule speaks of directories under it.
const module = "github.com/waitroom/waitroom"

// public lists the packages outside internal/, cmd/ and examples/, each
// with why it is a promise to users. A new one must be added here, and
// the count stays at most maxPublic.
var public = map[string]string{
	".":           "the domain: Room, Session, Status, errors, the Store contract and its events",
	"memstore":    "a backend: the in-memory store, for tests and demos",
	"sqlitestore": "a backend: the embedded default store",
	"redisstore":  "a backend: many processes on Redis, Sentinel or Cluster",
	"storetest":   "the conformance suite a backend author runs",
	"client":      "the Go client of the HTTP API",
	"challenge":   "proof-of-work solving, for clients that join a guarded room",
	"gate":        "pass verification an app embeds (KeySet, Verify, Verifier, Claims)",
	"server":      "the one assembly: Config, New, Handler, Serve, Close",
}

const maxPublic = 9

// file is one parsed non-test Go file.
type file struct {
	dir  string // relative to the module root, "." for the root
	path string
	fset *token.FileSet
	ast  *ast.File
	// imports maps each import's local name to its path.
	imports map[string]string
}

// sources parses every non-test Go file of the module once.
func sources(t *testing.T) []*file {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.Contains(string(b), "module "+module+"\n") {
		t.Fatalf("%s is not the module root (%v)", root, err)
	}
	var out []*file
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		x := &file{dir: filepath.ToSlash(rel), path: filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator))), fset: fset, ast: f, imports: map[string]string{}}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			x.imports[name] = p
		}
		out = append(out, x)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("found only %d Go files under %s", len(out), root)
	}
	return out
}

// under reports whether dir is dir prefix or below it.
func under(dir string, prefixes ...string) bool {
	for _, p := range prefixes {
		if dir == p || strings.HasPrefix(dir, p+"/") {
			return true
		}
	}
	return false
}

func (f *file) pos(n ast.Node) string {
	p := f.fset.Position(n.Pos())
	return f.path + ":" + strconv.Itoa(p.Line)
}

// calls yields every call of a package-level function pkg.name (pkg an
// import path of this module, relative) in f.
func (f *file) calls(visit func(call *ast.CallExpr, pkg, name string)) {
	ast.Inspect(f.ast, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg := ""
		if id, ok := sel.X.(*ast.Ident); ok {
			if p, ok := f.imports[id.Name]; ok {
				pkg = strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
				if !strings.HasPrefix(p, module) {
					pkg = "std:" + p
				}
			}
		}
		visit(call, pkg, sel.Sel.Name)
		return true
	})
}

// TestPublicPackages: at most maxPublic packages outside internal/, cmd/
// and examples/, each listed in public with its reason.
func TestPublicPackages(t *testing.T) {
	found := map[string]bool{}
	for _, f := range sources(t) {
		if !under(f.dir, "internal", "cmd", "examples") {
			found[f.dir] = true
		}
	}
	var names []string
	for d := range found {
		names = append(names, d)
		if _, ok := public[d]; !ok {
			t.Errorf("package %s is public but not in the list of promises: move it under internal/, or add it to public with why users need it", d)
		}
	}
	sort.Strings(names)
	if len(names) > maxPublic {
		t.Errorf("%d public packages (%v), want at most %d", len(names), names, maxPublic)
	}
	for d := range public {
		if !found[d] {
			t.Errorf("public lists %s, which has no Go files", d)
		}
	}
	t.Logf("public packages (%d): %v", len(names), names)
}

// constructors are the long-lived components only server/ builds, by the
// package (relative to the module) and function that builds each.
var constructors = map[string][]string{
	"internal/push":       {"New"},
	"internal/door":       {"New"},
	"internal/roomstats":  {"New"},
	"internal/httpapi":    {"NewHandler"},
	"internal/gatekeeper": {"New"},
	"internal/web":        {"New", "NewHandler"},
	"internal/console":    {"New"},
	"internal/webhook":    {"New"},
	"internal/sweeper":    {"Run"},
	"internal/roomview":   {"New"},
	"internal/admit":      {"New"},
	"internal/eta":        {"New"},
	"internal/outage":     {"New"},
	"internal/metrics":    {"Register"},
}

// TestOnlyServerAssembles: no non-test file outside server/ builds a
// component or writes a limit.Joins literal.
func TestOnlyServerAssembles(t *testing.T) {
	for _, f := range sources(t) {
		if f.dir == "server" {
			continue
		}
		f.calls(func(call *ast.CallExpr, pkg, name string) {
			if slices.Contains(constructors[pkg], name) {
				t.Errorf("%s: %s.%s builds a component outside server/; take it from the server's assembly instead", f.pos(call), pkg, name)
			}
		})
		ast.Inspect(f.ast, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			typ := lit.Type
			if u, ok := typ.(*ast.UnaryExpr); ok {
				typ = u.X
			}
			if sel, ok := typ.(*ast.SelectorExpr); ok && sel.Sel.Name == "Joins" {
				if id, ok := sel.X.(*ast.Ident); ok && f.imports[id.Name] == module+"/internal/limit" {
					t.Errorf("%s: a limit.Joins literal outside server/: one server has one", f.pos(lit))
				}
			}
			if id, ok := typ.(*ast.Ident); ok && id.Name == "Joins" && f.dir == "internal/limit" {
				t.Errorf("%s: a Joins literal inside internal/limit: one server has one, built by server/", f.pos(lit))
			}
			return true
		})
	}
}

// joinCallers may call a store's Join or JoinWith: the stores themselves,
// the suite, the HTTP client, the one admission path, and the bench,
// which measures the stores' own joins (no request enters there).
var joinCallers = []string{".", "memstore", "sqlitestore", "redisstore", "internal/engine", "storetest", "client", "internal/admit", "internal/bench"}

// TestOneAdmissionPath: every join a request makes goes through
// internal/admit.
func TestOneAdmissionPath(t *testing.T) {
	for _, f := range sources(t) {
		if under(f.dir, joinCallers...) {
			continue
		}
		f.calls(func(call *ast.CallExpr, pkg, name string) {
			if (name == "Join" || name == "JoinWith") && pkg == "" {
				t.Errorf("%s: %s called outside the admission path (internal/admit)", f.pos(call), name)
			}
		})
	}
}

// TestOneOfEach: one trusted-proxy parser, one session-cookie prefix, one
// code→status map (internal/apierror's).
func TestOneOfEach(t *testing.T) {
	var cookie, forwardedFor []string
	for _, f := range sources(t) {
		ast.Inspect(f.ast, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				v, _ := strconv.Unquote(n.Value)
				switch {
				case strings.HasPrefix(v, "waitroom-sid-"):
					cookie = append(cookie, f.pos(n))
				case strings.EqualFold(v, "X-Forwarded-For"):
					forwardedFor = append(forwardedFor, f.pos(n))
				}
			case *ast.MapType:
				// One code→status map: internal/apierror's.
				if v, ok := n.Value.(*ast.Ident); ok && v.Name == "int" && isCode(n.Key) && f.dir != "internal/apierror" {
					t.Errorf("%s: a map from error codes to ints outside internal/apierror: statuses come from its one map", f.pos(n))
				}
			case *ast.FuncDecl:
				if name := strings.ToLower(n.Name.Name); strings.Contains(name, "parse") && strings.Contains(name, "prox") && f.dir != "internal/clientaddr" {
					t.Errorf("%s: %s parses a proxy list outside internal/clientaddr", f.pos(n), n.Name.Name)
				}
			}
			return true
		})
	}
	if len(cookie) != 1 {
		t.Errorf("the session cookie prefix \"waitroom-sid-\" is written %d times (%v), want once", len(cookie), cookie)
	}
	if len(forwardedFor) != 1 || !strings.HasPrefix(forwardedFor[0], "internal/clientaddr/") {
		t.Errorf("X-Forwarded-For is read at %v, want once, in internal/clientaddr", forwardedFor)
	}
}

// isCode reports whether e names waitroom's error Code type.
func isCode(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "Code"
	case *ast.SelectorExpr:
		return e.Sel.Name == "Code"
	}
	return false
}

// TestServeOnlyConfigures: the function `waitroom serve` runs is short,
// and the server parses no text: its Config is typed, parsed once by the
// command.
func TestServeOnlyConfigures(t *testing.T) {
	const most = 60
	found := false
	for _, f := range sources(t) {
		for _, d := range f.ast.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || f.dir != "cmd/waitroom" || fn.Name.Name != "serve" || fn.Recv != nil {
				continue
			}
			found = true
			lines := f.fset.Position(fn.End()).Line - f.fset.Position(fn.Pos()).Line + 1
			if lines > most {
				t.Errorf("%s: serve is %d lines, want at most %d: it turns flags into a server.Config and runs it", f.pos(fn), lines, most)
			}
		}
		if f.dir != "server" {
			continue
		}
		for _, d := range f.ast.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.Name == "RedactURL" {
				continue // RedactURL reads a URL only to print it without its password
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				id, ok := sel.X.(*ast.Ident)
				if !ok {
					return true
				}
				p, name := f.imports[id.Name], sel.Sel.Name
				parses := (p == "strconv" && (strings.HasPrefix(name, "Parse") || name == "Atoi")) ||
					(p == "time" && name == "ParseDuration") || (p == "net/url" && name == "Parse") ||
					(p == "net/netip" && strings.HasPrefix(name, "Parse")) ||
					(strings.HasSuffix(p, "/internal/clientaddr") && name == "Parse") ||
					(strings.HasSuffix(p, "/internal/outage") && name == "ParsePolicy")
				if parses {
					t.Errorf("%s: server parses text (%s.%s); its Config is typed and parsed once by the command", f.pos(call), p, name)
				}
				return true
			})
		}
	}
	if !found {
		t.Error("no func serve in cmd/waitroom")
	}
}

// roomReaders are the packages that read a room's state while serving a
// request; they read it from the one room view, never from the store.
var roomReaders = []string{"internal/gatekeeper", "internal/door", "internal/web", "internal/limit", "internal/admit"}

// TestOneRoomView: one subscriber keeps each room's snapshot
// (internal/roomview, built once, by server/), and the readers of room
// state read it rather than the store or a cache of their own.
func TestOneRoomView(t *testing.T) {
	views := 0
	for _, f := range sources(t) {
		f.calls(func(call *ast.CallExpr, pkg, name string) {
			if pkg == "internal/roomview" && name == "New" {
				views++
			}
			if name != "Room" || pkg != "" || !under(f.dir, roomReaders...) {
				return
			}
			recv := render(call.Fun.(*ast.SelectorExpr).X)
			if strings.Contains(strings.ToLower(recv), "store") {
				t.Errorf("%s: %s.Room reads the store; room state comes from the room view (internal/roomview)", f.pos(call), recv)
			}
		})
	}
	if views != 1 {
		t.Errorf("roomview.New is called %d times outside tests, want once (server/)", views)
	}
}

// render renders a receiver expression (g.store, h.rooms) for messages.
func render(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return render(e.X) + "." + e.Sel.Name
	}
	return "?"
}
