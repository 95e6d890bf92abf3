package keyledger

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/internal/testkit"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

func TestLedger(t *testing.T) {
	storetest.RunBackends(t, []storetest.Scenario{
		{Name: "RateLimitMovesBothInstancesToNextKey", Fn: testRateLimitMovesToNextKey},
		{Name: "AuthFailureDisablesKeyEverywhereUntilRotation", Fn: testAuthFailureDisables},
		{Name: "HeadroomHeadersSteerPicks", Fn: testHeadroomSteers},
		{Name: "OrdinaryResponsesDoNotWrite", Fn: testOrdinaryResponsesDoNotWrite},
		{Name: "NoUsableKeySkipsTarget", Fn: testNoUsableKey},
		{Name: "UnusableSaysWhenTheKeyFreesUp", Fn: testUnusableUntil},
		{Name: "AnOperationSlotIsKeptApart", Fn: testOperationSlot},
	})
}

var (
	key1 = NewKey("sk-test-one", 0)
	key2 = NewKey("sk-test-two", 1)
)

func twoKeys() map[string][]Key {
	return map[string][]Key{"openai": {key2, key1}} // out of order on purpose
}

// generous is the store timeout of functional tests: the emulator shares
// two cores with the race detector, and these tests are not about
// timeouts (the outage tests inject their own).
const generous = 20 * time.Second

// newLedger returns one instance's ledger on st with the scenario's clock
// and the keys ks.
func newLedger(e *storetest.Env, st Store, ks map[string][]Key, opt Options) *Ledger {
	opt.Now = e.Now
	if opt.StoreTimeout == 0 {
		opt.StoreTimeout = generous
	}
	l := New(st, opt)
	l.SetKeys(ks)
	e.T.Cleanup(l.Wait)
	return l
}

func logger(w *testkit.SyncBuffer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// wantPick fails unless l picks want for the model.
func wantPick(t *testing.T, who string, l *Ledger, model string, want Key) {
	t.Helper()
	got, err := l.Pick("openai", model)
	if err != nil || got.Fingerprint != want.Fingerprint || got.Secret != want.Secret {
		t.Fatalf("%s picked %v (err %v) for %s, want %v", who, got, err, model, want)
	}
}

func testRateLimitMovesToNextKey(t *testing.T, e *storetest.Env) {
	a := newLedger(e, e.Store, twoKeys(), Options{})
	b := newLedger(e, e.Store, twoKeys(), Options{})
	wantPick(t, "A", a, "gpt-4.1", key1)
	wantPick(t, "B", b, "gpt-4.1", key1)

	a.Observe("openai", "gpt-4.1", key1, http.StatusTooManyRequests, hdr("Retry-After", "30"))
	wantPick(t, "A (at once)", a, "gpt-4.1", key2)
	wantPick(t, "A (other model)", a, "gpt-4.0", key1)
	a.Wait()
	e.Advance(b.opt.CacheTTL)
	wantPick(t, "B (one cache period later)", b, "gpt-4.1", key2)
	st := b.Statuses("openai", "gpt-4.1")
	if len(st) != 2 || st[0].Fingerprint != key1.Fingerprint || st[0].Available || st[0].Reason != "rate_limited" ||
		st[0].UnavailableUntil.IsZero() || !st[1].Available {
		t.Fatalf("B's statuses = %+v", st)
	}
	// After the reset key 1 is back everywhere.
	e.Advance(30 * time.Second)
	wantPick(t, "A (after reset)", a, "gpt-4.1", key1)
	wantPick(t, "B (after reset)", b, "gpt-4.1", key1)

	// A long Retry-After is capped.
	a.Observe("openai", "gpt-4.1", key1, http.StatusTooManyRequests, hdr("Retry-After", "3600"))
	if s := a.Statuses("openai", "gpt-4.1")[0]; s.UnavailableUntil.Sub(e.Now()) > DefaultMaxCooldown {
		t.Fatalf("Retry-After 3600 set the key aside until %v, more than the cap", s.UnavailableUntil)
	}
	// A 429 with no hint at all uses the default cooldown.
	a.Observe("openai", "gpt-4.1", key2, http.StatusTooManyRequests, nil)
	if s := a.Statuses("openai", "gpt-4.1")[1]; s.UnavailableUntil.Sub(e.Now()) != DefaultCooldown {
		t.Fatalf("hintless 429: unavailable for %v, want %v", s.UnavailableUntil.Sub(e.Now()), DefaultCooldown)
	}
}

func testAuthFailureDisables(t *testing.T, e *storetest.Env) {
	logs := &testkit.SyncBuffer{}
	a := newLedger(e, e.Store, twoKeys(), Options{Logger: logger(logs)})
	b := newLedger(e, e.Store, twoKeys(), Options{})
	wantPick(t, "B", b, "m1", key1)

	a.Observe("openai", "m1", key1, http.StatusUnauthorized, nil)
	wantPick(t, "A m1", a, "m1", key2)
	wantPick(t, "A m2", a, "m2", key2) // a key is disabled for every model
	a.Wait()
	e.Advance(b.opt.CacheTTL)
	wantPick(t, "B m1", b, "m1", key2)
	wantPick(t, "B m2", b, "m2", key2)
	if s := b.Statuses("openai", "m2"); !s[0].Disabled || s[0].Available {
		t.Fatalf("B's status of the rejected key = %+v", s[0])
	}
	// Logs name the key by fingerprint only.
	if !strings.Contains(logs.String(), key1.Fingerprint) || strings.Contains(logs.String(), key1.Secret) {
		t.Fatalf("log lines must name the key by fingerprint only:\n%s", logs)
	}
	if n := logs.Count(`"to":"disabled"`); n != 1 {
		t.Fatalf("%d 'disabled' log lines, want 1:\n%s", n, logs)
	}
	// Rotation: a new secret is a new key, usable at once on both.
	rotated := NewKey("sk-test-one-rotated", 0)
	for _, l := range []*Ledger{a, b} {
		l.SetKeys(map[string][]Key{"openai": {rotated, key2}})
		wantPick(t, "after rotation", l, "m1", rotated)
	}
}

func testHeadroomSteers(t *testing.T, e *storetest.Env) {
	a := newLedger(e, e.Store, twoKeys(), Options{})
	b := newLedger(e, e.Store, twoKeys(), Options{})
	wantPick(t, "B", b, "gpt", key1)

	// OpenAI: no requests left for 20s.
	a.Observe("openai", "gpt", key1, http.StatusOK, hdr(
		"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "20s",
		"x-ratelimit-remaining-tokens", "150000", "x-ratelimit-reset-tokens", "6m0s"))
	wantPick(t, "A", a, "gpt", key2)
	a.Wait()
	e.Advance(b.opt.CacheTTL)
	wantPick(t, "B", b, "gpt", key2)
	if s := b.Statuses("openai", "gpt")[0]; s.Reason != "low_headroom" || len(s.Headroom) != 2 || s.Headroom[0].Remaining != 0 {
		t.Fatalf("B's status = %+v", s)
	}
	e.Advance(20 * time.Second)
	wantPick(t, "A after the reset", a, "gpt", key1)
	wantPick(t, "B after the reset", b, "gpt", key1)

	// Anthropic: output tokens nearly gone until an RFC 3339 reset.
	reset := e.Now().Add(15 * time.Second).UTC().Format(time.RFC3339)
	a.Observe("openai", "claude", key1, http.StatusOK, hdr(
		"anthropic-ratelimit-requests-remaining", "900", "anthropic-ratelimit-requests-reset", reset,
		"anthropic-ratelimit-output-tokens-remaining", "12", "anthropic-ratelimit-output-tokens-reset", reset))
	wantPick(t, "A", a, "claude", key2)
	a.Wait()
	e.Advance(b.opt.CacheTTL)
	wantPick(t, "B", b, "claude", key2)
	// Fresh headers with headroom on key 1 (say, from a request already in
	// flight) make it the first choice again, and are written.
	a.Observe("openai", "claude", key1, http.StatusOK, hdr(
		"anthropic-ratelimit-requests-remaining", "899", "anthropic-ratelimit-output-tokens-remaining", "80000"))
	wantPick(t, "A", a, "claude", key1)
	a.Wait()
	e.Advance(b.opt.CacheTTL)
	wantPick(t, "B", b, "claude", key1)
}

func testOrdinaryResponsesDoNotWrite(t *testing.T, e *storetest.Env) {
	cs := &storetest.Counting{Store: e.Store}
	a := newLedger(e, cs, twoKeys(), Options{})
	wantPick(t, "A", a, "gpt", key1)
	a.Wait()
	_, w0 := cs.Counts()
	for i := 0; i < 500; i++ {
		e.Advance(10 * time.Millisecond)
		k, _ := a.Pick("openai", "gpt")
		a.Observe("openai", "gpt", k, http.StatusOK, hdr(
			"x-ratelimit-remaining-requests", "4999", "x-ratelimit-remaining-tokens", "1999000"))
		a.Observe("openai", "gpt", k, http.StatusInternalServerError, nil)
	}
	a.Wait()
	if _, w := cs.Counts(); w != w0 {
		t.Fatalf("%d writes for 500 ordinary responses, want 0", w-w0)
	}
}

func testNoUsableKey(t *testing.T, e *storetest.Env) {
	a := newLedger(e, e.Store, map[string][]Key{"openai": {key1, key2}, "empty": {}}, Options{})
	a.Observe("openai", "gpt", key1, http.StatusTooManyRequests, hdr("Retry-After", "5"))
	a.Observe("openai", "gpt", key2, http.StatusForbidden, nil)
	if k, err := a.Pick("openai", "gpt"); err == nil {
		t.Fatalf("picked %v although no key is usable", k)
	}
	if _, err := a.Pick("empty", "gpt"); err == nil {
		t.Fatal("a provider whose keys all resolved to nothing must not be usable")
	}
	if k, err := a.Pick("keyless", "gpt"); err != nil || k != (Key{}) {
		t.Fatalf("a provider configured without keys: got %v %v, want the zero key", k, err)
	}
}

// An OpenAI 429 whose Retry-After is short but whose token limit is spent
// for minutes: Pick says the key is rate-limited until the limit's reset,
// not until the Retry-After.
func testUnusableUntil(t *testing.T, e *storetest.Env) {
	a := newLedger(e, e.Store, map[string][]Key{"openai": {key1}}, Options{})
	a.Observe("openai", "gpt", key1, http.StatusTooManyRequests, hdr("Retry-After", "1",
		"x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "6m0s"))
	_, err := a.Pick("openai", "gpt")
	var ue *UnusableError
	if !errors.As(err, &ue) || !ue.RateLimited() || !ue.Until.Equal(e.Now().Add(6*time.Minute)) {
		t.Fatalf("Pick: %v (%+v), want rate-limited until the 6m reset", err, ue)
	}
	if strings.Contains(err.Error(), key1.Secret) || strings.Contains(err.Error(), key1.Fingerprint) {
		t.Fatalf("the error names the key: %v", err)
	}
	a.Observe("openai", "gpt", key1, http.StatusUnauthorized, nil)
	if _, err := a.Pick("openai", "gpt"); !errors.As(err, &ue) || ue.RateLimited() {
		t.Fatalf("a disabled key: %v, want not merely rate-limited", err)
	}
}

// A 429 in an operation's slot (count_tokens) sets nothing aside for the
// model's generation; a 401 in it disables the key everywhere.
func testOperationSlot(t *testing.T, e *storetest.Env) {
	a := newLedger(e, e.Store, map[string][]Key{"openai": {key1}}, Options{})
	count := Slot("gpt", "count_tokens")
	a.Observe("openai", count, key1, http.StatusTooManyRequests, hdr("Retry-After", "30"))
	if _, err := a.Pick("openai", count); err == nil {
		t.Fatal("the count slot is usable right after its 429")
	}
	wantPick(t, "generation", a, "gpt", key1)
	a.Observe("openai", count, key1, http.StatusForbidden, nil)
	if _, err := a.Pick("openai", "gpt"); err == nil {
		t.Fatal("a 403 in the count slot left the key usable for generation")
	}
}
