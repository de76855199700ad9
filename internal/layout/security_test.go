package layout_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/SECURITY.md promises that every defence it lists names the test
// that holds it. TestSecurityDefencesNameTheirTests keeps that true: each
// defence (a "- **…**" item) names at least one Test or Fuzz function, and
// each function it names exists, in the package named just before it when
// one is (`internal/webhook` `TestCheckTarget`).
func TestSecurityDefencesNameTheirTests(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "SECURITY.md"))
	if err != nil {
		t.Fatalf("docs/SECURITY.md: %v", err)
	}
	// Every test and fuzz function of the module, by directory.
	defined := map[string]map[string]bool{} // name → directories
	fn := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)\w+)\(`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		for _, m := range fn.FindAllSubmatch(src, -1) {
			name := string(m[1])
			if defined[name] == nil {
				defined[name] = map[string]bool{}
			}
			defined[name][filepath.ToSlash(dir)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	code := regexp.MustCompile("`([^`]+)`")
	name := regexp.MustCompile(`^(?:Test|Fuzz)\w+$`)
	items := 0
	for _, item := range defenceItems(string(doc)) {
		items++
		title := item
		if i := strings.Index(item[4:], "**"); i >= 0 {
			title = item[:i+6]
		}
		named, pkg := 0, ""
		for _, m := range code.FindAllStringSubmatch(item, -1) {
			tok := m[1]
			if !name.MatchString(tok) {
				if st, err := os.Stat(filepath.Join(root, tok)); err == nil && st.IsDir() {
					pkg = tok
				} else {
					pkg = ""
				}
				continue
			}
			named++
			dirs := defined[tok]
			switch {
			case len(dirs) == 0:
				t.Errorf("SECURITY.md %s names %s, which no test file defines", title, tok)
			case pkg != "" && !dirs[pkg]:
				t.Errorf("SECURITY.md %s names %s in %s, but it is defined in %v", title, tok, pkg, keys(dirs))
			}
		}
		if named == 0 {
			t.Errorf("SECURITY.md %s names no test", title)
		}
	}
	if items < 20 {
		t.Errorf("SECURITY.md lists %d defences; the parser found too few (want at least 20)", items)
	}
}

// defenceItems returns the text of each "- **…**" item of the Defences
// section, with its continuation lines.
func defenceItems(doc string) []string {
	_, body, ok := strings.Cut(doc, "\n## Defences")
	if !ok {
		return nil
	}
	body, _, _ = strings.Cut(body, "\n## ")
	var items []string
	var cur *strings.Builder
	for _, line := range strings.Split(body, "\n") {
		switch {
		case strings.HasPrefix(line, "- **"):
			cur = &strings.Builder{}
			items = append(items, "")
			cur.WriteString(line)
		case cur != nil && strings.HasPrefix(line, "  "):
			cur.WriteString(" " + strings.TrimSpace(line))
		default:
			cur = nil
		}
		if cur != nil {
			items[len(items)-1] = cur.String()
		}
	}
	return items
}

// keys returns m's keys.
func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
