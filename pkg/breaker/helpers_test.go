package breaker

import (
	"log/slog"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/internal/testkit"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

// testSettings are breaker settings for tests.
func testSettings() config.BreakerSettings {
	return config.BreakerSettings{
		Window: config.Duration(time.Minute), MinRequests: 10, FailureRate: 0.5, ConsecutiveFailures: 3,
		Cooldown: config.Duration(30 * time.Second), MaxCooldown: config.Duration(2 * time.Minute), HalfOpenProbes: 1,
	}
}

// generous is the store timeout of functional tests: the emulator shares
// two cores with the race detector, and these tests are not about
// timeouts (the outage tests inject their own).
const generous = 20 * time.Second

// newBreaker returns one instance's breaker on st with the scenario's
// clock.
func newBreaker(e *storetest.Env, st Store, set config.BreakerSettings, opt Options) *Breaker {
	opt.Now = e.Now
	if opt.StoreTimeout == 0 {
		opt.StoreTimeout = generous
	}
	b := New(st, set, opt)
	e.T.Cleanup(b.Wait)
	return b
}

// settle waits for instances' background store work (bounded: the store
// calls themselves are bounded).
func settle(bs ...*Breaker) {
	for _, b := range bs {
		b.Wait()
	}
}

// run makes one attempt through Allow and reports o; it returns Allow's
// error.
func run(b *Breaker, target string, o Outcome) error {
	done, err := b.Allow(target, "")
	if err != nil {
		return err
	}
	done(o)
	return nil
}

func logger(w *testkit.SyncBuffer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }
