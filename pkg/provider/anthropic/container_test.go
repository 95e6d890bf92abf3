package anthropic

import (
	"io"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// Anthropic frames of an answer that ran code (bash_code_execution) in a
// container, which message_delta names.
const containerFrames = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01C\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"container\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"bash_code_execution\",\"input\":{}}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"42\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null%s},\"usage\":{\"output_tokens\":5}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

// TestTranslatedAnswerCountsItsContainer: the translating reader and the
// passthrough relay count the container an answer ran in (named by
// message_delta or the message, or implied by a code-execution block),
// whole and streamed, and an answer without one counts none.
func TestTranslatedAnswerCountsItsContainer(t *testing.T) {
	named := strings.Replace(containerFrames, "%s", `,"container":{"id":"container_011","expires_at":"2026-12-02T04:13:31Z"}`, 1)
	blockOnly := strings.Replace(containerFrames, "%s", "", 1)
	plain := strings.Replace(strings.Replace(blockOnly, `"type":"server_tool_use","id":"srvtoolu_1","name":"bash_code_execution","input":{}`, `"type":"text","text":""`, 1), "%s", "", 1)
	drain := func(s interface {
		Next() (exchange.Event, error)
		Usage() exchange.TokenUsage
	}) exchange.TokenUsage {
		for {
			if _, err := s.Next(); err == io.EOF {
				return s.Usage()
			} else if err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, c := range map[string]struct {
		frames string
		want   int
	}{"named": {named, 1}, "code block": {blockOnly, 1}, "plain": {plain, 0}} {
		tr := newSSEStream("anth", io.NopCloser(strings.NewReader(c.frames)), 10, 0)
		if u := drain(tr); u.Tools.Containers != c.want || u.Output != 5 {
			t.Errorf("%s translated: usage %+v, want %d container(s)", name, u, c.want)
		}
		body := strings.NewReader(c.frames)
		raw := &rawStream{prov: "anth", body: io.NopCloser(body), r: newReader(body), trace: &exchange.Trace{}}
		if u := drain(raw); u.Tools.Containers != c.want || u.Output != 5 {
			t.Errorf("%s relayed: usage %+v, want %d container(s)", name, u, c.want)
		}
	}
	for name, c := range map[string]struct {
		body string
		want int
	}{
		"named":      {`{"id":"msg_1","type":"message","role":"assistant","model":"m","container":{"id":"container_011","expires_at":"2026-12-02T04:13:31Z"},"content":[{"type":"text","text":"42"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5}}`, 1},
		"code block": {`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"code_execution","input":{"code":"print(6*7)"}},{"type":"text","text":"42"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5}}`, 1},
		"plain":      {`{"id":"msg_1","type":"message","role":"assistant","model":"m","container":null,"content":[{"type":"text","text":"42"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5}}`, 0},
	} {
		_, u, err := translateResponse("anth", []byte(c.body), 0)
		if err != nil || u.Tools.Containers != c.want {
			t.Errorf("%s whole: usage %+v, %v; want %d container(s)", name, u, err, c.want)
		}
	}
}
