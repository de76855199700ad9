package gate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// Verifier checks passes offline, for apps that do not hold a Gate: with
// a key set, or with the public keys fetched from a waitroom server's
// JWKS. It knows nothing of revocation beyond the pass's short life; for
// revocation within a second use a Gate (or the proxy or forward-auth). It
// is safe for concurrent use.
type Verifier struct {
	issuer string

	mu      sync.Mutex
	keys    *KeySet
	url     string
	client  *http.Client
	fetched time.Time
	tried   time.Time
}

// JWKS refresh periods of a Verifier made with NewJWKSVerifier.
const (
	jwksRefresh  = 10 * time.Minute
	jwksMinRetry = 30 * time.Second
	maxJWKSBytes = 1 << 20
)

// NewVerifier returns a Verifier that checks passes with keys.
func NewVerifier(keys *KeySet, issuer string) *Verifier {
	if issuer == "" {
		issuer = DefaultIssuer
	}
	return &Verifier{issuer: issuer, keys: keys}
}

// NewJWKSVerifier returns a Verifier that checks EdDSA passes with the
// keys published at jwksURL (a waitroom server's /.well-known/jwks.json).
// It fetches them now, refreshes them every ten minutes, and at most
// every 30 seconds when a pass names a key it does not know (a rotation).
// client nil means http.DefaultClient.
func NewJWKSVerifier(ctx context.Context, jwksURL, issuer string, client *http.Client) (*Verifier, error) {
	if client == nil {
		// Fetches happen while verifications wait: never without a bound.
		client = &http.Client{Timeout: 10 * time.Second}
	}
	if issuer == "" {
		issuer = DefaultIssuer
	}
	v := &Verifier{issuer: issuer, url: jwksURL, client: client}
	if err := v.fetch(ctx, time.Now()); err != nil {
		return nil, err
	}
	return v, nil
}

func (v *Verifier) fetch(ctx context.Context, now time.Time) error {
	v.tried = now
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.url, nil)
	if err != nil {
		return fmt.Errorf("gate: JWKS URL: %w", err)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return fmt.Errorf("gate: fetching JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("gate: fetching JWKS: %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes))
	if err != nil {
		return fmt.Errorf("gate: fetching JWKS: %w", err)
	}
	ks, err := parseJWKS(b)
	if err != nil {
		return err
	}
	v.keys, v.fetched = ks, now
	return nil
}

// keySet returns the keys, refreshed from the JWKS URL when due.
func (v *Verifier) keySet(ctx context.Context, now time.Time, unknownKID bool) *KeySet {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.url != "" && now.Sub(v.tried) >= jwksMinRetry && (unknownKID || now.Sub(v.fetched) >= jwksRefresh) {
		_ = v.fetch(ctx, now) // on failure the keys we have still serve
	}
	return v.keys
}

// Verify checks token as a pass of room at now (signature, algorithm,
// issuer, audience, expiry). With a JWKS it refetches the keys once when
// the pass names an unknown key.
func (v *Verifier) Verify(ctx context.Context, room, token string, now time.Time) (Claims, error) {
	c, err := Verify(v.keySet(ctx, now, false), v.issuer, room, token, now)
	if err != nil && v.url != "" && errors.Is(err, ErrInvalidPass) && errorsUnknownKey(err) {
		c, err = Verify(v.keySet(ctx, now, true), v.issuer, room, token, now)
	}
	return c, err
}

// errorsUnknownKey reports whether a verification failed on the key id.
func errorsUnknownKey(err error) bool {
	return err != nil && strings.Contains(err.Error(), "unknown key id")
}

// Require returns middleware that lets through only requests with a pass
// for room that verifies, and sends others to waitingURL (browsers, 303)
// or answers 401 JSON (API clients). next finds the claims with
// ClaimsFrom. It does not record activity: a Verifier has no store.
func (v *Verifier) Require(room, waitingURL string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := v.Verify(r.Context(), room, PassFromRequest(r, room), time.Now())
			if err != nil {
				w.Header().Set("Cache-Control", "no-store")
				if waitingURL != "" && !WantsJSON(r) {
					http.Redirect(w, r, waitingURL, http.StatusSeeOther)
					return
				}
				WriteError(w, http.StatusUnauthorized, waitroom.CodeUnauthorized, "No valid pass for this room.")
				return
			}
			next.ServeHTTP(w, r.WithContext(WithClaims(r.Context(), c)))
		})
	}
}
