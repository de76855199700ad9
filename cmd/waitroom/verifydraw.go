package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/waitroom/waitroom"
)

// drawFetchTimeout bounds the whole GET of a draw record, body included.
const drawFetchTimeout = 30 * time.Second

// drawRecordLimit is the largest draw record verify-draw reads: a drawn
// entry takes about 130 bytes of JSON, so this allows some four million
// entrants while refusing an endless answer. A variable so tests can lower it.
var drawRecordLimit int64 = 512 << 20

// drawStdin is what "-" reads; tests replace it.
var drawStdin io.Reader = os.Stdin

// verifyDrawCommand fetches or reads a published draw record and checks it
// with waitroom.VerifyDraw, so anyone can audit a scheduled room's draw
// without trusting the server that published it.
func verifyDrawCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify-draw", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setHelp(fs, helpText{
		usage: "waitroom verify-draw URL-or-FILE",
		about: "Checks a scheduled room's published draw without trusting the server that published it: " +
			"that the seed matches the commitment published before the draw, and that every entrant's " +
			"value and ticket follow from that seed. URL-or-FILE is the draw record (GET " +
			"/v1/rooms/{room}/draw), a file holding it, or \"-\" for standard input. It exits 0 when the " +
			"draw verifies and 1 when it does not.",
		examples: []string{
			"waitroom verify-draw https://queue.example.com/v1/rooms/drop/draw",
			"curl -s https://queue.example.com/v1/rooms/drop/draw | waitroom verify-draw -",
		},
	})
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return badUsage(fs, "want one URL or FILE, got %d arguments", fs.NArg())
	}
	src := fs.Arg(0)

	var data []byte
	var err error
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		data, err = fetchDrawRecord(ctx, src)
	} else {
		data, err = readDrawRecord(src)
	}
	if err != nil {
		return err
	}
	d, err := parseDrawRecord(data)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if !d.Drawn {
		return fmt.Errorf("the draw has not taken place yet (commitment %s; room %q, %d entrants so far, opening %s)",
			d.Commitment, d.Room, d.Entrants, d.OpensAt.UTC().Format(time.RFC3339))
	}
	if err := waitroom.VerifyDraw(d); err != nil {
		return fmt.Errorf("the draw of room %q does not verify: %w", d.Room, err)
	}

	fmt.Fprintf(stdout, "room:         %s\n", d.Room)
	fmt.Fprintf(stdout, "commitment:   %s\n", d.Commitment)
	fmt.Fprintf(stdout, "seed:         %s\n", d.Seed)
	fmt.Fprintf(stdout, "entrants:     %d\n", d.Entrants)
	fmt.Fprintf(stdout, "first ticket: %d\n", d.FirstTicket)
	fmt.Fprintf(stdout, "digest:       %s\n", d.Digest)
	fmt.Fprintln(stdout, "OK: the order follows from the seed committed to before the draw.")
	fmt.Fprintln(stdout, "Not proven: that every entrant is a real person; an operator could add entrants of its own.")
	return nil
}

// fetchDrawRecord GETs url and returns the body of a 200 answer. Any other
// status becomes an error carrying the server's own message when the body
// is a waitroom error.
func fetchDrawRecord(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, drawFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "waitroom verify-draw")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// An error body is small; the first 64 KiB are plenty to explain it.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, serverMessage(body))
	}
	data, err := readLimited(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return data, nil
}

// serverMessage explains an error answer: the message and code of a
// waitroom error body, or else the start of whatever the body holds.
func serverMessage(body []byte) string {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		if e.Error.Code != "" {
			return fmt.Sprintf("%s (%s)", e.Error.Message, e.Error.Code)
		}
		return e.Error.Message
	}
	// Not a waitroom error (a proxy's HTML page, say): show its start on one line.
	s := strings.Join(strings.FieldsFunc(string(body), unicode.IsSpace), " ")
	if s == "" {
		return "no error message in the answer"
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return fmt.Sprintf("the answer is not a waitroom error: %q", s)
}

// readDrawRecord reads the record from a file, or from standard input for "-".
func readDrawRecord(path string) ([]byte, error) {
	if path == "-" {
		data, err := readLimited(drawStdin)
		if err != nil {
			return nil, fmt.Errorf("standard input: %w", err)
		}
		return data, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read draw record: %w", err)
	}
	defer f.Close()
	data, err := readLimited(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// readLimited reads r to its end, failing beyond drawRecordLimit bytes.
func readLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, drawRecordLimit+1))
	if err != nil {
		return nil, fmt.Errorf("read draw record: %w", err)
	}
	if int64(len(data)) > drawRecordLimit {
		return nil, fmt.Errorf("the draw record is larger than %d bytes", drawRecordLimit)
	}
	return data, nil
}

// parseDrawRecord decodes exactly one JSON object holding only the fields
// of a waitroom.DrawRecord: anything else means the input is not what the
// server publishes, and checking it would prove nothing.
func parseDrawRecord(data []byte) (waitroom.DrawRecord, error) {
	var d waitroom.DrawRecord
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return d, errors.New("not a draw record: the input is empty")
	}
	if trimmed[0] != '{' {
		return d, errors.New("not a draw record: the input is not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return d, fmt.Errorf("not a draw record: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return d, errors.New("not a draw record: more follows the JSON object")
	}
	return d, nil
}
