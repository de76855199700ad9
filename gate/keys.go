package gate

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/golang-jwt/jwt/v5"
)

// The signing algorithms a KeySet may use.
const (
	// AlgEdDSA signs passes with Ed25519 keys; anyone with the public keys
	// (the JWKS) can verify them. It is the default.
	AlgEdDSA = "EdDSA"
	// AlgHS256 signs passes with a shared secret; only holders of the
	// secret can verify them, and the JWKS stays empty.
	AlgHS256 = "HS256"
)

// Key file names in a key folder: ed25519-<kid>.pem (PKCS #8 PEM) and
// hs256-<kid>.key (raw secret, base64url).
const (
	edPrefix   = "ed25519-"
	edSuffix   = ".pem"
	hmacPrefix = "hs256-"
	hmacSuffix = ".key"
)

// key is one signing key.
type key struct {
	kid  string
	priv ed25519.PrivateKey // EdDSA
	pub  ed25519.PublicKey  // EdDSA
	hmac []byte             // HS256
	// seal seals and opens the session ids of the passes this key signs;
	// nil for a key without its private half (a JWKS's).
	seal *sealer
}

// KeySet holds the keys that sign and verify passes, all of one algorithm.
// The newest key signs; every key verifies, so passes signed before a
// rotation stay valid until they expire. It is safe for concurrent use.
type KeySet struct {
	alg string

	mu      sync.RWMutex
	signing *key
	byKID   map[string]*key
	jwks    []byte
}

// NewKeySet returns a set of one fresh in-memory key for alg (AlgEdDSA or
// AlgHS256), for tests and for servers whose passes need not survive a
// restart.
func NewKeySet(alg string) (*KeySet, error) {
	k, err := generate(alg)
	if err != nil {
		return nil, err
	}
	ks := &KeySet{alg: alg}
	ks.add(k, true)
	return ks, nil
}

// NewHMACKeySet returns a set that signs HS256 passes with secret (at least
// 32 bytes). Its key id is derived from the secret by a one-way hash.
func NewHMACKeySet(secret []byte) (*KeySet, error) {
	if len(secret) < 32 {
		return nil, fmt.Errorf("gate: an HS256 secret must be at least 32 bytes, got %d", len(secret))
	}
	ks := &KeySet{alg: AlgHS256}
	ks.add(&key{kid: hmacKID(secret), hmac: slices.Clone(secret)}, true)
	return ks, nil
}

// NewEd25519KeySet returns a set of the given private keys; the first one
// signs.
func NewEd25519KeySet(keys ...ed25519.PrivateKey) (*KeySet, error) {
	if len(keys) == 0 {
		return nil, errors.New("gate: no keys")
	}
	ks := &KeySet{alg: AlgEdDSA}
	for i, p := range keys {
		if len(p) != ed25519.PrivateKeySize {
			return nil, fmt.Errorf("gate: key %d is not an Ed25519 private key", i)
		}
		pub := p.Public().(ed25519.PublicKey)
		ks.add(&key{kid: edKID(pub), priv: p, pub: pub}, i == 0)
	}
	return ks, nil
}

// LoadKeys reads the keys of alg from dir, creating dir (mode 0700) and a
// first key (mode 0600) when it holds none. The most recently written key
// signs; the others still verify. To rotate, call RotateKey and restart (or
// load again); delete an old key file once the longest pass lifetime has
// passed since the rotation.
func LoadKeys(dir, alg string) (*KeySet, error) {
	if alg == "" {
		alg = AlgEdDSA
	}
	if alg != AlgEdDSA && alg != AlgHS256 {
		return nil, fmt.Errorf("gate: unknown pass algorithm %q (want %s or %s)", alg, AlgEdDSA, AlgHS256)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("gate: creating key folder: %w", err)
	}
	ks, err := readKeys(dir, alg)
	if err != nil {
		return nil, err
	}
	if ks != nil {
		return ks, nil
	}
	if _, err := RotateKey(dir, alg); err != nil {
		return nil, err
	}
	ks, err = readKeys(dir, alg)
	if err == nil && ks == nil {
		err = fmt.Errorf("gate: no key in %s after creating one", dir)
	}
	return ks, err
}

// RotateKey writes a new key of alg into dir and returns its id. Keys
// loaded after this sign with it.
func RotateKey(dir, alg string) (kid string, err error) {
	if alg == "" {
		alg = AlgEdDSA
	}
	k, err := generate(alg)
	if err != nil {
		return "", err
	}
	var name string
	var data []byte
	switch alg {
	case AlgEdDSA:
		der, err := x509.MarshalPKCS8PrivateKey(k.priv)
		if err != nil {
			return "", fmt.Errorf("gate: encoding key: %w", err)
		}
		name = edPrefix + k.kid + edSuffix
		data = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	default:
		name = hmacPrefix + k.kid + hmacSuffix
		data = []byte(base64.RawURLEncoding.EncodeToString(k.hmac) + "\n")
	}
	// Write then rename, so a crash never leaves a half-written key that
	// would stop the next start.
	tmp, err := os.CreateTemp(dir, ".key-*")
	if err != nil {
		return "", fmt.Errorf("gate: writing key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("gate: writing key: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", fmt.Errorf("gate: writing key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("gate: writing key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("gate: writing key: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return "", fmt.Errorf("gate: writing key: %w", err)
	}
	return k.kid, nil
}

// readKeys loads every key of alg in dir; nil when there is none.
func readKeys(dir, alg string) (*KeySet, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("gate: reading key folder: %w", err)
	}
	type found struct {
		k   *key
		mod int64
	}
	var keys []found
	for _, e := range entries {
		name := e.Name()
		var k *key
		switch {
		case alg == AlgEdDSA && strings.HasPrefix(name, edPrefix) && strings.HasSuffix(name, edSuffix):
			k, err = readEdKey(filepath.Join(dir, name))
		case alg == AlgHS256 && strings.HasPrefix(name, hmacPrefix) && strings.HasSuffix(name, hmacSuffix):
			k, err = readHMACKey(filepath.Join(dir, name))
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("gate: reading key %s: %w", name, err)
		}
		keys = append(keys, found{k, info.ModTime().UnixNano()})
	}
	if len(keys) == 0 {
		return nil, nil
	}
	// Newest first; the kid breaks ties so every process picks the same.
	slices.SortFunc(keys, func(a, b found) int {
		if a.mod != b.mod {
			if a.mod > b.mod {
				return -1
			}
			return 1
		}
		return strings.Compare(a.k.kid, b.k.kid)
	})
	ks := &KeySet{alg: alg}
	for i, f := range keys {
		ks.add(f.k, i == 0)
	}
	return ks, nil
}

func readEdKey(path string) (*key, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gate: reading key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("gate: key %s is not PEM", path)
	}
	p, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("gate: key %s: %w", path, err)
	}
	priv, ok := p.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("gate: key %s is not an Ed25519 key", path)
	}
	pub := priv.Public().(ed25519.PublicKey)
	return &key{kid: edKID(pub), priv: priv, pub: pub}, nil
}

func readHMACKey(path string) (*key, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gate: reading key: %w", err)
	}
	secret, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(secret) < 32 {
		return nil, fmt.Errorf("gate: key %s is not a base64url secret of at least 32 bytes", path)
	}
	return &key{kid: hmacKID(secret), hmac: secret}, nil
}

func generate(alg string) (*key, error) {
	switch alg {
	case AlgEdDSA:
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("gate: generating key: %w", err)
		}
		return &key{kid: edKID(pub), priv: priv, pub: pub}, nil
	case AlgHS256:
		secret := make([]byte, 32)
		_, _ = rand.Read(secret)
		return &key{kid: hmacKID(secret), hmac: secret}, nil
	}
	return nil, fmt.Errorf("gate: unknown pass algorithm %q (want %s or %s)", alg, AlgEdDSA, AlgHS256)
}

// edKID is a key's id: the start of its public key's SHA-256, so every
// process that reads the same key names it the same.
func edKID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// hmacKID names a secret without revealing it: a hash of a hash, with a
// label, so the kid cannot be used to test guesses of other values.
func hmacKID(secret []byte) string {
	sum := sha256.Sum256(append([]byte("waitroom-kid:"), secret...))
	sum = sha256.Sum256(sum[:])
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

func (ks *KeySet) add(k *key, signing bool) {
	if k.seal == nil {
		secret := k.hmac
		if k.priv != nil {
			secret = k.priv.Seed()
		}
		if secret != nil {
			// Derivation from 32 bytes of key cannot fail: a failure would
			// be a broken crypto library, and a key without its seal
			// signs no pass (sign refuses it).
			k.seal, _ = newSealer(secret)
		}
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.byKID == nil {
		ks.byKID = map[string]*key{}
	}
	ks.byKID[k.kid] = k
	if signing || ks.signing == nil {
		ks.signing = k
	}
	ks.jwks = nil
}

// Alg returns the set's algorithm, AlgEdDSA or AlgHS256.
func (ks *KeySet) Alg() string { return ks.alg }

// SigningKID returns the id of the key that signs new passes.
func (ks *KeySet) SigningKID() string {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	if ks.signing == nil {
		return ""
	}
	return ks.signing.kid
}

// Add adds a verifying key to an EdDSA set (for example a public key of
// another server); with signing it also becomes the signing key, which
// needs the private half.
func (ks *KeySet) Add(priv ed25519.PrivateKey, signing bool) error {
	if ks.alg != AlgEdDSA || len(priv) != ed25519.PrivateKeySize {
		return errors.New("gate: Add takes an Ed25519 private key for an EdDSA key set")
	}
	pub := priv.Public().(ed25519.PublicKey)
	ks.add(&key{kid: edKID(pub), priv: priv, pub: pub}, signing)
	return nil
}

// signingKey returns the key that signs, with its seal.
func (ks *KeySet) signingKey() (*key, error) {
	ks.mu.RLock()
	k := ks.signing
	ks.mu.RUnlock()
	if k == nil || (k.priv == nil && k.hmac == nil) || k.seal == nil {
		return nil, errors.New("gate: the key set has no signing key")
	}
	return k, nil
}

// sealerOf returns the seal of key kid; nil when the set does not hold
// its private half (a JWKS's public keys).
func (ks *KeySet) sealerOf(kid string) *sealer {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	if k := ks.byKID[kid]; k != nil {
		return k.seal
	}
	return nil
}

// sign signs claims with key k of the set.
func (ks *KeySet) sign(k *key, claims jwt.Claims) (string, error) {
	var t *jwt.Token
	var signKey any
	if ks.alg == AlgEdDSA {
		t = jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
		signKey = k.priv
	} else {
		t = jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
		signKey = k.hmac
	}
	t.Header["kid"] = k.kid
	s, err := t.SignedString(signKey)
	if err != nil {
		return "", fmt.Errorf("gate: signing pass: %w", err)
	}
	return s, nil
}

// keyfunc returns the verifying key a token names, typed for the set's
// algorithm only: an HS256 token can never be checked against a public key
// (the classic algorithm confusion), because jwt.WithValidMethods refuses
// it first and the key type would not match anyway.
func (ks *KeySet) keyfunc(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	ks.mu.RLock()
	k := ks.byKID[kid]
	ks.mu.RUnlock()
	if k == nil {
		return nil, fmt.Errorf("unknown key id %q", kid)
	}
	if ks.alg == AlgEdDSA {
		return k.pub, nil
	}
	return k.hmac, nil
}

// JWKS returns the public keys as a JSON Web Key Set. An HS256 set
// publishes nothing, since its keys are secrets.
func (ks *KeySet) JWKS() []byte {
	ks.mu.RLock()
	if b := ks.jwks; b != nil {
		ks.mu.RUnlock()
		return b
	}
	ks.mu.RUnlock()
	ks.mu.Lock()
	defer ks.mu.Unlock()
	type jwk struct {
		Kty string `json:"kty"`
		Crv string `json:"crv"`
		X   string `json:"x"`
		Kid string `json:"kid"`
		Alg string `json:"alg"`
		Use string `json:"use"`
	}
	set := struct {
		Keys []jwk `json:"keys"`
	}{Keys: []jwk{}}
	if ks.alg == AlgEdDSA {
		kids := make([]string, 0, len(ks.byKID))
		for kid := range ks.byKID {
			kids = append(kids, kid)
		}
		slices.Sort(kids)
		for _, kid := range kids {
			k := ks.byKID[kid]
			set.Keys = append(set.Keys, jwk{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(k.pub), Kid: kid, Alg: AlgEdDSA, Use: "sig"})
		}
	}
	b, _ := json.Marshal(set)
	ks.jwks = b
	return b
}

// ServeHTTP serves the JWKS (GET /.well-known/jwks.json).
func (ks *KeySet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/jwk-set+json")
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(ks.JWKS())
}

// parseJWKS reads the Ed25519 keys of a JSON Web Key Set, for verifiers
// that fetch the set from a server. Keys of other types are skipped.
func parseJWKS(b []byte) (*KeySet, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("gate: reading JWKS: %w", err)
	}
	ks := &KeySet{alg: AlgEdDSA, byKID: map[string]*key{}}
	for _, k := range set.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" || k.Kid == "" {
			continue
		}
		pub, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			continue
		}
		ks.byKID[k.Kid] = &key{kid: k.Kid, pub: ed25519.PublicKey(pub)}
	}
	if len(ks.byKID) == 0 {
		return nil, errors.New("gate: the JWKS holds no Ed25519 key")
	}
	return ks, nil
}
