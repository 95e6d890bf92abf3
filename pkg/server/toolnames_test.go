package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBadToolNameGets400WithoutUpstreamCall: through the front, a tool
// whose name breaks the providers' rule (here 1 MB long) gets a 400 naming
// the tool by index, without the name echoed, and no upstream call.
func TestBadToolNameGets400WithoutUpstreamCall(t *testing.T) {
	up := newUpstream(t, okHandler)
	g := newGateway(t, oneRoute("", up.URL))
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[` +
		`{"type":"function","function":{"name":"lookup"}},` +
		`{"type":"function","function":{"name":"` + strings.Repeat("x", 1<<20) + `"}}]}`
	resp := g.post(t, body)
	out := readAll(t, resp.Body)
	if resp.StatusCode != 400 {
		t.Fatalf("status %d: %.300s", resp.StatusCode, out)
	}
	var env struct {
		Error struct{ Message, Param, Code string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatal(err)
	}
	if env.Error.Param != "tools[1].function.name" || env.Error.Code != "invalid_function_name" || len(out) > 1000 {
		t.Errorf("error %.500s", out)
	}
	if up.hits.Load() != 0 {
		t.Errorf("the upstream was called")
	}
}
