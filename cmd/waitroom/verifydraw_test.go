package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// realDraw returns a record as a server publishes it after drawing n
// keyless entrants.
func realDraw(t *testing.T, n int) waitroom.DrawRecord {
	t.Helper()
	seed := waitroom.NewDrawSeed()
	entries := make([]string, n)
	for i := range entries {
		var secret [16]byte
		secret[0], secret[1] = byte(i), byte(i>>8)
		entries[i] = waitroom.EntryForSecret(secret)
	}
	drawn := waitroom.DrawOrder(seed, entries, 1)
	return waitroom.DrawRecord{
		Room:        "drop",
		OpensAt:     time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC),
		Commitment:  seed.Commitment(),
		Drawn:       true,
		DrawnAt:     time.Date(2030, 1, 2, 10, 0, 0, 3e6, time.UTC),
		Entrants:    n,
		Seed:        seed.String(),
		FirstTicket: 1,
		Entries:     drawn,
		Digest:      waitroom.DrawDigest(drawn),
	}
}

// writeRecord writes data to a file in a fresh directory and returns its path.
func writeRecord(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "draw.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func marshalRecord(t *testing.T, d waitroom.DrawRecord) []byte {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// verifyDraw runs `waitroom verify-draw arg` and returns its output and error.
func verifyDraw(t *testing.T, arg string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = run(c, []string{"verify-draw", arg}, env(nil), &out, &errOut)
	return out.String(), errOut.String(), err
}

// checkReport checks the success report names the record's facts.
func checkReport(t *testing.T, out string, d waitroom.DrawRecord) {
	t.Helper()
	for _, want := range []string{
		"room:         drop\n",
		"commitment:   " + d.Commitment + "\n",
		"seed:         " + d.Seed + "\n",
		"entrants:     300\n",
		"first ticket: 1\n",
		"digest:       " + d.Digest + "\n",
		"OK: the order follows from the seed committed to before the draw.\n",
		"every entrant is a real person",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestVerifyDrawFile(t *testing.T) {
	d := realDraw(t, 300)
	out, errOut, err := verifyDraw(t, writeRecord(t, marshalRecord(t, d)))
	if err != nil {
		t.Fatalf("verify-draw of a real draw: %v; stderr:\n%s", err, errOut)
	}
	checkReport(t, out, d)
}

func TestVerifyDrawStdin(t *testing.T) {
	d := realDraw(t, 300)
	old := drawStdin
	drawStdin = bytes.NewReader(marshalRecord(t, d))
	defer func() { drawStdin = old }()
	out, _, err := verifyDraw(t, "-")
	if err != nil {
		t.Fatalf("verify-draw - of a real draw: %v", err)
	}
	checkReport(t, out, d)
}

func TestVerifyDrawURL(t *testing.T) {
	d := realDraw(t, 300)
	body := marshalRecord(t, d)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/v1/rooms/drop/draw" {
			http.Error(w, "unexpected request", http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer srv.Close()
	out, errOut, err := verifyDraw(t, srv.URL+"/v1/rooms/drop/draw")
	if err != nil {
		t.Fatalf("verify-draw of a real draw over HTTP: %v; stderr:\n%s", err, errOut)
	}
	checkReport(t, out, d)
}

func TestVerifyDrawRejectsTamperedRecords(t *testing.T) {
	good := realDraw(t, 300)
	for _, c := range []struct {
		name   string
		change func(d *waitroom.DrawRecord)
		want   string
	}{
		{"value", func(d *waitroom.DrawRecord) {
			d.Entries[42].Value = strings.Repeat("0", 64)
			d.Digest = waitroom.DrawDigest(d.Entries)
		}, "entry 43 "},
		{"seed", func(d *waitroom.DrawRecord) {
			d.Seed = waitroom.NewDrawSeed().String()
		}, "the seed does not match the commitment"},
		{"seed and commitment", func(d *waitroom.DrawRecord) {
			s := waitroom.NewDrawSeed()
			d.Seed, d.Commitment = s.String(), s.Commitment()
		}, "does not recompute"},
		{"order", func(d *waitroom.DrawRecord) {
			d.Entries[10].Entry, d.Entries[11].Entry = d.Entries[11].Entry, d.Entries[10].Entry
			d.Entries[10].Value, d.Entries[11].Value = d.Entries[11].Value, d.Entries[10].Value
			d.Digest = waitroom.DrawDigest(d.Entries)
		}, "entry 12 "},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := good
			d.Entries = slices.Clone(good.Entries)
			c.change(&d)
			out, _, err := verifyDraw(t, writeRecord(t, marshalRecord(t, d)))
			if err == nil {
				t.Fatalf("verify-draw accepted a record with a changed %s:\n%s", c.name, out)
			}
			for _, want := range []string{`the draw of room "drop" does not verify`, c.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error = %q, want it to contain %q", err, want)
				}
			}
			if strings.Contains(out, "OK") {
				t.Errorf("stdout says OK for a failed check:\n%s", out)
			}
			if code := exitCode(err, io.Discard); code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
		})
	}
}

func TestVerifyDrawNotDrawnYet(t *testing.T) {
	seed := waitroom.NewDrawSeed()
	d := waitroom.DrawRecord{Room: "drop", OpensAt: time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC), Commitment: seed.Commitment(), Entrants: 12}
	_, _, err := verifyDraw(t, writeRecord(t, marshalRecord(t, d)))
	if err == nil {
		t.Fatal("verify-draw accepted a record before the draw")
	}
	if want := "the draw has not taken place yet (commitment " + seed.Commitment(); !strings.Contains(err.Error(), want) {
		t.Errorf("error = %q, want it to contain %q", err, want)
	}
}

func TestVerifyDrawReportsServerError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":"room_not_found","message":"There is no room named \"nope\"."}}`)
	}))
	defer srv.Close()
	_, _, err := verifyDraw(t, srv.URL+"/v1/rooms/nope/draw")
	if err == nil {
		t.Fatal("verify-draw succeeded on a 404 answer")
	}
	for _, want := range []string{"404 Not Found", `There is no room named "nope".`, "room_not_found"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error = %q, want it to contain %q", err, want)
		}
	}
}

func TestVerifyDrawReportsNonJSONServerError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html>\n<body>bad gateway</body>\n</html>\n")
	}))
	defer srv.Close()
	_, _, err := verifyDraw(t, srv.URL)
	if err == nil {
		t.Fatal("verify-draw succeeded on a 502 answer")
	}
	for _, want := range []string{"502 Bad Gateway", "not a waitroom error", "bad gateway"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error = %q, want it to contain %q", err, want)
		}
	}
}

func TestVerifyDrawRejectsMalformedInput(t *testing.T) {
	valid := string(marshalRecord(t, realDraw(t, 3)))
	for _, c := range []struct{ name, data, want string }{
		{"empty", "", "the input is empty"},
		{"truncated", valid[:len(valid)/2], "not a draw record: unexpected EOF"},
		{"not an object", `[1,2]`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"unknown field", `{"room":"drop","drawn":true,"sneaky":1}`, `unknown field "sneaky"`},
		{"wrong type", `{"room":"drop","entrants":"many"}`, "not a draw record: json: cannot unmarshal string"},
		{"trailing data", valid + `{}`, "more follows the JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeRecord(t, []byte(c.data))
			_, _, err := verifyDraw(t, path)
			if err == nil {
				t.Fatalf("verify-draw accepted %q", c.data)
			}
			for _, want := range []string{path, c.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error = %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

func TestVerifyDrawMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.json")
	_, _, err := verifyDraw(t, path)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error = %v, want one wrapping os.ErrNotExist", err)
	}
}

func TestVerifyDrawRefusesOversizedRecord(t *testing.T) {
	old := drawRecordLimit
	drawRecordLimit = 1000
	defer func() { drawRecordLimit = old }()
	_, _, err := verifyDraw(t, writeRecord(t, marshalRecord(t, realDraw(t, 300))))
	if err == nil || !strings.Contains(err.Error(), "larger than 1000 bytes") {
		t.Errorf("error = %v, want one saying the record is larger than 1000 bytes", err)
	}
}

func TestVerifyDrawCommandLine(t *testing.T) {
	var ue *usageError
	for _, args := range [][]string{{"verify-draw"}, {"verify-draw", "a", "b"}, {"verify-draw", "--nope", "a"}} {
		err := run(context.Background(), args, env(nil), io.Discard, io.Discard)
		if !errors.As(err, &ue) {
			t.Errorf("run %q: error = %v, want a usage error", args, err)
		}
	}
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"verify-draw", "-h"}, env(nil), io.Discard, &stderr)
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "Usage: waitroom verify-draw URL-or-FILE") {
		t.Errorf("verify-draw -h: error %v, stderr %q; want flag.ErrHelp and the usage", err, stderr.String())
	}
	var help bytes.Buffer
	if err := run(context.Background(), []string{"help"}, env(nil), &help, io.Discard); err != nil || !strings.Contains(help.String(), "verify-draw") {
		t.Errorf("help does not list verify-draw (err %v):\n%s", err, help.String())
	}
}
