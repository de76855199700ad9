package invite

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// ParsePublicKey decodes an Ed25519 public key written as base64 (standard
// or URL alphabet, with or without padding) of its 32 raw bytes, as a
// room's invite_keys holds it. Surrounding white space is ignored.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	b, err := decodeKey(s)
	if err != nil {
		return nil, fmt.Errorf("invite public key: %w", err)
	}
	if len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("invite public key: an Ed25519 public key is %d bytes, this one is %d", ed25519.PublicKeySize, len(b))
	}
	return ed25519.PublicKey(b), nil
}

// FormatPublicKey returns k in standard base64 with padding, the form
// ParsePublicKey reads.
func FormatPublicKey(k ed25519.PublicKey) string {
	return base64.StdEncoding.EncodeToString(k)
}

// ParsePrivateKey decodes an Ed25519 private key written as base64
// (standard or URL alphabet, with or without padding) of either its 32-byte
// seed or the 64-byte key (seed then public key, as Go and libsodium keep
// it). A 64-byte key whose public half does not belong to its seed is
// refused, since it would sign tokens that no configured key verifies.
func ParsePrivateKey(s string) (ed25519.PrivateKey, error) {
	b, err := decodeKey(s)
	if err != nil {
		return nil, fmt.Errorf("invite private key: %w", err)
	}
	switch len(b) {
	case ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(b), nil
	case ed25519.PrivateKeySize:
		k := ed25519.NewKeyFromSeed(b[:ed25519.SeedSize])
		if !bytes.Equal(k, b) {
			return nil, errors.New("invite private key: the public half of the 64-byte key does not belong to its seed")
		}
		return k, nil
	}
	return nil, fmt.Errorf("invite private key: an Ed25519 private key is a %d-byte seed or a %d-byte key, this one is %d bytes",
		ed25519.SeedSize, ed25519.PrivateKeySize, len(b))
}

// FormatPrivateKey returns the standard base64 of k's 32-byte seed, the
// form ParsePrivateKey reads. k must be a whole 64-byte private key.
func FormatPrivateKey(k ed25519.PrivateKey) string {
	return base64.StdEncoding.EncodeToString(k.Seed())
}

// decodeKey decodes base64 in either alphabet, with or without padding.
func decodeKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("the key is empty")
	}
	// Map the URL alphabet onto the standard one and drop padding, so one
	// strict decoder reads all four spellings.
	norm := strings.NewReplacer("-", "+", "_", "/").Replace(strings.TrimRight(s, "="))
	b, err := base64.RawStdEncoding.Strict().DecodeString(norm)
	if err != nil {
		return nil, errors.New("the key is not base64")
	}
	return b, nil
}
