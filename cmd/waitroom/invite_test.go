package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/invite"
)

// runInvite runs `waitroom invite args...` and returns its output and error.
func runInvite(args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	err = run(context.Background(), append([]string{"invite"}, args...), env(nil), &out, &errOut)
	return out.String(), errOut.String(), err
}

// keygenForTest runs keygen and returns its whole output, the private and
// the public key.
func keygenForTest(t *testing.T) (output, priv, pub string) {
	t.Helper()
	out, errOut, err := runInvite("keygen")
	if err != nil {
		t.Fatalf("invite keygen: %v; stderr:\n%s", err, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("invite keygen printed %d lines, want 2:\n%s", len(lines), out)
	}
	priv, ok1 := strings.CutPrefix(lines[0], "private: ")
	pub, ok2 := strings.CutPrefix(lines[1], "public: ")
	if !ok1 || !ok2 {
		t.Fatalf("invite keygen printed\n%s\nwant \"private: ...\" then \"public: ...\"", out)
	}
	return out, priv, pub
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInviteKeygenMintVerify(t *testing.T) {
	out, priv, pub := keygenForTest(t)
	pubKey, err := invite.ParsePublicKey(pub)
	if err != nil {
		t.Fatalf("the printed public key: %v", err)
	}
	privKey, err := invite.ParsePrivateKey(priv)
	if err != nil {
		t.Fatalf("the printed private key: %v", err)
	}
	if !privKey.Public().(ed25519.PublicKey).Equal(pubKey) {
		t.Fatal("the printed keys are not one pair")
	}

	// keygen's output as it is, and the bare seed, both serve as the key file.
	for _, keyFile := range []string{writeFile(t, "keygen.txt", out), writeFile(t, "seed", priv+"\n")} {
		start := time.Now()
		toks, errOut, err := runInvite("mint", "-private-key-file", keyFile, "-room", "drop",
			"-tier", "vip", "-key", "alice@example.com", "-uses", "5", "-ttl", "2h", "-count", "3")
		if err != nil {
			t.Fatalf("invite mint: %v; stderr:\n%s", err, errOut)
		}
		lines := strings.Split(strings.TrimSuffix(toks, "\n"), "\n")
		if len(lines) != 3 {
			t.Fatalf("invite mint -count 3 printed %d lines, want 3:\n%s", len(lines), toks)
		}
		ids := map[string]bool{}
		for _, tok := range lines {
			c, err := invite.Verify(tok, "drop", time.Now(), nil, []ed25519.PublicKey{pubKey})
			if err != nil {
				t.Fatalf("Verify(%q) with the printed public key: %v", tok, err)
			}
			if c.Room != "drop" || c.Tier != "vip" || c.Key != "alice@example.com" || c.Uses != 5 {
				t.Errorf("claims %+v, want room drop, tier vip, key alice@example.com, 5 uses", c)
			}
			if lo, hi := start.Add(2*time.Hour-time.Second), time.Now().Add(2*time.Hour); c.Expires.Before(lo) || c.Expires.After(hi) {
				t.Errorf("expiry %v, want 2h from now (%v to %v)", c.Expires, lo, hi)
			}
			if ids[c.ID] {
				t.Errorf("ID %q minted twice", c.ID)
			}
			ids[c.ID] = true
			_, err = invite.Verify(tok, "other", time.Now(), nil, []ed25519.PublicKey{pubKey})
			if code := waitroom.ErrorCode(err); code != waitroom.CodeInviteWrongRoom {
				t.Errorf("Verify for another room: %v, want %s", err, waitroom.CodeInviteWrongRoom)
			}
		}
	}
}

func TestInviteMintDefaultsAndLinks(t *testing.T) {
	_, priv, pub := keygenForTest(t)
	pubKey, err := invite.ParsePublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := writeFile(t, "key", priv)
	out, errOut, err := runInvite("mint", "-private-key-file", keyFile, "-room", "drop", "-base-url", "https://queue.example.com/")
	if err != nil {
		t.Fatalf("invite mint: %v; stderr:\n%s", err, errOut)
	}
	link := strings.TrimSuffix(out, "\n")
	tok, ok := strings.CutPrefix(link, "https://queue.example.com/r/drop#invite=")
	if !ok || strings.Contains(link, "\n") {
		t.Fatalf("invite mint -base-url printed %q, want one link https://queue.example.com/r/drop#invite=TOKEN", out)
	}
	c, err := invite.Verify(tok, "drop", time.Now(), nil, []ed25519.PublicKey{pubKey})
	if err != nil {
		t.Fatalf("Verify of the link's token: %v", err)
	}
	if c.Uses != 1 || c.Tier != "" || c.Key != "" {
		t.Errorf("claims %+v, want 1 use, no tier, no key", c)
	}
	if d := time.Until(c.Expires); d < 23*time.Hour || d > 24*time.Hour {
		t.Errorf("expires in %v, want the default 24h", d)
	}
	// The default is valid for a day and no longer.
	_, err = invite.Verify(tok, "drop", time.Now().Add(24*time.Hour+time.Second), nil, []ed25519.PublicKey{pubKey})
	if code := waitroom.ErrorCode(err); code != waitroom.CodeInviteExpired {
		t.Errorf("Verify a day later: %v, want %s", err, waitroom.CodeInviteExpired)
	}
}

func TestInviteUsageErrors(t *testing.T) {
	_, priv, _ := keygenForTest(t)
	keyFile := writeFile(t, "key", priv)
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no subcommand", nil, "no subcommand given"},
		{"unknown subcommand", []string{"burn"}, `unknown subcommand "burn"`},
		{"keygen argument", []string{"keygen", "extra"}, `unexpected argument "extra"`},
		{"no key file", []string{"mint", "-room", "drop"}, "-private-key-file is required"},
		{"no room", []string{"mint", "-private-key-file", keyFile}, "-room is required"},
		{"bad room", []string{"mint", "-private-key-file", keyFile, "-room", "Drop!"}, "not a room name"},
		{"zero uses", []string{"mint", "-private-key-file", keyFile, "-room", "drop", "-uses", "0"}, "-uses is 0"},
		{"negative ttl", []string{"mint", "-private-key-file", keyFile, "-room", "drop", "-ttl", "-1h"}, "-ttl is -1h0m0s"},
		{"zero count", []string{"mint", "-private-key-file", keyFile, "-room", "drop", "-count", "0"}, "-count is 0"},
		{"bad base URL", []string{"mint", "-private-key-file", keyFile, "-room", "drop", "-base-url", "queue.example.com"}, "-base-url"},
		{"bad key", []string{"mint", "-private-key-file", keyFile, "-room", "drop", "-key", "a\tb"}, "key must be"},
		{"unknown flag", []string{"mint", "-rooom", "drop"}, "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runInvite(tc.args...)
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Fatalf("invite %q: error %v, want a usage error", tc.args, err)
			}
			if code := exitCode(err, &bytes.Buffer{}); code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr does not say %q:\n%s", tc.want, errOut)
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing", out)
			}
		})
	}
}

func TestInviteMintKeyFileErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	bad := writeFile(t, "bad", "private: not-a-key\n")
	for _, path := range []string{missing, bad} {
		out, _, err := runInvite("mint", "-private-key-file", path, "-room", "drop")
		if err == nil {
			t.Fatalf("invite mint with key file %s succeeded: %s", path, out)
		}
		var ue *usageError
		if errors.As(err, &ue) {
			t.Errorf("key file %s: usage error %v, want an error exiting 1", path, err)
		}
		if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "private key") {
			t.Errorf("error %q does not say which file", err)
		}
		if out != "" {
			t.Errorf("stdout = %q, want nothing", out)
		}
	}
}

func TestInviteInUsage(t *testing.T) {
	if !strings.Contains(usageText, "\tinvite ") {
		t.Error("the usage text does not list the invite command")
	}
	_, errOut, err := runInvite("-h")
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(errOut, "waitroom invite keygen") {
		t.Errorf("invite -h: %v\n%s", err, errOut)
	}
}
