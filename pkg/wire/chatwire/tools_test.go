package chatwire

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestNewerToolShapesParseAndMarshalAsSent: custom tools and tool_choice
// objects other than a function are accepted and kept as the client sent
// them, so a request encoded from its canonical form (another ingress to an
// OpenAI-compatible target) carries them unchanged.
func TestNewerToolShapesParseAndMarshalAsSent(t *testing.T) {
	custom := `{"type":"custom","custom":{"name":"grep","format":{"type":"text"}}}`
	for _, choice := range []string{
		`{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"custom","custom":{"name":"grep"}}]}}`,
		`{"type":"custom","custom":{"name":"grep"}}`,
		`"auto"`,
		`{"type":"function","function":{"name":"f"}}`,
	} {
		body := `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}},` + custom + `],"tool_choice":` + choice + `}`
		req, err := Parse([]byte(body), Limits{})
		if err != nil {
			t.Fatalf("%s: %v", choice, err)
		}
		if string(req.Tools[1].Raw) != custom || req.Tools[1].Type != "custom" {
			t.Errorf("custom tool kept as %s", req.Tools[1].Raw)
		}
		out, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), `"tool_choice":`+choice) || !strings.Contains(string(out), custom) {
			t.Errorf("marshalled %s", out)
		}
		if known := req.ToolChoice.Known(); known != (choice == `"auto"` || strings.Contains(choice, `"function"`)) {
			t.Errorf("%s: Known() = %v", choice, known)
		}
	}
}
