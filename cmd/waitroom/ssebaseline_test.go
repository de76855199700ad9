package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSSEBaselineCommand runs `waitroom sse-baseline` small and checks its
// figures. The server hands out what is due by the clock when it stops, so
// the count holds however late a saturated machine runs its ticker.
func TestSSEBaselineCommand(t *testing.T) {
	bin := buildBinary(t)
	out := filepath.Join(t.TempDir(), "baseline.json")
	cmd := exec.Command(bin, "sse-baseline", "--streams", "200", "--rate", "1000", "--bytes", "300",
		"--duration", "2s", "--workers", "2", "--sources", "2", "--json", out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("waitroom sse-baseline: %v\n%s", err, b)
	}
	t.Logf("waitroom sse-baseline:\n%s", b)
	if !strings.Contains(string(b), "µs per delivered message") || !strings.Contains(string(b), "KiB per stream") {
		t.Errorf("the human line is missing:\n%s", b)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res baselineResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"streams", "delivered", "cpu_seconds", "cpu_us_per_update", "kib_per_stream"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("JSON has no %q: %s", f, raw)
		}
	}
	if res.Streams != 200 || res.Failed != 0 {
		t.Errorf("%d streams open, %d failed; want 200 and 0", res.Streams, res.Failed)
	}
	if res.Delivered <= 0 || res.Delivered > res.Sent {
		t.Fatalf("delivered %d of %d sent", res.Delivered, res.Sent)
	}
	if want := 1000 * res.Seconds; float64(res.Delivered) < want/2 || float64(res.Delivered) > want*1.2 {
		t.Errorf("delivered %d in %.2fs: want about %.0f (1000 a second)", res.Delivered, res.Seconds, want)
	}
	if res.Bytes != 300 {
		t.Errorf("bytes %d, want 300", res.Bytes)
	}
	if res.CPUSeconds < 0 || res.CPUMicrosPerMsg < 0 || res.CPUMicrosPerMsg > 10000 {
		t.Errorf("server CPU %.2fs, %.1f µs per message: not sane", res.CPUSeconds, res.CPUMicrosPerMsg)
	}
	if res.IdleKiB <= 0 || res.PeakKiB < res.IdleKiB || res.KiBPerStream < 0 || res.KiBPerStream > 1024 {
		t.Errorf("server memory idle %d KiB, peak %d KiB, %.1f KiB per stream: not sane", res.IdleKiB, res.PeakKiB, res.KiBPerStream)
	}
}

// TestSSEBaselineStream checks the bytes of the baseline's stream: the SSE
// headers, then each message handed to the stream, with rising ids.
func TestSSEBaselineStream(t *testing.T) {
	b := &baselineServer{payload: baselinePayload(120)}
	ts := httptest.NewServer(b)
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct, cc := resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"); ct != "text/event-stream" || cc != "no-store" {
		t.Fatalf("Content-Type %q, Cache-Control %q", ct, cc)
	}
	// The handler registers the stream after the headers: wait for it.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		n := len(b.streams)
		b.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream was not registered")
		}
	}
	if got := b.hand(2); got != 2 {
		t.Fatalf("handed %d, want 2", got)
	}
	payload := string(baselinePayload(120))
	want := "id: 1\nevent: session\ndata: " + payload + "\n\nid: 2\nevent: session\ndata: " + payload + "\n\n"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(bufio.NewReader(resp.Body), got); err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("stream:\n%q\nwant:\n%q", got, want)
	}
}

// TestBaselinePayload checks the payload has the asked length and no newline.
func TestBaselinePayload(t *testing.T) {
	for _, n := range []int{1, 10, 81, 82, 330, 4096} {
		p := baselinePayload(n)
		if len(p) != n || strings.ContainsRune(string(p), '\n') {
			t.Errorf("baselinePayload(%d): %d bytes %q", n, len(p), p)
		}
	}
}

// TestSSEBaselineFlags checks the command refuses what it cannot measure.
func TestSSEBaselineFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--streams", "0"},
		{"--streams", "30000"},
		{"--streams", "19000", "--workers", "1", "--rate", "0"},
		{"--bytes", "0"},
		{"--duration", "0s"},
		{"--sources", "-1"},
		{"extra"},
	} {
		err := run(t.Context(), append([]string{"sse-baseline"}, args...), func(string) string { return "" }, io.Discard, io.Discard)
		if ue := (*usageError)(nil); !errors.As(err, &ue) {
			t.Errorf("sse-baseline %v: %v, want a usage error", args, err)
		}
	}
	if strings.Contains(usageText, "sse-baseline") {
		t.Error("sse-baseline is listed in the usage; it is a hidden measuring tool")
	}
}
