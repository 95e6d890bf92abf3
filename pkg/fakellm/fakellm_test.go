package fakellm

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
)

// The streamed chunks are JSON whatever the model name holds: it is
// written as a JSON string (jsonb.AppendString), not Go-quoted (which
// writes \x01 and \x7f, invalid in JSON).
func TestStreamChunksAreJSONForAnyModelName(t *testing.T) {
	model := "m\x01\x7f\"é"
	body, _ := json.Marshal(map[string]any{"model": model, "stream": true, "stream_options": map[string]bool{"include_usage": true},
		"messages": []map[string]string{{"role": "user", "content": "hi"}}})
	req, _ := http.NewRequest(http.MethodPost, "http://fake.invalid/v1/chat/completions", strings.NewReader(string(body)))
	resp, err := (&Transport{Script: &config.FakeScript{Reply: "a b"}}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	frames := 0
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct{ Model string }
		if err := json.Unmarshal([]byte(data), &chunk); err != nil || chunk.Model != model {
			t.Fatalf("chunk %s: %v, model %q", data, err, chunk.Model)
		}
		frames++
	}
	if frames < 3 {
		t.Fatalf("%d chunks", frames)
	}
}
