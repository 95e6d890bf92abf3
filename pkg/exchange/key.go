package exchange

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
)

// Key is one provider credential, as an attempt carries it to an adapter
// (provider.Call.Key). It lives here, beside the request, so that the
// egress seam and the adapters need nothing from the key ledger, and the
// ledger nothing from them; pkg/keyledger hands these out (keyledger.Key
// is this type).
type Key struct {
	// Secret is the credential itself. It is sent upstream and nowhere else.
	Secret string
	// Fingerprint identifies the key anywhere it must be named.
	Fingerprint string
	// Priority orders keys of one provider: lower first.
	Priority int
}

// Fingerprint returns the stable, non-reversible name of a secret: "k-"
// and the first 12 hex digits of its SHA-256.
func Fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "k-" + hex.EncodeToString(sum[:6])
}

// NewKey returns a Key for a secret.
func NewKey(secret string, priority int) Key {
	return Key{Secret: secret, Fingerprint: Fingerprint(secret), Priority: priority}
}

// String hides the secret when a Key is printed by mistake.
func (k Key) String() string { return k.Fingerprint }

// LogValue hides the secret when a Key is logged by mistake.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.Fingerprint) }

// GoString hides the secret from %#v.
func (k Key) GoString() string { return "exchange.Key{" + k.Fingerprint + "}" }
