package sqlitestore

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// needBinary returns the path of an outside program a test needs. Without
// it the test is skipped, except under CI=true, where that is a failure.
func needBinary(t *testing.T, name, debianPackage string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		msg := name + " is not installed (Debian package " + debianPackage + "; `make test` installs it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// readmeSQL returns the SQL the README's "SQLite schema" section tells
// operators to run.
func readmeSQL(t *testing.T) (section, sql string) {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatalf("read README: %v", err)
	}
	doc := string(b)
	i := strings.Index(doc, "## SQLite schema")
	if i < 0 {
		t.Fatal(`README has no "## SQLite schema" section`)
	}
	section = doc[i:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	k := strings.Index(section, "```sql\n")
	if k < 0 {
		t.Fatal("the README's SQLite schema section has no sql block")
	}
	sql = section[k+len("```sql\n"):]
	sql = sql[:strings.Index(sql, "```")]
	return section, sql
}

// TestReadmeSchemaQueries runs the README's queries with the real sqlite3
// shell against a database the store is writing, and checks the README
// names every table and the first query lists the line as the store does.
func TestReadmeSchemaQueries(t *testing.T) {
	sqlite3 := needBinary(t, "sqlite3", "sqlite3")
	section, queries := readmeSQL(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "waitroom.db")
	now := time.Now().UTC().Truncate(time.Millisecond)
	s := open(t, path, now)
	defer s.Close()
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 2
	if _, _, err := s.PutRoom(ctx, waitroom.DefaultRoom, cfg, now); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 6 {
		x, err := s.Join(ctx, waitroom.DefaultRoom, "", now.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, x.ID)
	}
	// Ticket 1 leaves (admitting 3), ticket 4 leaves while waiting.
	for _, id := range []string{ids[0], ids[3]} {
		if _, err := s.Leave(ctx, waitroom.DefaultRoom, id, waitroom.ReasonLeft, now.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}

	rows, err := s.rdb.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		rows.Scan(&name)
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("the README's schema section does not describe table %s", name)
		}
	}
	rows.Close()

	cmd := exec.Command(sqlite3, "-readonly", "-bail", "-separator", "|", path)
	cmd.Stdin = strings.NewReader(queries)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("sqlite3 ran the README's queries with %v: %s", err, errb.String())
	}
	waiting, _, err := s.Waiting(ctx, waitroom.DefaultRoom, waitroom.Page{})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < len(waiting) {
		t.Fatalf("sqlite3 printed %d lines, want at least %d waiting rows:\n%s", len(lines), len(waiting), out.String())
	}
	for i, w := range waiting {
		want := strconv.FormatInt(w.Position, 10) + "|" + strconv.FormatInt(w.Ticket, 10) + "|" + w.ID + "|"
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("README query row %d: got %q, want it to start %q", i, lines[i], want)
		}
	}
	if !strings.Contains(out.String(), "default|left|left|2") {
		t.Errorf("README's ending query does not count the two leaves:\n%s", out.String())
	}
}
