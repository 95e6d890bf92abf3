package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/teamkey"
)

// iamEvent is the sample Function URL event of a role session
// (events/function-url-iam-chat.json), edited by edit.
func iamEvent(t *testing.T, edit func(ev map[string]any)) json.RawMessage {
	t.Helper()
	raw, err := os.ReadFile("../../events/function-url-iam-chat.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(ev)
	}
	out, _ := json.Marshal(ev)
	return out
}

// iamOf returns the event's authorizer.iam object.
func iamOf(ev map[string]any) map[string]any {
	return ev["requestContext"].(map[string]any)["authorizer"].(map[string]any)["iam"].(map[string]any)
}

// The Lambda adapter with auth type AWS_IAM reads the caller Lambda
// verified from the Function URL event and the config's iam_callers map
// it to a team (its route allow-list applies); an unmapped principal gets
// 403 in the client API's error shape; headers claiming an identity are
// ignored; with auth type NONE the event's authorizer is never trusted.
func TestLambdaIAMCallersMapToTeams(t *testing.T) {
	_, sum, err := teamkey.New()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "gw.yaml")
	doc := "providers: {a: {kind: fake, fake: {reply: hi}}}\n" +
		"routes: {m: {targets: [{provider: a, model: x}]}, n: {targets: [{provider: a, model: y}]}}\n" +
		"teams: {search: {routes: [m]}, keyed: {keys: [{id: k1, sha256: \"" + sum + "\"}]}}\n" +
		"iam_callers:\n  - {principal: \"arn:aws:iam::123456789012:role/search-*\", team: search}\n"
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	lg, err := NewLambdaHandler(context.Background(), LambdaEnv{ConfigFile: cfg, Stage: "test"}, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	invoke := func(env LambdaEnv, raw json.RawMessage) (int, string) {
		t.Helper()
		resp, err := lg.Invoke(env)(context.Background(), raw)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	iam := LambdaEnv{IAMAuth: true}
	if status, body := invoke(iam, iamEvent(t, nil)); status != 200 || !strings.Contains(body, "hi") {
		t.Fatalf("mapped principal: %d %s", status, body)
	}
	// The Bedrock Runtime API too: the event's SigV4 Authorization (signed
	// for Lambda, checked by the Function URL) is not refused as a Bedrock
	// signature would be.
	converse := func(ev map[string]any) {
		ev["rawPath"] = "/model/m/converse"
		ev["body"] = `{"messages":[{"role":"user","content":[{"text":"x"}]}]}`
	}
	if status, body := invoke(iam, iamEvent(t, converse)); status != 200 || gjson.Get(body, "output.message.content.0.text").String() != "hi" {
		t.Fatalf("mapped principal on the Bedrock Runtime API: %d %s", status, body)
	}
	if status, body := invoke(LambdaEnv{}, iamEvent(t, converse)); status != 403 || !strings.Contains(body, "Bearer") {
		t.Fatalf("auth type NONE, a SigV4-signed Bedrock call: %d %s", status, body)
	}
	// The mapped team's route allow-list applies: it is the team.
	routeN := func(ev map[string]any) { ev["body"] = `{"model":"n","messages":[{"role":"user","content":"x"}]}` }
	if status, body := invoke(iam, iamEvent(t, routeN)); status != 403 || strings.Contains(body, "iam_principal_not_mapped") {
		t.Fatalf("route outside the team's allow-list: %d %s", status, body)
	}
	unmapped := func(ev map[string]any) {
		iamOf(ev)["userArn"] = "arn:aws:sts::123456789012:assumed-role/billing/s1"
		// Forged claims in headers change nothing.
		h := ev["headers"].(map[string]any)
		h["x-amzn-iam-user-arn"] = "arn:aws:sts::123456789012:assumed-role/search-indexer/s1"
		h["x-amz-principal-arn"] = "arn:aws:iam::123456789012:role/search-indexer"
	}
	status, body := invoke(iam, iamEvent(t, unmapped))
	if status != 403 || gjson.Get(body, "error.code").String() != "iam_principal_not_mapped" ||
		!strings.Contains(gjson.Get(body, "error.message").String(), "arn:aws:sts::123456789012:assumed-role/billing/s1") {
		t.Fatalf("unmapped principal (chat shape): %d %s", status, body)
	}
	messages := func(ev map[string]any) {
		unmapped(ev)
		ev["rawPath"] = "/v1/messages"
		ev["body"] = `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`
	}
	if status, body := invoke(iam, iamEvent(t, messages)); status != 403 || gjson.Get(body, "type").String() != "error" ||
		gjson.Get(body, "error.type").String() != "permission_error" {
		t.Fatalf("unmapped principal (Messages shape): %d %s", status, body)
	}
	// Auth type NONE: the same event's authorizer is not trusted; without a
	// team key the caller is refused.
	if status, body := invoke(LambdaEnv{}, iamEvent(t, nil)); status != 401 {
		t.Fatalf("auth type NONE trusted the event's authorizer: %d %s", status, body)
	}
}
