package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// healthcheckCommand GETs a health URL and succeeds only on 200 OK: the
// container image's HEALTHCHECK, which has no shell or curl to do it. It
// prints one line either way; a failure is an error (exit status 1).
func healthcheckCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("url", defaultHealthURL(getenv("WAITROOM_ADDR")), "health `URL` to GET (/readyz: the store answers; /healthz: the process is up);\nthe default follows WAITROOM_ADDR, as serve does")
	timeout := fs.Duration("timeout", 2*time.Second, "give up after this `duration`")
	setHelp(fs, helpText{
		usage: "waitroom healthcheck [--url URL] [--timeout 2s]",
		about: "GETs a waitroom health endpoint and exits 0 on 200 OK, 1 otherwise, with one line " +
			"saying which: the container image's HEALTHCHECK, which has no shell or curl.",
		examples: []string{"waitroom healthcheck", "waitroom healthcheck --url http://10.0.0.5:8080/healthz --timeout 5s"},
	})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	u, err := url.Parse(*target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return badUsage(fs, "--url must be an absolute http(s) URL, not %q", *target)
	}
	if *timeout <= 0 {
		return badUsage(fs, "--timeout must be a positive duration, not %s", *timeout)
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	// No proxy from the environment: the check is of this host's server.
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("healthcheck: %s: no answer within %s", u.Redacted(), *timeout)
		}
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	// Read a little of the body so the connection ends cleanly; its words
	// are not needed, only the status.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s", u.Redacted(), resp.Status)
	}
	fmt.Fprintf(stdout, "healthcheck: %s answered %s\n", u.Redacted(), resp.Status)
	return nil
}

// defaultHealthURL is the readiness URL of a server that serve would start
// on addr (WAITROOM_ADDR; empty: serve's default :8080): a wildcard or
// empty host is reached on the loopback address.
func defaultHealthURL(addr string) string {
	host, port := "127.0.0.1", "8080"
	if h, p, err := net.SplitHostPort(addr); err == nil && p != "" && p != "0" {
		port = p
		if h != "" && h != "0.0.0.0" && h != "::" {
			host = h
		}
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz"
}
