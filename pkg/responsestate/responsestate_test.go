package responsestate_test

import (
	"context"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/responsestate"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

func TestOwners(t *testing.T) {
	storetest.RunBackends(t, []storetest.Scenario{{Name: "RoundTripSettleOnceAndExpire", Fn: testOwners}})
}

// testOwners: an owner reads back as written (from another Owners on the
// same store: another instance), a keyless provider's empty fingerprint
// included; a background response settles exactly once; the item expires
// with its TTL; a deleted owner is gone.
func testOwners(t *testing.T, e *storetest.Env) {
	a := responsestate.New(e.Store, responsestate.Options{Now: e.Now, TTL: time.Hour, Timeout: 20 * time.Second})
	b := responsestate.New(e.Store, responsestate.Options{Now: e.Now, TTL: time.Hour, Timeout: 20 * time.Second})
	ctx := context.Background()
	want := responsestate.Owner{Target: "oa/gpt-5", Provider: "oa", Route: "codex", Key: "fp1", Team: "t1", Background: true, EstimatedInput: 12}
	if err := a.Put(ctx, "resp_1", want); err != nil {
		t.Fatal(err)
	}
	got, found, err := b.Get(ctx, "resp_1")
	if err != nil || !found || got.Target != want.Target || got.Key != "fp1" || got.Team != "t1" || got.Route != "codex" ||
		!got.Background || got.EstimatedInput != 12 || got.Settled {
		t.Fatalf("Get = %+v %v %v", got, found, err)
	}
	again, _, _ := a.Get(ctx, "resp_1")
	if first, err := b.Settle(ctx, "resp_1", got); !first || err != nil {
		t.Fatalf("first Settle = %v, %v", first, err)
	}
	if first, err := a.Settle(ctx, "resp_1", again); first || err != nil {
		t.Fatalf("a second Settle from a stale read = %v, %v; want false (settled once)", first, err)
	}
	if o, _, _ := a.Get(ctx, "resp_1"); !o.Settled {
		t.Fatal("not marked settled")
	}
	keyless := responsestate.Owner{Target: "local/m", Provider: "local", Route: "r"}
	if err := a.Put(ctx, "resp_2", keyless); err != nil {
		t.Fatalf("a keyless owner: %v", err)
	}
	if o, found, err := b.Get(ctx, "resp_2"); err != nil || !found || o.Key != "" || o.Team != "" || o.Target != "local/m" {
		t.Fatalf("keyless owner = %+v %v %v", o, found, err)
	}
	if err := a.Delete(ctx, "resp_2"); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := b.Get(ctx, "resp_2"); found {
		t.Fatal("deleted owner still found")
	}
	e.Clock.Advance(time.Hour + time.Second)
	if _, found, _ := a.Get(ctx, "resp_1"); found {
		t.Fatal("the owner outlived its TTL")
	}
}
