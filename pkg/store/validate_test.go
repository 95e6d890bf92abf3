package store

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestItemValidate(t *testing.T) {
	k := Key{"p", "s"}
	ok := []Item{
		{Key: k},
		{Key: k, Nums: map[string]float64{"n": -1.5, "z": 0}, Strs: map[string]string{"s": ""}, Data: []byte("x")},
		{Key: k, Expires: time.Unix(1, 0)},
	}
	for i, it := range ok {
		if err := it.Validate(); err != nil {
			t.Errorf("ok[%d]: %v", i, err)
		}
	}
	bad := map[string]Item{
		"empty pk":       {Key: Key{"", "s"}},
		"empty sk":       {Key: Key{"p", ""}},
		"long pk":        {Key: Key{strings.Repeat("p", MaxPKBytes+1), "s"}},
		"long sk":        {Key: Key{"p", strings.Repeat("s", MaxSKBytes+1)}},
		"bad utf8 key":   {Key: Key{"p\xff", "s"}},
		"reserved num":   {Key: k, Nums: map[string]float64{AttrVersion: 1}},
		"reserved str":   {Key: k, Strs: map[string]string{AttrTTL: "x"}},
		"empty name":     {Key: k, Nums: map[string]float64{"": 1}},
		"clash":          {Key: k, Nums: map[string]float64{"a": 1}, Strs: map[string]string{"a": "x"}},
		"nan":            {Key: k, Nums: map[string]float64{"a": math.NaN()}},
		"inf":            {Key: k, Nums: map[string]float64{"a": math.Inf(-1)}},
		"huge":           {Key: k, Nums: map[string]float64{"a": 1e40}},
		"tiny":           {Key: k, Nums: map[string]float64{"a": 1e-40}},
		"bad utf8 value": {Key: k, Strs: map[string]string{"a": "\xff"}},
		"too large":      {Key: k, Data: make([]byte, MaxItemBytes)},
		"pre-epoch":      {Key: k, Expires: time.Unix(-5, 0)},
	}
	for name, it := range bad {
		if err := it.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

func TestValidateAddAndCond(t *testing.T) {
	k := Key{"p", "s"}
	if err := ValidateAdd(k, map[string]float64{"a": 1}, AddOptions{Max: map[string]float64{"a": 10, "b": 3}}); err != nil {
		t.Fatal(err)
	}
	if err := ValidateAdd(k, map[string]float64{AttrPK: 1}, AddOptions{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("reserved delta: %v", err)
	}
	if err := ValidateAdd(k, nil, AddOptions{Max: map[string]float64{"a": math.NaN()}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("NaN max: %v", err)
	}
	if err := IfVersion(0).Validate(false); !errors.Is(err, ErrInvalid) {
		t.Fatalf("version 0: %v", err)
	}
	if err := IfAbsent().Validate(true); !errors.Is(err, ErrInvalid) {
		t.Fatalf("delete if absent: %v", err)
	}
	if err := (Cond{Kind: 9}).Validate(false); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown kind: %v", err)
	}
	if (Cond{}) != Always() {
		t.Fatal("zero Cond must be Always")
	}
}

func TestTTLRoundsUpAndExpiry(t *testing.T) {
	if TTL(time.Time{}) != 0 || !ExpiresFromTTL(0).IsZero() {
		t.Fatal("zero time must mean no expiry")
	}
	at := time.Unix(100, 1)
	if got := TTL(at); got != 101 {
		t.Fatalf("TTL rounds up: got %d", got)
	}
	if got := TTL(time.Unix(100, 0)); got != 100 {
		t.Fatalf("TTL of whole second: got %d", got)
	}
	cases := []struct {
		now  time.Time
		ttl  int64
		want bool
	}{
		{time.Unix(99, 999999999), 100, false},
		{time.Unix(100, 0), 100, true},
		{time.Unix(100, 5), 100, true},
		{time.Unix(1e9, 0), 0, false},
	}
	for _, c := range cases {
		if got := Expired(c.ttl, c.now); got != c.want {
			t.Errorf("Expired(%d, %v) = %v", c.ttl, c.now, got)
		}
	}
	if !ExpiresFromTTL(100).Equal(time.Unix(100, 0)) || ExpiresFromTTL(100).Location() != time.UTC {
		t.Fatal("ExpiresFromTTL")
	}
}

func TestExceedsMax(t *testing.T) {
	cur := map[string]float64{"a": 5}
	if _, over := ExceedsMax(cur, map[string]float64{"a": 5}, map[string]float64{"a": 10}); over {
		t.Fatal("5+5 <= 10")
	}
	if n, over := ExceedsMax(cur, map[string]float64{"a": 6}, map[string]float64{"a": 10}); !over || n != "a" {
		t.Fatal("5+6 > 10")
	}
	if _, over := ExceedsMax(nil, map[string]float64{"b": 3}, map[string]float64{"b": 2}); !over {
		t.Fatal("absent counts as 0: 0+3 > 2")
	}
	if _, over := ExceedsMax(map[string]float64{"c": 4}, nil, map[string]float64{"c": 3}); !over {
		t.Fatal("no delta: 4 > 3")
	}
}
