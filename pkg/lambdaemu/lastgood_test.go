package lambdaemu_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/deployment"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/ssmconfig"
	"github.com/llmgw/llmgw/pkg/ssmconfig/ssmtest"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

var testConfigPath = deployment.ConfigPath("test")

// onAWS starts an instance the way the stack configures it: config from
// (fake) SSM, state in a (dynalite) table, refresh 1s.
func onAWS(t *testing.T, srv *ssmtest.Server, endpoint, table string) *function {
	return start(t, deployment.EnvConfigPath+"="+testConfigPath, deployment.EnvConfigRefresh+"=1s",
		deployment.EnvTable+"="+table, "AWS_ENDPOINT_URL_DYNAMODB="+endpoint, "AWS_ENDPOINT_URL_SSM="+srv.URL,
		"AWS_ACCESS_KEY_ID=AKIDTEST", "AWS_SECRET_ACCESS_KEY=secret")
}

func newTable(t *testing.T) (endpoint, table string, st *dynamo.Store) {
	endpoint = storetest.StartDynalite(t)
	table = storetest.UniqueTableName(t)
	st = dynamo.New(storetest.DynaliteClient(endpoint), table)
	if err := st.EnsureTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	return endpoint, table, st
}

// reply invokes the sample chat event and returns the status and body.
func reply(t *testing.T, f *function) (int, string) {
	t.Helper()
	resp := invoke(t, f, event(t, "function-url-chat.json"), time.Minute)
	body, _ := io.ReadAll(resp.Body)
	return resp.Status, string(body)
}

// healthz invokes GET /healthz.
func healthz(t *testing.T, f *function) string {
	t.Helper()
	var ev map[string]any
	json.Unmarshal(event(t, "function-url-chat.json"), &ev)
	ev["rawPath"], ev["body"] = "/healthz", ""
	ev["requestContext"].(map[string]any)["http"].(map[string]any)["method"] = "GET"
	ev["requestContext"].(map[string]any)["http"].(map[string]any)["path"] = "/healthz"
	b, _ := json.Marshal(ev)
	resp := invoke(t, f, b, time.Minute)
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

const goodConfig = `
providers:
  steady: {kind: fake, fake: {reply: "from the good config"}}
routes:
  demo: {targets: [{provider: steady, model: fake-1}]}
`

// TestColdStartOnInvalidSSMEditBootsOnTheLastGoodConfig: a new instance
// that starts while an invalid edit is in SSM serves the last good config
// (stored in the table by an earlier instance), logs the validation error
// and emits the metric the config-reload alarm watches; the fixed edit is
// picked up within a refresh. With no good config ever stored, the
// instance fails to start.
func TestColdStartOnInvalidSSMEditBootsOnTheLastGoodConfig(t *testing.T) {
	srv := ssmtest.New()
	defer srv.Close()
	srv.Put(testConfigPath+"00-base", "String", goodConfig)
	srv.Put(testConfigPath+"50-teams", "String", fmt.Sprintf(teamsYAML, exampleKeyHash))
	endpoint, table, st := newTable(t)

	first := onAWS(t, srv, endpoint, table)
	if status, body := reply(t, first); status != 200 || !strings.Contains(body, "from the good config") {
		t.Fatalf("first instance: %d %s", status, body)
	}
	first.stop()
	it, found, err := st.Get(context.Background(), store.ConfigLastGoodKey(testConfigPath))
	if err != nil || !found {
		t.Fatalf("no last good config in the table: %v", err)
	}
	var snap ssmconfig.Snapshot
	json.Unmarshal(it.Data, &snap)
	if len(snap.Sources) != 2 || snap.Sources[0].Name != testConfigPath+"00-base" || snap.Sources[0].Version != 1 || snap.Digest == "" {
		t.Errorf("stored snapshot = %+v", snap)
	}

	srv.Put(testConfigPath+"90-incident", "String", "routes: {demo: {targets: [{provider: ghost, model: x}]}}")
	second := onAWS(t, srv, endpoint, table)
	if status, body := reply(t, second); status != 200 || !strings.Contains(body, "from the good config") {
		t.Fatalf("instance started on a bad edit: %d %s\nstderr: %s", status, body, second.stderr.String())
	}
	if s := second.stderr.String(); !strings.Contains(s, "ghost") || !strings.Contains(s, "booting on the last good config") {
		t.Errorf("the validation error is not logged: %s", s)
	}
	if !strings.Contains(second.stdout.String(), `"`+deployment.MetricConfigReloadErrors+`":1`) {
		t.Errorf("no %s metric: %s", deployment.MetricConfigReloadErrors, second.stdout.String())
	}

	// The operator fixes the edit: it applies within one refresh period.
	srv.Put(testConfigPath+"90-incident", "String", `
providers: {backup: {kind: fake, fake: {reply: "from the fixed edit"}}}
routes: {demo: {targets: [{provider: backup, model: fake-1}]}}
`)
	waitFor(t, func() bool {
		time.Sleep(200 * time.Millisecond)
		_, body := reply(t, second)
		return strings.Contains(body, "from the fixed edit")
	}, "the fixed edit never took effect")
	waitFor(t, func() bool {
		it, _, _ := st.Get(context.Background(), store.ConfigLastGoodKey(testConfigPath))
		return it.Version == 2 && strings.Contains(string(it.Data), "from the fixed edit")
	}, "the fixed config was not stored as the last good one")

	t.Run("no good config ever stored", func(t *testing.T) {
		srv.Put(testConfigPath+"90-incident", "String", "routes: {demo: {targets: [{provider: ghost, model: x}]}}")
		endpoint, empty, _ := newTable(t)
		f := onAWS(t, srv, endpoint, empty)
		select {
		case <-f.done:
		case <-time.After(20 * time.Second):
			t.Fatal("the instance started without any good config")
		}
		if f.exitErr == nil || !strings.Contains(f.stderr.String(), "no good config has ever been stored") {
			t.Errorf("exit %v, stderr %s", f.exitErr, f.stderr.String())
		}
	})
}

// TestMissingKeyParameterIsSkippedThroughTheRealBinary: a valid config
// that references a key parameter that does not exist starts and serves
// with its other key; the missing one is logged, counted and shown in
// /healthz, and comes into service once the parameter is created.
func TestMissingKeyParameterIsSkippedThroughTheRealBinary(t *testing.T) {
	const key1, key2 = "sk-test-first-key-0000", "sk-test-second-key-000"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := map[string]string{"Bearer " + key1: "1", "Bearer " + key2: "2"}[r.Header.Get("Authorization")]
		if n == "" {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":{"message":"bad key","type":"invalid_request_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"served with key %s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`, n)
	}))
	defer up.Close()
	keysPath := deployment.KeysPath("test")
	srv := ssmtest.New()
	defer srv.Close()
	srv.Put(testConfigPath+"00-base", "String", fmt.Sprintf(`
providers:
  up: {kind: openai, base_url: "%s/v1", keys: [{ssm: %sup/1}, {ssm: %sup/2}]}
routes:
  demo: {targets: [{provider: up, model: gpt-4.1}]}
`, up.URL, keysPath, keysPath))
	// An admin team: /healthz shows key detail to admin keys only.
	srv.Put(testConfigPath+"50-teams", "String", fmt.Sprintf(teamsYAML, exampleKeyHash)+"    admin: true\n")
	srv.Put(keysPath+"up/2", "SecureString", key2)
	endpoint, table, _ := newTable(t)
	f := onAWS(t, srv, endpoint, table)

	if status, body := reply(t, f); status != 200 || !strings.Contains(body, "served with key 2") {
		t.Fatalf("%d %s\nstderr: %s", status, body, f.stderr.String())
	}
	var h struct {
		Targets []struct {
			Keys []keyledger.Status `json:"keys"`
		} `json:"targets"`
	}
	body := healthz(t, f)
	json.Unmarshal([]byte(body), &h)
	if len(h.Targets) != 1 || len(h.Targets[0].Keys) != 2 || !h.Targets[0].Keys[0].Available ||
		h.Targets[0].Keys[1].Reason != keyledger.ReasonMissing || h.Targets[0].Keys[1].Ref != keysPath+"up/1" {
		t.Fatalf("healthz: %s", body)
	}
	if !strings.Contains(f.stderr.String(), keysPath+"up/1") || !strings.Contains(f.stdout.String(), `"`+deployment.MetricProviderKeyErrors+`":1`) {
		t.Errorf("the missing key is not logged and counted:\nstderr %s\nstdout %s", f.stderr.String(), f.stdout.String())
	}

	// Created after the fact: retried within a few refresh periods, without
	// a config edit; key 1 comes first again.
	srv.Put(keysPath+"up/1", "SecureString", key1)
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body := reply(t, f)
		if strings.Contains(body, "served with key 1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the created key never came into service: %s", healthz(t, f))
		}
		time.Sleep(250 * time.Millisecond)
	}
	if s := f.stdout.String() + f.stderr.String() + healthz(t, f); strings.Contains(s, key1) || strings.Contains(s, key2) {
		t.Error("a provider key leaked into logs, metrics or /healthz")
	}
}
