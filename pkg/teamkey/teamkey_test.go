package teamkey

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestNewKeyFormatHashAndVerify(t *testing.T) {
	k1, h1, err := New()
	if err != nil {
		t.Fatal(err)
	}
	k2, h2, _ := New()
	if !strings.HasPrefix(k1, Prefix) || len(k1) != len(Prefix)+43 || k1 == k2 || h1 == h2 {
		t.Fatalf("keys %q %q", k1, k2)
	}
	want := sha256.Sum256([]byte(k1))
	if h1 != hex.EncodeToString(want[:]) || Hash(k1) != h1 || Sum(k1) != want {
		t.Fatalf("hash of %q = %s", k1, h1)
	}
	stored, err := ParseHash("  " + strings.ToUpper(h1) + "\n")
	if err != nil || stored != want {
		t.Fatalf("ParseHash: %x %v", stored, err)
	}
	if !Verify(k1, stored) || Verify(k2, stored) || Verify(k1[:len(k1)-1], stored) {
		t.Fatal("Verify accepts the wrong key or refuses the right one")
	}
	if !Equal(stored, want) || Equal(stored, Sum(k2)) {
		t.Fatal("Equal")
	}
}

func TestParseHashNeverEchoesTheValue(t *testing.T) {
	for _, bad := range []string{"", "abc", k(63), k(65), "llmgw_SECRETSECRET", strings.Repeat("zz", 32)} {
		_, err := ParseHash(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
			continue
		}
		if bad != "" && strings.Contains(err.Error(), bad) {
			t.Errorf("error %q echoes the value", err)
		}
	}
}

func k(n int) string { return strings.Repeat("a", n) }

func TestNames(t *testing.T) {
	for _, ok := range []string{"search", "a", "A-b_c.9", k(64)} {
		if !ValidName(ok) || CheckID(ok) != nil || CheckTeam(ok) != nil {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "a b", "a#b", "x: {}, y", k(65), "é"} {
		if ValidName(bad) || CheckID(bad) == nil || CheckTeam(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := CheckTeam(Anonymous); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("anonymous: %v", err)
	}
	if CheckID(Anonymous) != nil {
		t.Error("anonymous is a fine key id")
	}
	if !LooksLikeKey("x "+Prefix+"abc") || LooksLikeKey("k1") {
		t.Error("LooksLikeKey")
	}
}
