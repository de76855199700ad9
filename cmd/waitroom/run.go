package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

const usageText = `Usage: waitroom COMMAND [flags]

waitroom is a self-hosted virtual waiting room.

Commands:

	serve        run the HTTP server
	load         play a crowd against running servers and report what it saw
	bench        measure waitroom next to the alternatives and print one table
	verify-draw  check a scheduled room's published draw (from a URL or a file)
	invite       make invite keys and mint signed invite tokens offline
	version      print the version, the VCS revision and the build time
	healthcheck  exit 0 if a server's /readyz answers 200 (the image's health check)
	help         print this list, or a command's help: waitroom help COMMAND

Run "waitroom help COMMAND" (or "waitroom COMMAND -h") for a command's flags.
`

// usageError reports a command line that cannot be obeyed. Its message has
// already been printed; the process exits with status 2.
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
		if cmd == "help" && len(rest) > 0 && !slices.Contains([]string{"help", "-h", "-help", "--help"}, rest[0]) {
			if !strings.Contains(usageText, "\n\t"+rest[0]+" ") {
				fmt.Fprintf(stderr, "waitroom help: no command %q\nsee `waitroom -h` for the commands\n", rest[0])
				return &usageError{fmt.Sprintf("no command %q", rest[0])}
			}
			// "waitroom help load" is "waitroom load -h" (and "help invite
			// mint" is "invite mint -h"), printed to stdout: it was asked for.
			return run(ctx, append(slices.Clone(rest), "-h"), getenv, stdout, stdout)
		}
		fmt.Fprint(stdout, usageText)
		return nil
	default:
		fmt.Fprintf(stderr, "waitroom: unknown command %q\nsee `waitroom -h` for the commands\n", cmd)
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

// parseFlags parses args with fs, which takes no other arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badUsage(fs, "unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// parseArgs parses args with fs. On -h it prints fs's help (its Usage) and
// returns flag.ErrHelp; a bad flag is one line, its error, and a pointer
// to -h (the flag package alone would print the whole help after it), as a
// usageError.
func parseArgs(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		if usage == nil {
			fmt.Fprintf(out, "Usage of waitroom %s:\n", fs.Name())
			fs.PrintDefaults()
		} else {
			usage()
		}
		return err
	}
	return badUsage(fs, "%v", err)
}

// badUsage prints a message about fs's command line and where its help is,
// two lines on fs's output, and returns the usageError.
func badUsage(fs *flag.FlagSet, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(fs.Output(), "waitroom %s: %s\nsee `waitroom %s -h`\n", fs.Name(), msg, fs.Name())
	return &usageError{msg}
}

// helpText is a command's help besides its flags. Every command's -h has
// one shape: a usage line, a paragraph on what the command does, its
// flags with their defaults, and an example or two.
type helpText struct {
	// usage is the usage line after "Usage: ", e.g. "waitroom load [flags]".
	usage string
	// about is one paragraph; it is wrapped when printed.
	about string
	// examples are command lines, shown as they are.
	examples []string
	// hidden flags are parsed but never shown: the internal ones a
	// command passes to its own re-executed worker processes.
	hidden []string
	// order, when set, lists the flags in the order shown (else sorted).
	order []string
	// env, when set, names the environment variable that also sets a flag.
	env func(name string) string
}

// setHelp makes fs's -h print h and fs's flags to fs's output (stderr, as
// Go's commands do; "waitroom help NAME" prints the same to stdout).
func setHelp(fs *flag.FlagSet, h helpText) {
	fs.Usage = func() { io.WriteString(fs.Output(), h.render(fs)) }
}

// helpWidth is the width help text is wrapped to.
const helpWidth = 80

// render formats the whole help of fs.
func (h helpText) render(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n\n%s\n", h.usage, wrap(h.about, helpWidth, ""))
	var flags []*flag.Flag
	if h.order != nil {
		for _, name := range h.order {
			if f := fs.Lookup(name); f != nil {
				flags = append(flags, f)
			}
		}
	} else {
		fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	}
	flags = slices.DeleteFunc(flags, func(f *flag.Flag) bool { return slices.Contains(h.hidden, f.Name) })
	if len(flags) > 0 {
		b.WriteString("\nFlags:\n")
	}
	for _, f := range flags {
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  --%s", f.Name)
		if name != "" {
			fmt.Fprintf(&b, " %s", name)
		}
		var notes []string
		if h.env != nil {
			if env := h.env(f.Name); env != "" {
				notes = append(notes, "env "+env)
			}
		}
		if d := f.DefValue; !slices.Contains([]string{"", "0", "0s", "false"}, d) {
			if g, ok := f.Value.(flag.Getter); ok {
				if _, isString := g.Get().(string); isString {
					d = fmt.Sprintf("%q", d)
				}
			}
			notes = append(notes, "default "+d)
		}
		if len(notes) > 0 {
			fmt.Fprintf(&b, "   (%s)", strings.Join(notes, ", "))
		}
		fmt.Fprintf(&b, "\n%s\n", wrap(usage, helpWidth, "      "))
	}
	if len(h.examples) > 0 {
		b.WriteString("\nExamples:\n")
		for _, e := range h.examples {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	return b.String()
}

// wrap breaks text into lines of at most width characters (a longer word
// stays whole), each starting with indent. A line break in text is a
// space, unless the next line starts with spaces: that line is an item of
// a list, kept on a line of its own with its spaces, and its own wrapped
// lines hang under it.
func wrap(text string, width int, indent string) string {
	var paras []string
	for i, l := range strings.Split(text, "\n") {
		if i > 0 && !strings.HasPrefix(l, " ") {
			paras[len(paras)-1] += " " + l
			continue
		}
		paras = append(paras, l)
	}
	var out []string
	for _, para := range paras {
		lead := indent + para[:len(para)-len(strings.TrimLeft(para, " "))]
		line, hang := lead, lead
		if lead != indent {
			hang = lead + "    "
		}
		start := len(line)
		for _, word := range strings.Fields(para) {
			if len(line) > start && len([]rune(line))+1+len([]rune(word)) > width {
				out = append(out, line)
				line, start = hang, len(hang)
			}
			if len(line) > start {
				line += " "
			}
			line += word
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}
