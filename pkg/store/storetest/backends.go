package storetest

import (
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/embedded"
)

// Env is one scenario's world for code built on the store: a manual clock
// shared by the store and the code under test, and one store that every
// simulated gateway instance shares.
type Env struct {
	T     *testing.T  // the scenario's (sub)test
	Clock *Clock      // the manual clock of the store and the code under test
	Store store.Store // the one store every instance shares
	// Backend names the store backend: "embedded" or "dynamodb".
	Backend string
	// Endpoint is dynalite's URL for the dynamodb backend.
	Endpoint string
}

// Now is the scenario's clock.
func (e *Env) Now() time.Time { return e.Clock.Now() }

// Advance moves the scenario's clock forward.
func (e *Env) Advance(d time.Duration) { e.Clock.Advance(d) }

// Scenario is a test that [RunBackends] runs once per backend.
type Scenario struct {
	Name string                     // the subtest's name
	Fn   func(t *testing.T, e *Env) // the scenario
}

// RunBackends runs every scenario on a fresh embedded store (in memory) and
// on a fresh DynamoDB table in dynalite. Without dynalite the DynamoDB half
// is skipped loudly (and fails in CI): see [StartDynalite].
func RunBackends(t *testing.T, scenarios []Scenario) {
	t.Run("embedded", func(t *testing.T) {
		for _, sc := range scenarios {
			t.Run(sc.Name, func(t *testing.T) {
				clk := ClockOf(t)
				s := embedded.OpenMemory(embedded.WithClock(clk.Now))
				t.Cleanup(func() { s.Close() })
				sc.Fn(t, &Env{T: t, Clock: clk, Store: s, Backend: "embedded"})
			})
		}
	})
	t.Run("dynamodb", func(t *testing.T) {
		endpoint := StartDynalite(t)
		for _, sc := range scenarios {
			t.Run(sc.Name, func(t *testing.T) {
				clk := ClockOf(t)
				s := NewDynamoStore(t, endpoint, dynamo.WithClock(clk.Now))
				sc.Fn(t, &Env{T: t, Clock: clk, Store: s, Backend: "dynamodb", Endpoint: endpoint})
			})
		}
	})
}
