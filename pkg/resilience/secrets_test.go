package resilience

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/usage"
)

// recordingStore remembers every write made through it (keys, strings,
// numbers' names, data), so a test can scan all stored items.
type recordingStore struct {
	store.Store
	mu     sync.Mutex
	writes strings.Builder
}

func (r *recordingStore) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(&r.writes, format+"\n", args...)
}

func (r *recordingStore) Put(ctx context.Context, it store.Item, c store.Cond) (store.Item, error) {
	r.note("put %s strs=%v nums=%v data=%s", it.Key, it.Strs, it.Nums, it.Data)
	return r.Store.Put(ctx, it, c)
}

func (r *recordingStore) Add(ctx context.Context, k store.Key, deltas map[string]float64, opts store.AddOptions) (store.Item, error) {
	r.note("add %s deltas=%v max=%v", k, deltas, opts.Max)
	return r.Store.Add(ctx, k, deltas, opts)
}

func (r *recordingStore) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writes.String()
}

// leak reports where a secret, or any 12-character piece of it, occurs in
// haystack: a partial mask ("sk-...[redacted]...tail") is a leak too.
func leak(haystack, secret string) (string, bool) {
	const w = 12
	for i := 0; i+w <= len(secret); i++ {
		if j := strings.Index(haystack, secret[i:i+w]); j >= 0 {
			lo, hi := max(0, j-80), min(len(haystack), j+w+80)
			return haystack[lo:hi], true
		}
	}
	return "", false
}

var modeRE = regexp.MustCompile(`mode:([a-z0-9]+)`)

// hostileScript is what a hostile provider does for a mode: fail in that
// way, echoing the credentials it was sent in every error message (status
// bodies and in-band SSE / event-stream errors) and in a response header.
func hostileScript(mode string) script {
	sc := script{words: words(5), echo: true, errMsg: "request failed for your credentials"}
	switch mode {
	case "400", "401", "403", "404", "500", "503", "529":
		fmt.Sscan(mode, &sc.status)
	case "429":
		sc.status, sc.retryAfter = 429, "1"
	case "miderror":
		sc.words, sc.midError = words(6), 3
	case "firsterror":
		sc.errorFirst = true
	case "cut":
		sc.words, sc.cutAfter = words(10), 3
	case "abort":
		sc.abort = true
	case "stall":
		sc.stall = true
	case "idle":
		sc.words, sc.chunkDelay = words(3), 3*time.Second
	}
	return sc
}

// TestSecretsNeverLeak configures sentinel provider keys (environment) and
// a team key, points every provider kind at hostile upstreams that echo
// the credentials they receive, drives every error path (4xx, 5xx, 429
// with Retry-After, in-band errors before and after the first token, cuts,
// aborted and refused connections, first-token and idle timeouts), and
// scans every response (status, headers, body), every log line and every
// stored item: no sentinel, nor any 12-character piece of one, appears.
// Bedrock runs twice: with an API key (bearer) and with SigV4 credentials.
func TestSecretsNeverLeak(t *testing.T) {
	for _, bedrockAuth := range []string{"bearer", "sigv4"} {
		t.Run("bedrock "+bedrockAuth, func(t *testing.T) { testSecretsNeverLeak(t, bedrockAuth) })
	}
}

func testSecretsNeverLeak(t *testing.T, bedrockAuth string) {
	secrets := map[string]string{
		"SENTINEL_OA_1": "sk-proj-SENTINELoa1xQ7rT2vW9yZ3bN5mK8pL4",
		"SENTINEL_OA_2": "sk-proj-SENTINELoa2hJ6dF1gS0aP9oI8uY7tR6",
		"SENTINEL_AZ":   "8f1c2SENTINELazureb7e94d0a6c35f2e1d8b9",
		"SENTINEL_AN_1": "sk-ant-api03-SENTINELan1Zx9Cv8Bn7Mq6Wp5El4Rk3",
		"SENTINEL_AN_2": "sk-ant-api03-SENTINELan2Lk9Jh8Gf7Ds6Aq5Zw4Xe3",
	}
	switch bedrockAuth {
	case "bearer":
		secrets["AWS_BEARER_TOKEN_BEDROCK"] = "ABSKQmVkcm9ja0FQSUtleS1TRU5USU5FTGJy+c2VjcmV0L3NlbnRpbmVsPQ=="
	case "sigv4":
		secrets["AWS_ACCESS_KEY_ID"] = "AKIASENTINELBR5EEEE7"
		secrets["AWS_SECRET_ACCESS_KEY"] = "wJalrXUtnFEMI/K7MDENG/bPxRfiSENTINELsecret"
		secrets["AWS_SESSION_TOKEN"] = "IQoJb3JpZ2luX2VjSENTINELsession/////////wEaCXVzLWVhc3QtMSJHMEUCIQD+token=="
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	teamKey, teamHash, err := teams.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	wrongTeamKey := "llmgw_SENTINELwrongTeamKeyThatIsNotConfigured0123456789"
	secrets["team key"], secrets["wrong team key"] = teamKey, wrongTeamKey

	modes := []string{"ok", "400", "401", "403", "404", "429", "500", "503", "529", "miderror", "firsterror", "cut", "abort", "stall", "idle"}
	plan := func(r *http.Request, body []byte, _ int) script {
		m := modeRE.FindSubmatch(body)
		if m == nil {
			return script{words: words(5)}
		}
		return hostileScript(string(m[1]))
	}
	fakes := map[string]*fake{}
	for _, id := range []string{"oa", "az", "an", "br"} {
		k := map[string]kind{"oa": openaiKind, "az": openaiKind, "an": anthropicKind, "br": bedrockKind}[id]
		var f *fake
		if id == "br" && bedrockAuth == "bearer" {
			f = newFakeTLS(t, k, script{})
			trustFake(t, f)
		} else {
			f = newFake(t, k, script{})
		}
		f.set(plan)
		fakes[id] = f
	}
	// Every (provider, mode) pair gets a provider of its own: modes that
	// change what the key ledger knows about a key (401 and 403 set it
	// aside for a day, 429 for a while) cannot keep the others from
	// reaching the upstream, and each bedrock SDK client opens at most one
	// stream (see oneBedrockStream).
	dead := freeAddr(t)
	var yb strings.Builder
	fmt.Fprintf(&yb, `
server: {request_timeout: 20s}
defaults:
  backoff_base: 1ms
  backoff_max: 2ms
  first_token_timeout: 500ms
  response_timeout: 1s
  idle_timeout: 400ms
breaker: {consecutive_failures: 1000, min_requests: 1000}
usage: {store_timeout: 2s}
teams:
  acme:
    keys: [{id: k1, sha256: %q}]
    limits: {requests_per_minute: 100000, tokens_per_minute: 100000000}
providers:
`, teamHash)
	provider := map[string]string{
		"oa": `{kind: openai, base_url: "%s/v1", keys: [{env: SENTINEL_OA_1}, {env: SENTINEL_OA_2}]}`,
		"az": `{kind: openai, base_url: "%s/v1", auth_header: api-key, keys: [{env: SENTINEL_AZ}]}`,
		"an": `{kind: anthropic, base_url: "%s", keys: [{env: SENTINEL_AN_1}, {env: SENTINEL_AN_2}]}`,
		"br": `{kind: bedrock, region: us-east-1, endpoint: "%s"}`,
	}
	model := map[string]string{"oa": "up-model", "az": "up-model", "an": "claude-fake", "br": `"anthropic.claude-fake-v1:0"`}
	var routes strings.Builder
	for _, id := range []string{"oa", "az", "an", "br"} {
		for _, mode := range modes {
			fmt.Fprintf(&yb, "  %s-%s: %s\n", id, mode, fmt.Sprintf(provider[id], fakes[id].URL))
			fmt.Fprintf(&routes, "  %s-%s: {attempts: 1, targets: [{provider: %s-%s, model: %s}]}\n", id, mode, id, mode, model[id])
		}
		scheme := "http://"
		if id == "br" && bedrockAuth == "bearer" {
			scheme = "https://"
		}
		fmt.Fprintf(&yb, "  %s-dead: %s\n", id, fmt.Sprintf(provider[id], scheme+dead))
		fmt.Fprintf(&routes, "  %s-dead: {targets: [{provider: %s-dead, model: %s}]}\n", id, id, model[id])
	}
	yaml := yb.String() + "routes:\n" + routes.String()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cfgNow := func() *config.Config { return cfg }
	emb, err := embedded.Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emb.Close() })
	st := &recordingStore{Store: emb}
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	br := breaker.New(st, cfg.Breaker, breaker.Options{Logger: log})
	kl := keyledger.New(st, keyledger.Options{Logger: log})
	recorder := usage.NewRecorder(st, cfgNow, log)
	g := newGateway(t, yaml, func(o *server.Options) {
		capture := o.Record
		o.Logger = log
		o.Breakers, o.Keys = br, kl
		o.Authenticate = teams.NewAuthenticator(cfgNow, log).Authenticate
		o.Admit = teams.NewLimiter(st, cfgNow, log).Admit
		o.Record = func(ctx context.Context, r *exchange.Record) {
			recorder.Record(ctx, r)
			capture(ctx, r)
		}
	})
	g.logs = logs

	// Every error path, on every provider kind, streaming and not.
	type req struct{ route, mode, auth string }
	var reqs []req
	for _, id := range []string{"oa", "az", "an", "br"} {
		for _, mode := range modes {
			reqs = append(reqs, req{id + "-" + mode, mode, teamKey})
		}
		reqs = append(reqs, req{id + "-dead", "ok", teamKey})
	}
	reqs = append(reqs, req{"oa-ok", "ok", wrongTeamKey}, req{"oa-ok", "ok", ""})

	var mu sync.Mutex
	var responses strings.Builder

	c := newClient(t)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, rq := range reqs {
		for _, stream := range []bool{true, false} {
			wg.Add(1)
			sem <- struct{}{}
			go func(rq req, stream bool) {
				defer wg.Done()
				defer func() { <-sem }()
				body := fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"mode:%s"}]}`, rq.route, stream, rq.mode)
				hr, _ := newRequest(g.URL, strings.NewReader(body))
				if rq.auth != "" {
					hr.Header.Set("Authorization", "Bearer "+rq.auth)
				}
				resp, err := c.Do(hr)
				if err != nil {
					t.Errorf("%s %s: %v", rq.route, rq.mode, err)
					return
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				mu.Lock()
				defer mu.Unlock()
				fmt.Fprintf(&responses, "=== %s %s stream=%v: %s\n", rq.route, rq.mode, stream, resp.Status)
				resp.Header.Write(&responses)
				responses.Write(out)
				responses.WriteString("\n")
			}(rq, stream)
		}
	}
	wg.Wait()
	for _, path := range []string{"/healthz", "/v1/models"} {
		hr, _ := http.NewRequest(http.MethodGet, g.URL+path, nil)
		hr.Header.Set("Authorization", "Bearer "+teamKey)
		resp, err := c.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintf(&responses, "=== GET %s: %s\n", path, resp.Status)
		resp.Header.Write(&responses)
		responses.Write(out)
	}
	br.Flush()
	kl.Wait()
	g.waitRecords(t, 2*(len(reqs)-2)) // the two refused callers have none
	all := responses.String()

	// The hostile upstreams did echo what they got (else the test proves
	// nothing), and the error paths were reached.
	for id, f := range fakes {
		if f.hits.Load() == 0 {
			t.Fatalf("upstream %s was never called\n%s", id, all)
		}
	}
	for _, want := range []string{"invalid_request", "rate_limited", "interrupted", "timeout", "unavailable", "overloaded", "Retry-After"} {
		if !strings.Contains(all, want) {
			t.Errorf("no response shows %q: an error path was not driven", want)
		}
	}
	// Where each secret may go: the provider keys to their own provider
	// (in its auth header) and nowhere else; the team key nowhere upstream.
	mayReach := map[string][]string{"oa": {"SENTINEL_OA_1", "SENTINEL_OA_2"}, "az": {"SENTINEL_AZ"}, "an": {"SENTINEL_AN_1", "SENTINEL_AN_2"},
		"br": {"AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN"}}
	for id, f := range fakes {
		for _, h := range f.requestHeaders() {
			var sent strings.Builder
			h.Write(&sent)
			for name, secret := range secrets {
				allowed := false
				for _, a := range mayReach[id] {
					allowed = allowed || a == name
				}
				if where, ok := leak(sent.String(), secret); ok && !allowed {
					t.Errorf("upstream %s was sent %s: ...%s...", id, name, where)
				}
			}
		}
	}

	names := make([]string, 0, len(secrets))
	for n := range secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, hay := range []struct{ what, text string }{
		{"a response", all},
		{"the logs", logs.String()},
		{"the store", st.String()},
	} {
		if hay.text == "" {
			t.Errorf("%s: nothing to scan", hay.what)
		}
		for _, name := range names {
			if where, ok := leak(hay.text, secrets[name]); ok {
				t.Errorf("%s leaked into %s: ...%s...", name, hay.what, where)
			}
		}
	}
	if os.Getenv("SECRETS_DUMP") != "" {
		os.WriteFile(os.Getenv("SECRETS_DUMP"), []byte(all), 0o600)
	}
	if testing.Verbose() {
		t.Logf("scanned %d KiB of responses, %d KiB of logs, %d KiB of store writes", len(all)>>10, len(logs.String())>>10, len(st.String())>>10)
	}
}
