package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

const usageText = `waitroom is a self-hosted virtual waiting room.

Usage:

	waitroom <command> [flags]

Commands:

	serve        run the HTTP server
	load         play a crowd against running servers and report what it saw
	bench        measure waitroom next to the alternatives and print one table
	verify-draw  check a scheduled room's published draw (from a URL or a file)
	invite       make invite keys and mint signed invite tokens offline
	version      print the version, the Go version and the VCS revision
	help         print this help

Run "waitroom <command> -h" for a command's flags.
`

// usageError reports a command line that cannot be obeyed. Its message and
// the usage have already been printed; the process exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// run is the whole command: main only wires it to the process. args exclude
// the program name; getenv reads the environment; run writes what a user
// asked for to stdout and diagnostics to stderr. A nil error means success,
// including a clean shutdown after ctx ends.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return &usageError{"no command given"}
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return serve(ctx, rest, getenv, stdout, stderr)
	case "load":
		return loadCommand(ctx, rest, getenv, stdout, stderr)
	case "bench":
		return benchCommand(ctx, rest, getenv, stdout, stderr)
	case "sse-baseline":
		// Hidden: the baseline of scripts/fanout-bench.sh, a measuring tool.
		return sseBaselineCommand(ctx, rest, stdout, stderr)
	case "verify-draw":
		return verifyDrawCommand(ctx, rest, stdout, stderr)
	case "invite":
		return inviteCommand(rest, stdout, stderr)
	case "version":
		return versionCommand(rest, stdout, stderr)
	case "healthcheck":
		return healthcheckCommand(ctx, rest, getenv, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usageText)
		return nil
	default:
		fmt.Fprintf(stderr, "waitroom: unknown command %q\n\n%s", cmd, usageText)
		return &usageError{fmt.Sprintf("unknown command %q", cmd)}
	}
}

// exitCode turns run's result into the process's exit status: 0 for success
// or -h, 2 for a bad command line (already explained on stderr), and 1 for
// any other failure, which it prints.
func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		return 2
	}
	fmt.Fprintf(stderr, "waitroom: %v\n", err)
	return 1
}

// parseFlags parses args with fs and turns flag errors into a usageError
// (the flag package has printed the message and the usage already).
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		return err
	default:
		return &usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return badUsage(fs, "unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// badUsage prints a message and fs's usage and returns the usageError.
func badUsage(fs *flag.FlagSet, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(fs.Output(), "waitroom %s: %s\n", fs.Name(), msg)
	fs.Usage()
	return &usageError{msg}
}
