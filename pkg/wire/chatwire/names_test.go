package chatwire

import (
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

func TestValidFunctionName(t *testing.T) {
	for _, ok := range []string{"a", "get_weather", "get-weather", "Z9", strings.Repeat("x", 64)} {
		if !ValidFunctionName(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", 65), "get weather", "ns.tool", "multi_tool_use.parallel", "é", "a\x00", "a/b"} {
		if ValidFunctionName(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestParseRefusesBadToolNames: a function tool's name and a forced
// tool_choice name are held to ^[a-zA-Z0-9_-]{1,64}$ with a 400 whose
// param names the tool by index; a long name is never echoed.
func TestParseRefusesBadToolNames(t *testing.T) {
	tool := func(name string) string {
		return `{"type":"function","function":{"name":"` + name + `","parameters":{"type":"object"}}}`
	}
	huge := strings.Repeat("n", 1<<20)
	for _, tc := range []struct {
		name, body, param, msg string
	}{
		{"space", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[` + tool("ok") + `,` + tool("get weather") + `]}`,
			"tools[1].function.name", `"get weather" has a character outside`},
		{"too long", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[` + tool(strings.Repeat("a", 65)) + `]}`,
			"tools[0].function.name", "is 65 bytes long"},
		{"huge", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[` + tool("a") + `,` + tool("b") + `,` + tool(huge) + `]}`,
			"tools[2].function.name", "is 1048576 bytes long"},
		{"dot", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[` + tool("ns.get") + `]}`,
			"tools[0].function.name", "at byte 2"},
		{"tool_choice", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[` + tool("a") + `],"tool_choice":{"type":"function","function":{"name":"` + huge + `"}}}`,
			"tool_choice.function.name", "is 1048576 bytes long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.body), Limits{})
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("accepted (err %v)", err)
			}
			if ge.Category != gwerr.InvalidRequest || ge.Param != tc.param || ge.Code != "invalid_function_name" ||
				!strings.Contains(ge.Message, tc.msg) || !strings.Contains(ge.Message, "1-64 characters of a-z, A-Z, 0-9, _ and -") {
				t.Errorf("error %+v", ge)
			}
			if len(ge.Message) > 300 {
				t.Errorf("message is %d bytes: the name is echoed", len(ge.Message))
			}
		})
	}
	ok := `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[` + tool(strings.Repeat("A", 64)) + `,` + tool("get-weather_2") + `],"tool_choice":{"type":"function","function":{"name":"get-weather_2"}}}`
	if _, err := Parse([]byte(ok), Limits{}); err != nil {
		t.Errorf("valid names refused: %v", err)
	}
}
