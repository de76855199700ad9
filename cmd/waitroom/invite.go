package main

import (
	"bufio"
	"crypto/ed25519"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/invite"
)

const inviteUsage = `Usage: waitroom invite keygen | mint [flags]

Makes invite keys and mints signed invite tokens offline, without asking the
server: a room whose invite_keys hold the public key admits the holders of
tokens signed with the private one.

Commands:
  keygen
      print a new Ed25519 key pair: the public key for the room's
      invite_keys, the private key for mint (keep it secret)
  mint
      sign invite tokens with the private key; see waitroom invite mint -h

Examples:
  waitroom invite keygen > invite.key
  waitroom invite mint --private-key-file invite.key --room drop --count 100
`

// maxMintCount bounds -count: more invites than this at once is more likely
// a typo than a need.
const maxMintCount = 1_000_000

// inviteCommand dispatches "waitroom invite keygen" and "waitroom invite mint".
func inviteCommand(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "waitroom invite: no subcommand given (keygen or mint)\nsee `waitroom invite -h`\n")
		return &usageError{"invite: no subcommand given"}
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "keygen":
		return inviteKeygen(rest, stdout, stderr)
	case "mint":
		return inviteMint(rest, time.Now(), stdout, stderr)
	case "help", "-h", "-help", "--help":
		// Printed where -h prints (stderr); "waitroom help invite" passes
		// stdout as both.
		fmt.Fprint(stderr, inviteUsage)
		return flag.ErrHelp
	default:
		fmt.Fprintf(stderr, "waitroom invite: unknown subcommand %q (keygen or mint)\nsee `waitroom invite -h`\n", sub)
		return &usageError{fmt.Sprintf("invite: unknown subcommand %q", sub)}
	}
}

// inviteKeygen prints a fresh key pair: the private seed and the public
// key, one "name: value" line each, so a script can pick either out.
func inviteKeygen(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("invite keygen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setHelp(fs, helpText{
		usage: "waitroom invite keygen",
		about: "Prints a new Ed25519 key pair for invites signed outside the server, one \"name: value\" " +
			"line each: \"private: <base64 seed>\", for waitroom invite mint --private-key-file or your own " +
			"code, and \"public: <base64 key>\", for the room's invite_keys configuration. The output can " +
			"be saved as the private key file as it is.",
		examples: []string{"waitroom invite keygen > invite.key"},
	})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return fmt.Errorf("generate key: %w", err)
	}
	fmt.Fprintf(stdout, "private: %s\n", invite.FormatPrivateKey(priv))
	fmt.Fprintf(stdout, "public: %s\n", invite.FormatPublicKey(pub))
	return nil
}

// inviteMint prints -count tokens (or links) signed with the key in
// -private-key-file, each with its own ID and expiring -ttl after now.
func inviteMint(args []string, now time.Time, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("invite mint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyFile := fs.String("private-key-file", "", "`file` holding the Ed25519 private key: the output of \"waitroom invite keygen\", or the base64 of the seed or the 64-byte key (required)")
	room := fs.String("room", "", "the `room` the invites admit to (required)")
	tier := fs.String("tier", "", "the priority `tier` the holders join in")
	key := fs.String("key", "", "the identity `key` the holders join under")
	uses := fs.Int("uses", 1, fmt.Sprintf("how many `joins` each invite allows, 1 to %d", invite.MaxUses))
	ttl := fs.Duration("ttl", 24*time.Hour, "how long the invites stay valid")
	count := fs.Int("count", 1, "how many `invites` to mint, each with its own ID")
	baseURL := fs.String("base-url", "", "print links `URL`/r/ROOM#invite=TOKEN instead of bare tokens; URL is the server's public address")
	setHelp(fs, helpText{
		usage: "waitroom invite mint --private-key-file FILE --room ROOM [flags]",
		about: "Signs invite tokens with an Ed25519 private key whose public half is in the room's " +
			"invite_keys, and prints one per line (or one link per line with --base-url). The server is " +
			"not asked: the tokens are checked when someone joins with one.",
		examples: []string{
			"waitroom invite mint --private-key-file invite.key --room drop --count 100 --ttl 48h",
			"waitroom invite mint --private-key-file invite.key --room drop --tier vip --base-url https://queue.example.com",
		},
	})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *keyFile == "":
		return badUsage(fs, "-private-key-file is required")
	case *room == "":
		return badUsage(fs, "-room is required")
	case !waitroom.ValidRoomName(*room):
		return badUsage(fs, "-room %q is not a room name: 1 to 64 characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit", *room)
	case *uses < 1 || *uses > invite.MaxUses:
		return badUsage(fs, "-uses is %d, want 1 to %d", *uses, invite.MaxUses)
	case *ttl <= 0:
		return badUsage(fs, "-ttl is %s, want a positive duration such as 24h", *ttl)
	case *count < 1 || *count > maxMintCount:
		return badUsage(fs, "-count is %d, want 1 to %d", *count, maxMintCount)
	}
	base := ""
	if *baseURL != "" {
		u, err := url.Parse(*baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return badUsage(fs, "-base-url %q is not an http or https URL without query or fragment", *baseURL)
		}
		base = strings.TrimRight(*baseURL, "/")
	}
	priv, err := readPrivateKeyFile(*keyFile)
	if err != nil {
		return err
	}

	c := invite.Claims{Room: *room, Tier: *tier, Key: *key, Uses: *uses, Expires: now.Add(*ttl)}
	w := bufio.NewWriter(stdout)
	for i := 0; i < *count; i++ {
		c.ID = invite.NewID()
		tok, err := invite.SignEd25519(c, priv)
		if err != nil {
			if waitroom.ErrorCode(err) == waitroom.CodeInvalidRequest {
				// The claims come from the flags: a tier or key that
				// breaks the format's rules.
				return badUsage(fs, "%s", waitroom.ErrorMessage(err))
			}
			return fmt.Errorf("mint invite: %w", err)
		}
		if base != "" {
			fmt.Fprintf(w, "%s/r/%s#invite=%s\n", base, *room, tok)
		} else {
			fmt.Fprintln(w, tok)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write invites: %w", err)
	}
	return nil
}

// readPrivateKeyFile reads an Ed25519 private key: either the whole file
// is the key's base64, or the file is keygen's output and its "private:"
// line holds it.
func readPrivateKeyFile(path string) (ed25519.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read private key: %w", err)
	}
	s := strings.TrimSpace(string(data))
	for line := range strings.Lines(s) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "private:"); ok {
			s = v
			break
		}
	}
	priv, err := invite.ParsePrivateKey(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return priv, nil
}
