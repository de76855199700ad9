package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHealthcheckAgainstARealServer(t *testing.T) {
	s := startServe(t, []string{"--addr", "127.0.0.1:0", "--data", t.TempDir()}, nil)
	for _, path := range []string{"/readyz", "/healthz"} {
		var stdout, stderr bytes.Buffer
		err := run(ctx(t), []string{"healthcheck", "--url", s.url + path}, env(nil), &stdout, &stderr)
		if err != nil {
			t.Fatalf("healthcheck %s: %v; stderr %q", path, err, stderr.String())
		}
		if got := stdout.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "200 OK") {
			t.Errorf("healthcheck %s printed %q, want one line with 200 OK", path, got)
		}
	}
	// Not a health endpoint: 404 is a failure.
	err := run(ctx(t), []string{"healthcheck", "--url", s.url + "/no-such-path"}, env(nil), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("healthcheck of a 404 returned %v, want an error naming 404", err)
	}
}

func TestHealthcheckFailures(t *testing.T) {
	unready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"code":"unavailable"}}`, http.StatusServiceUnavailable)
	}))
	defer unready.Close()
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(hang)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/readyz"
	ln.Close()

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"503", []string{"--url", unready.URL + "/readyz"}, "503 Service Unavailable"},
		{"closed port", []string{"--url", closed}, "connection refused"},
		{"timeout", []string{"--url", slow.URL + "/readyz", "--timeout", "200ms"}, "no answer within 200ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			started := time.Now()
			err := run(context.Background(), append([]string{"healthcheck"}, tc.args...), env(nil), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("healthcheck %v returned %v, want an error containing %q", tc.args, err, tc.want)
			}
			var errOut bytes.Buffer
			if code := exitCode(err, &errOut); code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			if strings.Count(errOut.String(), "\n") != 1 {
				t.Errorf("printed %q, want one line", errOut.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q on failure, want nothing", stdout.String())
			}
			// A hang guard, not a timing verdict.
			if d := time.Since(started); d > 30*time.Second {
				t.Errorf("healthcheck took %s", d)
			}
		})
	}
}

func TestHealthcheckBadCommandLine(t *testing.T) {
	for _, args := range [][]string{{"--url", "localhost:8080"}, {"--url", "ftp://x/readyz"}, {"--timeout", "0s"}, {"extra"}} {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"healthcheck"}, args...), env(nil), &bytes.Buffer{}, &stderr)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("healthcheck %v returned %v, want a usage error (exit 2)", args, err)
		}
	}
}

func TestHealthcheckDefaultURLFollowsWaitroomAddr(t *testing.T) {
	for addr, want := range map[string]string{
		"":               "http://127.0.0.1:8080/readyz",
		":8080":          "http://127.0.0.1:8080/readyz",
		":9090":          "http://127.0.0.1:9090/readyz",
		"0.0.0.0:9091":   "http://127.0.0.1:9091/readyz",
		"[::]:9092":      "http://127.0.0.1:9092/readyz",
		"10.0.0.5:9093":  "http://10.0.0.5:9093/readyz",
		"[::1]:9094":     "http://[::1]:9094/readyz",
		"127.0.0.1:0":    "http://127.0.0.1:8080/readyz",
		"not an address": "http://127.0.0.1:8080/readyz",
	} {
		if got := defaultHealthURL(addr); got != want {
			t.Errorf("defaultHealthURL(%q) = %q, want %q", addr, got, want)
		}
	}
	// And through the command: WAITROOM_ADDR names the port of a real server.
	s := startServe(t, []string{"--addr", "127.0.0.1:0", "--data", t.TempDir()}, nil)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.url, "http://"))
	var stdout bytes.Buffer
	if err := run(ctx(t), []string{"healthcheck"}, env(map[string]string{"WAITROOM_ADDR": ":" + port}), &stdout, &bytes.Buffer{}); err != nil {
		t.Fatalf("healthcheck with WAITROOM_ADDR=:%s: %v", port, err)
	}
	if !strings.Contains(stdout.String(), "127.0.0.1:"+port+"/readyz answered 200 OK") {
		t.Errorf("healthcheck printed %q", stdout.String())
	}
}
