package agents

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// nodeRequired returns the members the official Node SDK's TypeScript type
// iface (in resources/responses/responses.d.ts) declares without "?":
// the members its type says every response carries.
func nodeRequired(t *testing.T, dts, iface string) []string {
	t.Helper()
	start := strings.Index(dts, "\nexport interface "+iface+" {\n")
	if start < 0 {
		t.Fatalf("the SDK declares no interface %s", iface)
	}
	body := dts[start+1:]
	body = body[:strings.Index(body, "\n}\n")]
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^    ([a-z_]+):`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	if len(out) < 3 {
		t.Fatalf("read only %v from %s", out, iface)
	}
	return out
}

// TestNodeSDKResponseTypes: the response object a translated path writes
// (a chat-only upstream behind the Responses API) - the whole body and the
// response of the streamed created, in_progress and completed events -
// carries every member the official Node SDK's Response type requires,
// and each echoed function tool every member its FunctionTool requires
// (strict included).
func TestNodeSDKResponseTypes(t *testing.T) {
	agentTestsEnabled(t)
	dir := installNodeSDKs(t)
	raw, err := os.ReadFile(filepath.Join(dir, "node_modules", "openai", "resources", "responses", "responses.d.ts"))
	if err != nil {
		t.Fatal(err)
	}
	dts := string(raw)
	var required []string
	for _, m := range nodeRequired(t, dts, "Response") {
		if m != "output_text" { // computed by the SDK itself from output
			required = append(required, m)
		}
	}
	toolRequired := nodeRequired(t, dts, "FunctionTool")
	var chatRec, gwRec recorder
	chat := serve(t, &chatRec, fakeChat)
	gw := gatewayFor(t, fmt.Sprintf(`
providers:
  chat: {kind: openai, base_url: %q}
routes:
  sdk-chat: {targets: [{provider: chat, model: fake-chat}]}
`, chat.URL+"/v1"), &gwRec)
	check := func(where, obj string) {
		for _, k := range required {
			if !gjson.Get(obj, k).Exists() {
				t.Errorf("%s: the Node SDK's Response requires %q: %.300s", where, k, obj)
			}
		}
		gjson.Get(obj, "tools").ForEach(func(_, tool gjson.Result) bool {
			for _, k := range toolRequired {
				if !tool.Get(k).Exists() {
					t.Errorf("%s: the Node SDK's FunctionTool requires %q: %s", where, k, tool.Raw)
				}
			}
			return true
		})
	}
	const tools = `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{}}}]`
	for _, stream := range []bool{false, true} {
		body := fmt.Sprintf(`{"model":"sdk-chat","input":"say PLAIN-OK","stream":%v,%s}`, stream, tools)
		resp, err := http.Post(gw+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("stream %v: %d %s", stream, resp.StatusCode, out)
		}
		if !stream {
			check("body", string(out))
			continue
		}
		n := 0
		for _, line := range strings.Split(string(out), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			if !gjson.Get(data, "sequence_number").Exists() {
				t.Errorf("an event without sequence_number: %.200s", data)
			}
			switch typ := gjson.Get(data, "type").Str; typ {
			case "response.created", "response.in_progress", "response.completed":
				n++
				check(typ, gjson.Get(data, "response").Raw)
			}
		}
		if n != 3 {
			t.Errorf("%d response events in the stream, want 3", n)
		}
	}
}
