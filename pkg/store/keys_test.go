package store

import (
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

// keyShapeCases is every key shape, as built and as expected.
func keyShapeCases() []struct {
	name      string
	got, want Key
} {
	at := time.Date(2024, 5, 1, 23, 59, 58, 500, time.FixedZone("X", 2*3600)) // 21:59:58 UTC
	return []struct {
		name      string
		got, want Key
	}{
		{"breaker", BreakerKey("openai-eu"), Key{"breaker#openai-eu", "state"}},
		{"breaker window", BreakerWindowKey("openai-eu", at),
			Key{"breaker#openai-eu", "win#2024-05-01T21:59:58.000000500Z"}},
		{"breaker latency", BreakerLatencyKey("openai-eu", at),
			Key{"breaker#openai-eu", "lat#2024-05-01T21:59:58.000000500Z"}},
		{"breaker probe", BreakerProbeKey("openai-eu", at),
			Key{"breaker#openai-eu", "probe#2024-05-01T21:59:58.000000500Z"}},
		{"retry budget", RetryBudgetKey("openai-eu", at),
			Key{"retry#openai-eu", "win#2024-05-01T21:59:58.000000500Z"}},
		{"ledger", LedgerKey("openai", "fp123", "gpt-4o"), Key{"ledger#openai#fp123", "model#gpt-4o"}},
		{"ledger credential", LedgerCredentialKey("openai", "fp123"), Key{"ledger#openai#fp123", "credential"}},
		{"budget", BudgetKey("team-a", "prod", "month", at),
			Key{"budget#team-a", "tag#prod#month#2024-05-01T21:59:58.000000500Z"}},
		{"budget no tag", BudgetKey("team-a", "", "day", at),
			Key{"budget#team-a", "tag##day#2024-05-01T21:59:58.000000500Z"}},
		{"usage", UsageKey("team-a", at, "req-1"),
			Key{"usage#team-a#2024-05-01", "2024-05-01T21:59:58.000000500Z#req-1"}},
		{"rollup", RollupKey("team-a", at), Key{"rollup#team-a", "day#2024-05-01"}},
		{"last good config", ConfigLastGoodKey("/llmgw/prod/config/"), Key{"config#/llmgw/prod/config/", "lastgood"}},
		{"cache entry", CacheKey("team-a", "9f86d0"), Key{"cache#team#team-a#9f86d0", "entry"}},
		{"shared cache entry", SharedCacheKey("9f86d0"), Key{"cache#shared#9f86d0", "entry"}},
		{"response owner", ResponseOwnerKey("resp_67cc#1"), Key{"response#resp_67cc%231", "owner"}},
		{"cache locality", LocalityKey("9f86d0#x"), Key{"locality#9f86d0%23x", "place"}},
		{"concurrency slot", ConcurrencyKey("team#a", 7), Key{"conc#team%23a", "slot#7"}},
		{"escaped", LedgerKey("a#b", "c%d", "m#%"), Key{"ledger#a%23b#c%25d", "model#m%23%25"}},
	}
}

func TestKeyShapes(t *testing.T) {
	for _, c := range keyShapeCases() {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
		if err := c.got.Validate(); err != nil {
			t.Errorf("%s: invalid key: %v", c.name, err)
		}
	}
}

func TestEscapeIsInjectiveAndReversible(t *testing.T) {
	inputs := []string{"", "#", "%", "%23", "#%", "a#b", "a%23b", "%%##", "plain"}
	seen := map[string]string{}
	for _, in := range inputs {
		e := Escape(in)
		if prev, dup := seen[e]; dup {
			t.Fatalf("Escape(%q) == Escape(%q) == %q", in, prev, e)
		}
		seen[e] = in
		for _, r := range e {
			if string(r) == Sep {
				t.Fatalf("Escape(%q) = %q contains the separator", in, e)
			}
		}
		if back := Unescape(e); back != in {
			t.Fatalf("Unescape(Escape(%q)) = %q", in, back)
		}
	}
	// Components cannot forge a split: these differ only in where "#" is.
	if a, b := LedgerKey("a#b", "c", "m"), LedgerKey("a", "b#c", "m"); a == b {
		t.Fatalf("keys collide: %v", a)
	}
}

func TestSortableTimeOrder(t *testing.T) {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var times []time.Time
	for _, d := range []time.Duration{0, 1, 10, 100, 120 * time.Millisecond, 100 * time.Millisecond,
		time.Second, 999999999, 59 * time.Minute, 25 * time.Hour, 400 * 24 * time.Hour} {
		times = append(times, base.Add(d))
	}
	strs := make([]string, len(times))
	for i, tm := range times {
		strs[i] = SortableTime(tm)
		back, err := time.Parse(time.RFC3339Nano, strs[i])
		if err != nil || !back.Equal(tm) {
			t.Fatalf("round trip of %s: %v %v", strs[i], back, err)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	sort.Strings(strs)
	for i := range times {
		if strs[i] != SortableTime(times[i]) {
			t.Fatalf("byte order differs from time order at %d: %s vs %s", i, strs[i], SortableTime(times[i]))
		}
	}
}

func TestUsageSKBounds(t *testing.T) {
	from := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	to := from.Add(time.Hour)
	lo, hi := UsageSKBounds(from, to)
	in := func(at time.Time, id string) bool {
		sk := UsageKey("t", at, id).SK
		return lo <= sk && sk < hi
	}
	cases := []struct {
		at   time.Time
		id   string
		want bool
	}{
		{from, "", true},
		{from, "zzz", true},
		{from.Add(-1), "a", false},
		{to.Add(-1), "~~~", true},
		{to, "", false},
		{to, "a", false},
	}
	for _, c := range cases {
		if got := in(c.at, c.id); got != c.want {
			t.Errorf("at %s id %q: in range = %v, want %v", SortableTime(c.at), c.id, got, c.want)
		}
	}
	if UsagePK("t", from) != UsageKey("t", from, "x").PK {
		t.Fatal("UsagePK disagrees with UsageKey")
	}
}

func TestWindowBoundsHelpers(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	if BreakerWindowKey("x", t0).SK != BreakerWindowSK(t0) {
		t.Fatal("BreakerWindowSK disagrees with BreakerWindowKey")
	}
	if RollupKey("x", t0).SK != RollupSK(t0) || RollupKey("x", t0).PK != RollupPK("x") {
		t.Fatal("Rollup helpers disagree")
	}
	if BreakerWindowSK(t0) >= BreakerWindowSK(t0.Add(time.Minute)) {
		t.Fatal("breaker windows out of order")
	}
	if BreakerKey("x").PK != BreakerWindowKey("x", t0).PK || BreakerKey("x").PK != BreakerProbeKey("x", t0).PK {
		t.Fatal("breaker state, windows and probes must share a partition")
	}
	// Window bounds never select probe items (nor the state item).
	lo, hi := BreakerWindowSK(time.Time{}), BreakerWindowSK(t0.Add(1000*time.Hour))
	for _, sk := range []string{BreakerProbeKey("x", t0).SK, BreakerLatencyKey("x", t0).SK, BreakerKey("x").SK} {
		if lo <= sk && sk < hi {
			t.Fatalf("window bounds select %q", sk)
		}
	}
	if LedgerKey("p", "f", "m").PK != LedgerPK("p", "f") || LedgerCredentialKey("p", "f").PK != LedgerPK("p", "f") {
		t.Fatal("ledger items of one key must share a partition")
	}
}

// The breaker and the key ledger rely on these layouts: one Query of a
// key's partition reads its credential and all its models, and a range
// query of breaker windows never selects probe items.
func TestSharedStateKeyLayout(t *testing.T) {
	if LedgerCredentialKey("p", "k").PK != LedgerKey("p", "k", "m").PK || LedgerPK("p", "k") != LedgerKey("p", "k", "m").PK {
		t.Error("a key's credential item must share the partition of its model items")
	}
	at := time.Date(2024, 5, 1, 21, 59, 58, 500, time.UTC)
	probe := BreakerProbeKey("t", at).SK
	if lo, hi := BreakerWindowSK(at.Add(-time.Hour)), BreakerWindowSK(at.Add(time.Hour)); probe >= lo && probe < hi {
		t.Error("a window range query would select probe items")
	}
}

// TestKeyShapeTableListsEveryShape: the table at the top of keys.go, the
// one list of the table's key shapes, has a row for every shape built here:
// one whose PK starts with the shape's first PK component and whose SK
// starts with its first SK component (<time> for a timestamp).
func TestKeyShapeTableListsEveryShape(t *testing.T) {
	src, err := os.ReadFile("keys.go")
	if err != nil {
		t.Fatal(err)
	}
	// The columns start where the header's PK and SK do.
	var rows [][2]string
	pkCol, skCol := -1, -1
	for _, l := range strings.Split(string(src), "\n") {
		l, ok := strings.CutPrefix(l, "//\t")
		if !ok {
			continue
		}
		if pkCol < 0 {
			if strings.HasPrefix(l, "shape ") {
				pkCol, skCol = strings.Index(l, " PK ")+1, strings.Index(l, " SK")+1
			}
			continue
		}
		if len(l) <= skCol {
			continue
		}
		rows = append(rows, [2]string{strings.TrimSpace(l[pkCol:skCol]), strings.TrimSpace(l[skCol:])})
	}
	if len(rows) < 10 {
		t.Fatalf("read %d rows of the key-shape table", len(rows))
	}
	for _, c := range keyShapeCases() {
		pk, _, _ := strings.Cut(c.want.PK, Sep)
		sk, _, _ := strings.Cut(c.want.SK, Sep)
		if sk != "" && sk[0] >= '0' && sk[0] <= '9' {
			sk = "<time>"
		}
		found := false
		for _, r := range rows {
			if strings.HasPrefix(r[0], pk+Sep) && (r[1] == sk || strings.HasPrefix(r[1], sk+Sep)) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s (%s / %s): no row of the key-shape table in keys.go lists it", c.name, c.want.PK, c.want.SK)
		}
	}
}
