// Command waitroom runs the waitroom server and its tools.
//
//	waitroom serve        run the HTTP server
//	waitroom load         play a crowd against running servers
//	waitroom bench        measure waitroom next to the alternatives
//	waitroom verify-draw  check a scheduled room's published draw
//	waitroom invite       make invite keys and mint invite tokens
//	waitroom version      print version information
//
// Everything but the process plumbing lives in run, so tests drive the
// command without a process of its own.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}
