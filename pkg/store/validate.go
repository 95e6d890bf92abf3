package store

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// Limits enforced by every backend, so that code tested on the embedded
// backend does not fail on DynamoDB.
const (
	// MaxPKBytes is the longest partition key (DynamoDB's limit).
	MaxPKBytes = 2048
	// MaxSKBytes is the longest sort key (DynamoDB's limit).
	MaxSKBytes = 1024
	// MaxAttrNameBytes is the longest numeric or string attribute name.
	MaxAttrNameBytes = 255
	// MaxItemBytes is the largest item, estimated conservatively the way
	// DynamoDB counts it (names plus values; 21 bytes per number).
	MaxItemBytes = 400 * 1024
	// MaxAbsNum bounds the magnitude of numeric values; non-zero values
	// must also be at least MinAbsNum in magnitude. Both are far inside
	// DynamoDB's number range, so they round-trip on every backend.
	MaxAbsNum = 1e30
	// MinAbsNum is the smallest magnitude of a non-zero numeric value.
	MinAbsNum = 1e-30
)

const numBytes = 21 // DynamoDB's worst case for a number

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// Validate reports whether k is a usable key: non-empty UTF-8 PK and SK
// within DynamoDB's key size limits. The error matches ErrInvalid.
func (k Key) Validate() error {
	if err := validatePK(k.PK); err != nil {
		return err
	}
	switch {
	case k.SK == "":
		return invalidf("empty sort key")
	case len(k.SK) > MaxSKBytes:
		return invalidf("sort key of %d bytes exceeds %d", len(k.SK), MaxSKBytes)
	case !utf8.ValidString(k.SK):
		return invalidf("sort key is not valid UTF-8")
	}
	return nil
}

func validatePK(pk string) error {
	switch {
	case pk == "":
		return invalidf("empty partition key")
	case len(pk) > MaxPKBytes:
		return invalidf("partition key of %d bytes exceeds %d", len(pk), MaxPKBytes)
	case !utf8.ValidString(pk):
		return invalidf("partition key is not valid UTF-8")
	}
	return nil
}

// ValidateQuery reports whether a Query's arguments are usable. The bounds
// may be empty (open); skFrom >= skTo (both set) is valid and matches nothing.
func ValidateQuery(pk, skFrom, skTo string) error {
	if err := validatePK(pk); err != nil {
		return err
	}
	if !utf8.ValidString(skFrom) || !utf8.ValidString(skTo) {
		return invalidf("query bound is not valid UTF-8")
	}
	return nil
}

func validateAttrName(name string) error {
	switch name {
	case AttrPK, AttrSK, AttrTTL, AttrVersion, AttrData:
		return invalidf("attribute name %q is reserved", name)
	}
	switch {
	case name == "":
		return invalidf("empty attribute name")
	case len(name) > MaxAttrNameBytes:
		return invalidf("attribute name of %d bytes exceeds %d", len(name), MaxAttrNameBytes)
	case !utf8.ValidString(name):
		return invalidf("attribute name is not valid UTF-8")
	}
	return nil
}

// ValidateNum reports whether v can be stored as a numeric attribute: finite
// and zero or within [MinAbsNum, MaxAbsNum] in magnitude.
func ValidateNum(name string, v float64) error {
	a := math.Abs(v)
	if math.IsNaN(v) || math.IsInf(v, 0) || a > MaxAbsNum || (a != 0 && a < MinAbsNum) {
		return invalidf("attribute %q: number %g out of range", name, v)
	}
	return nil
}

func validateExpires(t time.Time) error {
	if !t.IsZero() && t.Unix() <= 0 {
		return invalidf("expiry %s is not after the unix epoch", t.UTC().Format(time.RFC3339))
	}
	return nil
}

// Validate reports whether it can be written by Put: a valid key, valid and
// non-clashing attribute names, storable numbers and strings, an expiry
// after the epoch, and an estimated size within MaxItemBytes. The error
// matches ErrInvalid.
func (it Item) Validate() error {
	if err := it.Key.Validate(); err != nil {
		return err
	}
	if err := validateExpires(it.Expires); err != nil {
		return err
	}
	size := len(AttrPK) + len(it.Key.PK) + len(AttrSK) + len(it.Key.SK) +
		len(AttrVersion) + numBytes + len(AttrTTL) + numBytes + len(AttrData) + len(it.Data)
	for name, v := range it.Nums {
		if err := validateAttrName(name); err != nil {
			return err
		}
		if err := ValidateNum(name, v); err != nil {
			return err
		}
		size += len(name) + numBytes
	}
	for name, v := range it.Strs {
		if err := validateAttrName(name); err != nil {
			return err
		}
		if _, clash := it.Nums[name]; clash {
			return invalidf("attribute %q is both numeric and string", name)
		}
		if !utf8.ValidString(v) {
			return invalidf("attribute %q: string is not valid UTF-8", name)
		}
		size += len(name) + len(v)
	}
	if size > MaxItemBytes {
		return invalidf("item of about %d bytes exceeds %d", size, MaxItemBytes)
	}
	return nil
}

// ValidateAdd reports whether an Add's arguments are usable: a valid key,
// valid attribute names, storable deltas and maxima, an expiry after the
// epoch. The error matches ErrInvalid.
func ValidateAdd(k Key, deltas map[string]float64, opts AddOptions) error {
	if err := k.Validate(); err != nil {
		return err
	}
	if err := validateExpires(opts.Expires); err != nil {
		return err
	}
	for name, v := range deltas {
		if err := validateAttrName(name); err != nil {
			return err
		}
		if err := ValidateNum(name, v); err != nil {
			return err
		}
	}
	for name, v := range opts.Max {
		if err := validateAttrName(name); err != nil {
			return err
		}
		if err := ValidateNum(name, v); err != nil {
			return err
		}
		// The backends compare against max-delta; keep that storable too.
		if err := ValidateNum(name, v-deltas[name]); err != nil {
			return err
		}
	}
	return nil
}

// Validate reports whether c is a well-formed condition. forDelete rejects
// IfAbsent, which makes no sense for a delete.
func (c Cond) Validate(forDelete bool) error {
	switch c.Kind {
	case CondAlways:
		return nil
	case CondIfAbsent:
		if forDelete {
			return invalidf("delete with condition %s", c)
		}
		return nil
	case CondIfVersion:
		if c.Version < 1 {
			return invalidf("condition %s: versions start at 1", c)
		}
		return nil
	default:
		return invalidf("unknown condition %s", c)
	}
}

// TTL converts an expiry to the stored "ttl" value: unix seconds rounded up
// (so an item never expires early), 0 for the zero time (never expires).
// For backend implementations.
func TTL(expires time.Time) int64 {
	if expires.IsZero() {
		return 0
	}
	s := expires.Unix()
	if expires.Nanosecond() > 0 {
		s++
	}
	return s
}

// ExpiresFromTTL converts a stored "ttl" value back to an expiry in UTC; 0
// gives the zero time. For backend implementations.
func ExpiresFromTTL(ttl int64) time.Time {
	if ttl == 0 {
		return time.Time{}
	}
	return time.Unix(ttl, 0).UTC()
}

// Expired reports whether an item with stored "ttl" value ttl (0: none) is
// expired at now: the item lives while now < ttl seconds. Equivalently, in
// integer seconds, it is expired when now.Unix() >= ttl, which is the test
// the DynamoDB backend puts in its condition expressions.
// For backend implementations.
func Expired(ttl int64, now time.Time) bool {
	return ttl != 0 && now.Unix() >= ttl
}

// ExceedsMax reports an attribute (in no particular order) for which
// current + delta would exceed max, or exceeded=false when none would.
// Missing entries count as 0. It compares current > max-delta, exactly the
// comparison the DynamoDB backend sends (conditions do no arithmetic), so the
// backends agree even on fractional values. For backend implementations.
func ExceedsMax(current, deltas, max map[string]float64) (name string, exceeded bool) {
	for n, m := range max {
		if current[n] > m-deltas[n] {
			return n, true
		}
	}
	return "", false
}

// StringClash reports an attribute named in deltas or max that the item
// holds as a string (strs), which Add cannot treat as a number. For backend
// implementations.
func StringClash(strs map[string]string, deltas, max map[string]float64) (name string, clash bool) {
	for n := range deltas {
		if _, ok := strs[n]; ok {
			return n, true
		}
	}
	for n := range max {
		if _, ok := strs[n]; ok {
			return n, true
		}
	}
	return "", false
}
