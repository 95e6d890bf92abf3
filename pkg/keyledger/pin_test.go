package keyledger

import (
	"errors"
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/pkg/store/storetest"
)

func TestPickKey(t *testing.T) {
	storetest.RunBackends(t, []storetest.Scenario{{Name: "OnlyThePinnedKey", Fn: testPickKey}})
}

// testPickKey: PickKey returns the one key asked for, never another, and
// says why when that key is not usable or gone.
func testPickKey(t *testing.T, e *storetest.Env) {
	l := newLedger(e, e.Store, twoKeys(), Options{})
	if k, err := l.PickKey("openai", "m", key2.Fingerprint); err != nil || k.Fingerprint != key2.Fingerprint {
		t.Fatalf("PickKey(key2) = %v, %v; Pick would give key1, the pin must win", k, err)
	}
	l.Observe("openai", "m", key2, http.StatusTooManyRequests, hdr("Retry-After", "30"))
	var ue *UnusableError
	if k, err := l.PickKey("openai", "m", key2.Fingerprint); !errors.As(err, &ue) || ue.Reason != "rate_limited" || k.Secret != "" {
		t.Fatalf("PickKey of a rate-limited key = %v, %v; want rate_limited and no key (never key1)", k, err)
	}
	if _, err := l.PickKey("openai", "m", "gone"); !errors.As(err, &ue) || ue.Reason != ReasonMissing {
		t.Fatalf("PickKey of a removed key: %v", err)
	}
	if k, err := l.PickKey("keyless", "m", ""); err != nil || k.Secret != "" {
		t.Fatalf("PickKey of a keyless provider: %v, %v", k, err)
	}
}
