// Package keys holds provider credentials as the gateway handles them: a
// Key carries the secret and a fingerprint that stands in for it in logs,
// storage and health reports, and a Pool picks which key to use.
package keys

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
)

// Key is one provider credential.
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

// New returns a Key for a secret.
func New(secret string, priority int) Key {
	return Key{Secret: secret, Fingerprint: Fingerprint(secret), Priority: priority}
}

// String hides the secret when a Key is printed by mistake.
func (k Key) String() string { return k.Fingerprint }

// LogValue hides the secret when a Key is logged by mistake.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.Fingerprint) }

// GoString hides the secret from %#v.
func (k Key) GoString() string { return "keys.Key{" + k.Fingerprint + "}" }
