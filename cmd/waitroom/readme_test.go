package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README test: the README's walkthrough and load example are run as
// written against the real binary, and every answer the README shows is
// compared with the one the server really gave, so the documentation cannot
// drift from the server without this test failing.
//
// The format it reads, in the sections readmeRunSections names: a ```sh
// block holds commands, run in one bash session (variables carry over from
// block to block) in the folder where `waitroom serve` keeps its
// waitroom-data, with localhost:8080 and 127.0.0.1:8080 pointed at the
// server. The block right after it (only blank lines between) shows what the
// commands print:
//
//   - ```http: a status line, the headers worth showing (each must be in the
//     real answer with the same value; others may be left out) and the body,
//     JSON;
//   - ```json: one or more JSON values (compact or indented);
//   - ```text: lines compared by their shape: numbers and runs of spaces
//     differ from run to run, the words must not.
//
// A ```sh block with no output block after it must print nothing. JSON is
// compared structurally: the same fields at every level, equal values,
// except for what differs on every run: an "id" may be any value as long as
// the same README id always stands for the same server id (and different
// ones for different ones), a "pass" any signed token, and a time any
// RFC 3339 time. The line `<!-- readme-test: not run: <why> -->` right
// before a ```sh block leaves it (and its output) out.

// readmeRunSections are the README sections (headings of level 2, by their
// start) whose blocks the test runs, in this order in one shell.
var readmeRunSections = []string{"Walkthrough", "Load testing"}

// readmeScale rewrites the load example's crowd to a size a busy two-core
// test machine plays in seconds; the README shows the figures of a real
// run at full size.
var readmeScale = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`--users [0-9]+`), "--users 20"},
	{regexp.MustCompile(`--duration [0-9a-z.]+`), "--duration 3s"},
}

// readmeStepLimit bounds one block's run: a hang guard, not a verdict on
// speed (the load example takes about 15 seconds).
const readmeStepLimit = 5 * time.Minute

func TestREADMEWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not on PATH; the README test runs the README's commands with it (Debian package %s, in .ci/deps)", tool, tool)
			}
			t.Skipf("%s is not on PATH; install it (Debian package %s) to run the README's commands", tool, tool)
		}
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatalf("README: %v", err)
	}
	steps, err := parseReadmeSteps(string(raw), readmeRunSections)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	bin := buildBinary(t)
	// The server runs as "Run it" says, `waitroom serve` with its defaults
	// (the data folder ./waitroom-data), but on a free port.
	dir := t.TempDir()
	p := startProcess(t, bin, filepath.Join(dir, "waitroom-data"))

	addr := strings.TrimPrefix(p.url, "http://")
	sh := startShell(t, dir, filepath.Dir(bin))
	ids := newIDMap()
	for _, st := range steps {
		script := strings.NewReplacer("localhost:8080", addr, "127.0.0.1:8080", addr).Replace(st.script)
		for _, s := range readmeScale {
			script = s.re.ReplaceAllString(script, s.with)
		}
		out, errOut, code, err := sh.run(script, readmeStepLimit)
		if err != nil {
			t.Fatalf("README.md:%d: %v\n%s", st.line, err, st.script)
		}
		where := fmt.Sprintf("README.md:%d (the block starting `%s`)", st.line, firstLine(st.script))
		if code != 0 {
			t.Errorf("%s: exit status %d\nstderr:\n%s\nstdout:\n%s", where, code, errOut, out)
			continue
		}
		var diffs []string
		switch st.lang {
		case "":
			if strings.TrimSpace(out) != "" {
				diffs = []string{"it printed something, but the README shows no output after it"}
			}
		case "http":
			diffs = compareHTTP(st.want, out, ids)
		case "json":
			diffs = compareJSONStream(st.want, out, ids)
		case "text":
			diffs = compareText(st.want, out)
		}
		if len(diffs) > 0 {
			if errOut != "" {
				errOut = "stderr:\n" + errOut
			}
			t.Errorf("%s: the answer shown at README.md:%d is not what the server says:\n  %s\nthe server printed:\n%s%s",
				where, st.wantLine, strings.Join(diffs, "\n  "), out, errOut)
		}
	}
}

// readmeStep is one ```sh block and the output the README shows for it.
type readmeStep struct {
	line     int    // the sh block's first line
	script   string // its commands
	lang     string // the output block's language; "" when none follows
	want     string // the output shown
	wantLine int    // the output block's first line
}

// readmeBlock is one fenced block of the README.
type readmeBlock struct {
	lang    string
	text    string
	line    int  // the line of the opening fence
	after   bool // only blank lines between the previous block's end and this one
	skipped bool // <!-- readme-test: not run: … --> stands right before it
}

var (
	readmeFence = regexp.MustCompile("^```([a-z]*)\\s*$")
	readmeSkip  = regexp.MustCompile(`^<!-- readme-test: not run: .+ -->$`)
)

// parseReadmeSteps finds the named sections and their steps.
func parseReadmeSteps(readme string, sections []string) ([]readmeStep, error) {
	lines := strings.Split(readme, "\n")
	var steps []readmeStep
	for _, name := range sections {
		start := -1
		for i, l := range lines {
			if strings.HasPrefix(l, "## "+name) {
				start = i
				break
			}
		}
		if start < 0 {
			return nil, fmt.Errorf("no section \"## %s\"", name)
		}
		end := len(lines)
		for i := start + 1; i < len(lines); i++ {
			if strings.HasPrefix(lines[i], "## ") {
				end = i
				break
			}
		}
		blocks, err := readmeBlocks(lines, start, end)
		if err != nil {
			return nil, err
		}
		n := 0
		for i := 0; i < len(blocks); i++ {
			b := blocks[i]
			var next *readmeBlock
			if i+1 < len(blocks) && blocks[i+1].after && blocks[i+1].lang != "sh" {
				next = &blocks[i+1]
				i++
			}
			if b.skipped {
				continue
			}
			if b.lang != "sh" {
				return nil, fmt.Errorf("line %d: a ```%s block in %q that follows no ```sh block: show commands in ```sh and what they print in the block right after (```http, ```json or ```text), or put <!-- readme-test: not run: <why> --> before the ```sh block", b.line, b.lang, name)
			}
			st := readmeStep{line: b.line, script: b.text}
			if next != nil {
				switch next.lang {
				case "http", "json", "text":
				default:
					return nil, fmt.Errorf("line %d: output shown as ```%s; the README test reads ```http, ```json or ```text", next.line, next.lang)
				}
				st.lang, st.want, st.wantLine = next.lang, next.text, next.line
			}
			steps = append(steps, st)
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("section %q has no ```sh block to run", name)
		}
	}
	return steps, nil
}

// readmeBlocks returns the fenced blocks between lines start and end.
func readmeBlocks(lines []string, start, end int) ([]readmeBlock, error) {
	var blocks []readmeBlock
	prose := true // whether anything but blank lines came since the last block
	lastText := ""
	for i := start; i < end; i++ {
		m := readmeFence.FindStringSubmatch(lines[i])
		if m == nil {
			if s := strings.TrimSpace(lines[i]); s != "" {
				prose = true
				lastText = s
			}
			continue
		}
		b := readmeBlock{lang: m[1], line: i + 1, after: !prose, skipped: readmeSkip.MatchString(lastText)}
		j := i + 1
		for ; j < end && strings.TrimSpace(lines[j]) != "```"; j++ {
		}
		if j == end {
			return nil, fmt.Errorf("line %d: the block is not closed", i+1)
		}
		b.text = strings.Join(lines[i+1:j], "\n") + "\n"
		blocks = append(blocks, b)
		i, prose, lastText = j, false, ""
	}
	return blocks, nil
}

// shell is one bash session that runs the README's blocks in turn.
type shell struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	work   string // where the blocks and what they print are kept
	n      int
	exited chan struct{}
	log    *syncBuffer
}

// startShell starts bash in dir with the binary's folder first on PATH (so
// `waitroom` is the binary under test) and without the machine's WAITROOM_*
// settings or proxies.
func startShell(t *testing.T, dir, binDir string) *shell {
	t.Helper()
	s := &shell{work: t.TempDir(), exited: make(chan struct{}), log: new(syncBuffer)}
	s.cmd = exec.Command("bash", "--noprofile", "--norc")
	s.cmd.Dir = dir
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "WAITROOM_"), strings.HasSuffix(strings.ToLower(name), "_proxy"):
		case name == "PATH":
		default:
			s.cmd.Env = append(s.cmd.Env, kv)
		}
	}
	s.cmd.Env = append(s.cmd.Env, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	// Its own process group, so that whatever a block leaves running (load
	// workers) goes with it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	in, err := s.cmd.StdinPipe()
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	s.stdin = in
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("bash: %v", err)
	}
	go func() {
		s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.stdin.Close()
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
		}
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	})
	return s
}

// run sources script in the session and returns what it printed and its
// exit status.
func (s *shell) run(script string, limit time.Duration) (stdout, stderr string, code int, err error) {
	s.n++
	file := func(kind string) string { return filepath.Join(s.work, fmt.Sprintf("%d.%s", s.n, kind)) }
	if err := os.WriteFile(file("sh"), []byte(script), 0o600); err != nil {
		return "", "", 0, err
	}
	// The status is written to a file and renamed into place, so that its
	// appearance means it is whole.
	line := fmt.Sprintf(". %q >%q 2>%q </dev/null; echo $? >%q; mv %q %q\n",
		file("sh"), file("out"), file("err"), file("tmp"), file("tmp"), file("rc"))
	if _, err := io.WriteString(s.stdin, line); err != nil {
		return "", "", 0, fmt.Errorf("bash: %w (its output: %s)", err, s.log.String())
	}
	deadline := time.Now().Add(limit)
	for {
		rc, err := os.ReadFile(file("rc"))
		if err == nil {
			out, _ := os.ReadFile(file("out"))
			errOut, _ := os.ReadFile(file("err"))
			_, err := fmt.Sscan(string(rc), &code)
			return string(out), string(errOut), code, err
		}
		select {
		case <-s.exited:
			return "", "", 0, fmt.Errorf("bash exited while running the block: %s", s.log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(file("out"))
			return "", "", 0, fmt.Errorf("the block did not finish within %v (a hang guard); it printed:\n%s", limit, out)
		}
	}
}

// compareHTTP compares an answer printed by `curl -i` with the one shown.
func compareHTTP(want, got string, ids *idMap) []string {
	wantStatus, wantHeader, wantBody := splitHTTP(want)
	gotStatus, gotHeader, gotBody := splitHTTP(got)
	var diffs []string
	if wantStatus != gotStatus {
		diffs = append(diffs, fmt.Sprintf("status line: README %q, server %q", wantStatus, gotStatus))
	}
	for _, h := range wantHeader {
		name, value, _ := strings.Cut(h, ":")
		found := false
		for _, g := range gotHeader {
			gn, gv, _ := strings.Cut(g, ":")
			if strings.EqualFold(strings.TrimSpace(gn), strings.TrimSpace(name)) {
				found = true
				if strings.TrimSpace(gv) != strings.TrimSpace(value) {
					diffs = append(diffs, fmt.Sprintf("header %s: README %q, server %q", name, strings.TrimSpace(value), strings.TrimSpace(gv)))
				}
			}
		}
		if !found {
			diffs = append(diffs, fmt.Sprintf("header %s: shown in README, not sent by the server", name))
		}
	}
	return append(diffs, compareJSONStream(wantBody, gotBody, ids)...)
}

// splitHTTP splits a status line, headers and body.
func splitHTTP(s string) (status string, header []string, body string) {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	head, body, _ := strings.Cut(s, "\n\n")
	lines := strings.Split(head, "\n")
	return strings.TrimSpace(lines[0]), lines[1:], body
}

// compareJSONStream compares a sequence of JSON values.
func compareJSONStream(want, got string, ids *idMap) []string {
	wantVals, err := decodeJSONStream(want)
	if err != nil {
		return []string{"the README's JSON does not parse: " + err.Error()}
	}
	gotVals, err := decodeJSONStream(got)
	if err != nil {
		return []string{"the server's output is not JSON: " + err.Error()}
	}
	if len(wantVals) != len(gotVals) {
		return []string{fmt.Sprintf("README shows %d JSON values, the server printed %d", len(wantVals), len(gotVals))}
	}
	var diffs []string
	for i := range wantVals {
		path := ""
		if len(wantVals) > 1 {
			path = fmt.Sprintf("[value %d]", i+1)
		}
		diffs = append(diffs, compareJSON(path, "", wantVals[i], gotVals[i], ids)...)
	}
	return diffs
}

func decodeJSONStream(s string) ([]any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var vals []any
	for {
		var v any
		err := d.Decode(&v)
		if errors.Is(err, io.EOF) {
			return vals, nil
		}
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
}

var (
	readmeTime = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`)
	readmePass = regexp.MustCompile(`^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$`)
)

// compareJSON compares one value shown (want) with the server's (got) at
// path; key is the field name holding them.
func compareJSON(path, key string, want, got any, ids *idMap) []string {
	at := path
	if at == "" {
		at = "the answer"
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: README shows an object, the server sent %s", at, jsonText(got))}
		}
		var diffs []string
		for _, k := range sortedKeys(g) {
			if _, ok := w[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s: field %q (%s) is in the server's answer but not in README", at, k, jsonText(g[k])))
			}
		}
		for _, k := range sortedKeys(w) {
			gv, ok := g[k]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s: README shows field %q (%s), the server did not send it", at, k, jsonText(w[k])))
				continue
			}
			diffs = append(diffs, compareJSON(path+"."+k, k, w[k], gv, ids)...)
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: README shows an array, the server sent %s", at, jsonText(got))}
		}
		if len(w) != len(g) {
			return []string{fmt.Sprintf("%s: README shows %d elements, the server sent %d", at, len(w), len(g))}
		}
		var diffs []string
		for i := range w {
			diffs = append(diffs, compareJSON(fmt.Sprintf("%s[%d]", path, i), key, w[i], g[i], ids)...)
		}
		return diffs
	case string:
		g, ok := got.(string)
		switch {
		case !ok:
			return []string{fmt.Sprintf("%s: README %s, the server %s", at, jsonText(want), jsonText(got))}
		case key == "id":
			if msg := ids.pair(w, g); msg != "" {
				return []string{at + ": " + msg}
			}
			return nil
		case key == "pass":
			if !readmePass.MatchString(w) || !readmePass.MatchString(g) {
				return []string{fmt.Sprintf("%s: README %q, the server %q: both must be signed passes (header.claims.signature)", at, w, g)}
			}
			return nil
		case readmeTime.MatchString(w) && readmeTime.MatchString(g):
			return nil
		case w != g:
			return []string{fmt.Sprintf("%s: README %s, the server %s", at, jsonText(want), jsonText(got))}
		}
		return nil
	case json.Number:
		g, ok := got.(json.Number)
		if ok {
			wf, _, werr := big.ParseFloat(w.String(), 10, 200, big.ToNearestEven)
			gf, _, gerr := big.ParseFloat(g.String(), 10, 200, big.ToNearestEven)
			if werr == nil && gerr == nil && wf.Cmp(gf) == 0 {
				return nil
			}
		}
		return []string{fmt.Sprintf("%s: README %s, the server %s", at, jsonText(want), jsonText(got))}
	default: // bool, null
		if want != got {
			return []string{fmt.Sprintf("%s: README %s, the server %s", at, jsonText(want), jsonText(got))}
		}
		return nil
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "…"
	}
	return string(b)
}

// idMap pairs the README's ids with the server's, both ways: the README
// may show any id, but one id must always stand for one session.
type idMap struct{ fromREADME, fromServer map[string]string }

func newIDMap() *idMap {
	return &idMap{fromREADME: map[string]string{}, fromServer: map[string]string{}}
}

// pair records that README id w stands for server id g, or says why it
// cannot.
func (m *idMap) pair(w, g string) string {
	if prev, ok := m.fromREADME[w]; ok && prev != g {
		return fmt.Sprintf("README id %q stood for the server's %q before, here for %q: the README shows one session where the server has two", w, prev, g)
	}
	if prev, ok := m.fromServer[g]; ok && prev != w {
		return fmt.Sprintf("the server's id %q was shown as %q before, here as %q: the README shows two sessions where the server has one", g, prev, w)
	}
	m.fromREADME[w], m.fromServer[g] = g, w
	return ""
}

// readmeNumber matches a figure of a text report (1,234, 0.9ms, 12.5%).
var readmeNumber = regexp.MustCompile(`[0-9][0-9,]*(\.[0-9]+)?`)

// textShape is a line with its figures and spacing taken out.
func textShape(l string) string {
	return strings.Join(strings.Fields(readmeNumber.ReplaceAllString(l, "#")), " ")
}

// compareText compares printed lines by their shape.
func compareText(want, got string) []string {
	var w, g []string
	for _, l := range strings.Split(want, "\n") {
		if strings.TrimSpace(l) != "" {
			w = append(w, textShape(l))
		}
	}
	sc := bufio.NewScanner(bytes.NewReader([]byte(got)))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			g = append(g, textShape(sc.Text()))
		}
	}
	// The longest common subsequence of the two, so that one line added or
	// left out is reported as that, not as every line after it differing.
	lcs := make([][]int, len(w)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(g)+1)
	}
	for i := len(w) - 1; i >= 0; i-- {
		for j := len(g) - 1; j >= 0; j-- {
			if w[i] == g[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var diffs []string
	i, j := 0, 0
	for i < len(w) || j < len(g) {
		switch {
		case i < len(w) && j < len(g) && w[i] == g[j]:
			i, j = i+1, j+1
		case j < len(g) && (i == len(w) || lcs[i][j+1] >= lcs[i+1][j]):
			diffs = append(diffs, fmt.Sprintf("the server printed %q (figures aside), README does not show it", g[j]))
			j++
		default:
			diffs = append(diffs, fmt.Sprintf("README shows %q (figures aside), the server did not print it", w[i]))
			i++
		}
	}
	return diffs
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if len(l) > 70 {
		l = l[:67] + "…"
	}
	return l
}

// TestREADMEWaitingPage serves the example page of the README's "Waiting
// page" section (its ```html block) with the real binary, in English and
// German, and checks the start-up error the section shows (its ```text
// block) for the same page with {{.Position}} misspelt as {{.Positon}}.
func TestREADMEWaitingPage(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatalf("README: %v", err)
	}
	page, wantErr, err := readmeWaitingPage(string(raw))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	templates := filepath.Join(dir, "templates")
	if err := os.Mkdir(templates, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(templates, "page.html"), []byte(page), 0o600); err != nil {
		t.Fatal(err)
	}
	p, token := startCrashServer(t, bin, filepath.Join(dir, "data"), []string{"--templates", templates})
	// A room of capacity 0, as the section suggests, keeps its visitors
	// waiting, the state with the most on the page.
	put, err := http.NewRequest(http.MethodPut, p.url+"/v1/rooms/wait", strings.NewReader(`{"capacity":0}`))
	if err != nil {
		t.Fatal(err)
	}
	put.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(put)
	if err != nil {
		t.Fatalf("PUT /v1/rooms/wait: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT /v1/rooms/wait: %d, want 201", resp.StatusCode)
	}
	// Every line of the example without a template action is written as
	// is, so finding them all shows the page is the README's.
	var literal []string
	for _, l := range strings.Split(page, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.Contains(l, "{{") {
			literal = append(literal, l)
		}
	}
	for i, lang := range []string{"en", "de"} {
		// Each request, without a cookie, is one more visitor in line.
		req, err := http.NewRequest(http.MethodGet, p.url+"/r/wait", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept-Language", lang)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET /r/wait: %v", err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("GET /r/wait: %v", err)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Language") != lang {
			t.Errorf("GET /r/wait in %s: %d, Content-Language %q; want 200 in %s\n%s", lang, resp.StatusCode, resp.Header.Get("Content-Language"), lang, body)
			continue
		}
		for _, want := range append(literal, `<html lang="`+lang+`">`, `data-lang="`+lang+`"`, fmt.Sprintf(`data-waitroom="position">%d<`, i+1)) {
			if !strings.Contains(string(body), want) {
				t.Errorf("the README's example page in %s: %q is not in the page served:\n%s", lang, want, body)
			}
		}
	}

	// The same page with a misspelt field stops the start, as shown.
	broken := strings.Replace(page, "{{.Position}}", "{{.Positon}}", 1)
	if broken == page {
		t.Fatal(`README.md: the "Waiting page" example has no {{.Position}} to misspell for the start-up error it shows`)
	}
	if err := os.WriteFile(filepath.Join(templates, "page.html"), []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--templates", "templates", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data2"))
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WAITROOM_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute): // a hang guard
		cmd.Process.Kill()
		<-done
		t.Fatalf("waitroom serve with a broken template still ran after 2 minutes; stderr:\n%s", stderr.String())
	}
	if err == nil {
		t.Errorf("waitroom serve with a broken template exited 0, want a failure")
	}
	found := false
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.TrimSpace(l) == wantErr {
			found = true
		}
	}
	if !found {
		t.Errorf("README.md shows the start-up error\n  %s\nbut waitroom serve --templates templates printed:\n%s", wantErr, stderr.String())
	}
}

// readmeWaitingPage returns the "Waiting page" section's example page (its
// ```html block) and the start-up error it shows (the first line of the
// ```text block after `waitroom serve --templates templates`).
func readmeWaitingPage(readme string) (page, startErr string, err error) {
	lines := strings.Split(readme, "\n")
	start, end := -1, len(lines)
	for i, l := range lines {
		switch {
		case start < 0 && strings.HasPrefix(l, "## Waiting page"):
			start = i
		case start >= 0 && strings.HasPrefix(l, "## "):
			end = i
		}
		if end < len(lines) {
			break
		}
	}
	if start < 0 {
		return "", "", errors.New(`no section "## Waiting page"`)
	}
	blocks, err := readmeBlocks(lines, start, end)
	if err != nil {
		return "", "", err
	}
	for i, b := range blocks {
		switch {
		case b.lang == "html" && page == "":
			page = b.text
		case b.lang == "sh" && strings.TrimSpace(b.text) == "waitroom serve --templates templates" &&
			i+1 < len(blocks) && blocks[i+1].lang == "text" && blocks[i+1].after:
			startErr, _, _ = strings.Cut(strings.TrimSpace(blocks[i+1].text), "\n")
		}
	}
	if page == "" || startErr == "" {
		return "", "", errors.New(`the "Waiting page" section needs its example page in a ` + "```html" + ` block and, after ` + "```sh waitroom serve --templates templates" + `, the start-up error in a ` + "```text" + ` block`)
	}
	return page, startErr, nil
}
