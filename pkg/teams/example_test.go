package teams_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/usage"
)

// Example_wiring shows how the gateway wires teams and usage into
// server.Options: the Authenticator, the Limiter, the Recorder and Cost,
// then the rollup and the usage report (what GET /v1/usage serves).
func Example_wiring() {
	key, hash, _ := teams.NewKey()
	cfg, err := config.Parse([]byte(`
providers:
  steady: {kind: fake, fake: {reply: "Hello from the steady provider."}}
routes:
  demo: {targets: [{provider: steady, model: fake-1}]}
prices:
  "steady/fake-1": {input: 1, output: 2}
teams:
  search:
    keys: [{id: k1, sha256: "` + hash + `"}]
    limits: {requests_per_minute: 60, cost_per_day_usd: 5}
`))
	if err != nil {
		panic(err)
	}
	// The config in force: a reload (SSM) swaps what this returns.
	current := func() *config.Config { return cfg }

	st, err := embedded.Open("") // the gateway: -state FILE, or DynamoDB on Lambda
	if err != nil {
		panic(err)
	}
	defer st.Close()
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

	auth := teams.NewAuthenticator(current, log)
	h, err := server.New(context.Background(), cfg, server.Options{
		Logger: log,
		Front: server.Front{
			Authenticate: auth.Authenticate,
			Admit:        teams.NewLimiter(st, current, log).Admit,
		},
		Reporting: server.Reporting{
			Record: usage.NewRecorder(st, current, log).Record,
			Cost:   usage.Cost,
		},
	})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"demo","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("chat:", resp.StatusCode)
	// The record is written after the response's last byte, before the
	// handler returns; Close waits for the handler.
	srv.Close()

	// The rollup (hourly on AWS), then the report GET /v1/usage serves.
	roller := usage.NewRoller(st, current)
	if _, err := roller.RunMode(context.Background(), usage.Hourly); err != nil {
		panic(err)
	}
	today := time.Now()
	rep, err := usage.BuildReport(context.Background(), st, roller.Teams(), today.AddDate(0, 0, -1), today, false)
	if err != nil {
		panic(err)
	}
	for _, tr := range rep.Teams {
		fmt.Printf("%s: %d request(s), cost > 0: %v\n", tr.Team, tr.Requests, tr.CostUSD > 0)
	}
	// Output:
	// chat: 200
	// search: 1 request(s), cost > 0: true
}
