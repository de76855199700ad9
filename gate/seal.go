package gate

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
)

// A pass carries its session id sealed: encrypted and authenticated
// (AES-256-GCM) under a key derived from the private half of the key that
// signs the pass (the Ed25519 seed, or the HS256 secret). So the waitroom
// processes that share the key folder read it, and an app, a log or a
// downstream service that sees the pass does not: with the public keys
// (the JWKS) the seal is opaque bytes. The session id is what owns a
// session (reads it, leaves it, mints its passes), so it is never the
// pass's subject; the subject is the session's ticket, which is public.

// sealInfo labels the derived key, so it is never the signing key itself
// nor a key any other use of the same secret derives.
const sealInfo = "waitroom pass session seal v1"

// maxSealLen bounds the seal claim: nonce, a session id, tag, in base64.
const maxSealLen = 128

// sealer is one key's session seal.
type sealer struct{ aead cipher.AEAD }

// newSealer derives the seal of a key from its private material.
func newSealer(secret []byte) (*sealer, error) {
	k, err := hkdf.Key(sha256.New, secret, nil, sealInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("gate: deriving the session seal: %w", err)
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, fmt.Errorf("gate: session seal: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("gate: session seal: %w", err)
	}
	return &sealer{aead: aead}, nil
}

// sealAAD binds a seal to the pass's room and ticket, so a seal cannot be
// read as another session's.
func sealAAD(room string, ticket int64) []byte {
	return []byte("waitroom-pass\x00" + room + "\x00" + strconv.FormatInt(ticket, 10))
}

// seal returns id sealed for room and ticket, in base64url.
func (s *sealer) seal(id, room string, ticket int64) string {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(id)+s.aead.Overhead())
	// crypto/rand.Read never returns an error; it crashes the program
	// irrecoverably instead when the system's randomness fails.
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(id), sealAAD(room, ticket)))
}

// errSeal is any seal that does not open.
var errSeal = errors.New("the session seal does not open")

// open returns the session id of sealed, made by seal for room and ticket.
func (s *sealer) open(sealed, room string, ticket int64) (string, error) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(sealed)
	if err != nil || len(b) < s.aead.NonceSize()+s.aead.Overhead() {
		return "", errSeal
	}
	n := s.aead.NonceSize()
	id, err := s.aead.Open(nil, b[:n], b[n:], sealAAD(room, ticket))
	if err != nil {
		return "", errSeal
	}
	return string(id), nil
}
