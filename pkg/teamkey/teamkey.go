// Package teamkey holds the rules of team API keys: their format, how they
// are made and hashed, how a presented key is checked against a stored
// hash, and which team names and key ids are valid. It uses the standard
// library only, so that small tools (scripts/newkey) can make keys without
// pulling in the gateway.
//
// A key is [Prefix] followed by 32 random bytes in unpadded base64url. The
// config holds only its SHA-256, as 64 lowercase hex digits ([Hash]).
package teamkey

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
)

// Prefix starts every team key, so leaked keys are easy to recognise
// (secret scanners) and to tell from provider keys.
const Prefix = "llmgw_"

// Size is the size of a key hash in bytes.
const Size = sha256.Size

// Anonymous is the reserved team name of unauthenticated usage; no team
// may be called that.
const Anonymous = "anonymous"

// randomBytes is how many random bytes a key carries.
const randomBytes = 32

// New returns a new key and its hash in hex, as the config holds it.
func New() (key, sha256Hex string, err error) {
	var b [randomBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	key = Prefix + base64.RawURLEncoding.EncodeToString(b[:])
	return key, Hash(key), nil
}

// Sum returns the SHA-256 of a key.
func Sum(key string) [Size]byte { return sha256.Sum256([]byte(key)) }

// Hash returns the lowercase hex SHA-256 of a key, as the config holds it.
func Hash(key string) string {
	s := Sum(key)
	return hex.EncodeToString(s[:])
}

// ParseHash decodes a stored hash: 64 hex digits, either case, surrounding
// space ignored. The error never repeats the value, which may be a key
// pasted by mistake.
func ParseHash(sha256Hex string) ([Size]byte, error) {
	var sum [Size]byte
	b, err := hex.DecodeString(strings.TrimSpace(sha256Hex))
	if err != nil || len(b) != Size {
		return sum, errors.New("not 64 hex digits")
	}
	copy(sum[:], b)
	return sum, nil
}

// Equal compares two hashes in constant time.
func Equal(a, b [Size]byte) bool { return subtle.ConstantTimeCompare(a[:], b[:]) == 1 }

// Verify reports whether key hashes to stored, in constant time: how much
// of a wrong key matched is not observable.
func Verify(key string, stored [Size]byte) bool { return Equal(Sum(key), stored) }

// LooksLikeKey reports whether s contains a team key (its prefix), so that
// callers can keep it out of logs and error messages.
func LooksLikeKey(s string) bool { return strings.Contains(s, Prefix) }

// ValidName reports whether s is a valid team name or key id: 1-64 ASCII
// letters, digits, '-', '_' or '.', so it can be written in YAML as it is.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// NameRule describes the rule of ValidName, for error messages.
const NameRule = "1-64 letters, digits, '-', '_' or '.'"

// CheckTeam returns an error naming the problem when name cannot be a
// configured team: the rule of ValidName, and not [Anonymous].
func CheckTeam(name string) error {
	if !ValidName(name) {
		return errors.New("team name " + strconv.Quote(name) + " must be " + NameRule)
	}
	if name == Anonymous {
		return errors.New(strconv.Quote(name) + " is reserved for unauthenticated usage")
	}
	return nil
}

// CheckID returns an error naming the problem when id cannot be a key id.
func CheckID(id string) error {
	if !ValidName(id) {
		return errors.New("key id " + strconv.Quote(id) + " must be " + NameRule)
	}
	return nil
}
