package messageswire

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// The Messages body a first-party client sends, as Bedrock's InvokeModel
// and InvokeModelWithResponseStream take it for Claude (the direction
// opposite to FromBedrockInvoke). The reference for what Bedrock accepts
// is Claude Code's own Bedrock mode, which for the same request sends the
// same body with these changes, and so does ToBedrockInvoke:
//
//	model, stream                    removed (the model is in the path, the
//	                                 operation says whether it streams)
//	anthropic_version                "bedrock-2023-05-31"
//	anthropic-beta header values     -> the body's anthropic_beta array, in
//	                                 order, each once, for the betas Bedrock
//	                                 takes in the body (BedrockBetas);
//	                                 advanced-tool-use-2025-11-20 becomes
//	                                 tool-search-tool-2025-10-19
//	context_management, output_config, thinking.display
//	                                 removed
//	a message's output_config        removed (a per-turn control
//	                                 first-party Claude Code sends)
//	max_tokens                       lowered to the admitted cap when larger
//
// Every other member is sent as the client's bytes (messages, system,
// tools with their cache_control, thinking signatures, documents), in the
// client's order; anthropic_beta and anthropic_version come last, as
// Claude Code puts them. What was removed (a member, or a beta Bedrock does
// not take) is returned, named as a route's translate_without names a
// feature ("context_management", "thinking.display",
// "messages.output_config") or, for a beta,
// "anthropic-beta:" and its name.

// BedrockVersion is the anthropic_version InvokeModel takes for Claude.
const BedrockVersion = "bedrock-2023-05-31"

// BedrockBetas are the anthropic-beta values Bedrock takes in the body of
// an InvokeModel request for Claude: those Claude Code's Bedrock mode sends
// there (interleaved thinking, the 1M context window, tool search) and
// those Bedrock's model parameters page documents. Any other beta is left
// out and named as dropped.
var BedrockBetas = map[string]bool{
	"interleaved-thinking-2025-05-14":        true,
	"context-1m-2025-08-07":                  true,
	"tool-search-tool-2025-10-19":            true,
	"tool-examples-2025-10-29":               true,
	"computer-use-2024-10-22":                true,
	"computer-use-2025-01-24":                true,
	"computer-use-2025-11-24":                true,
	"token-efficient-tools-2025-02-19":       true,
	"fine-grained-tool-streaming-2025-05-14": true,
	"output-128k-2025-02-19":                 true,
	"dev-full-thinking-2025-05-14":           true,
}

// bedrockBetaNames maps a first-party beta to the name Bedrock gives the
// same feature.
var bedrockBetaNames = map[string]string{
	"advanced-tool-use-2025-11-20": "tool-search-tool-2025-10-19",
}

// bedrockDropped are the top-level members Bedrock's Claude does not take
// (Claude Code's Bedrock mode leaves them out).
var bedrockDropped = map[string]bool{"context_management": true, "output_config": true}

// BedrockInvoke is what ToBedrockInvoke needs besides the body.
type BedrockInvoke struct {
	// Betas are the request's anthropic-beta header values (each may be a
	// comma-separated list).
	Betas []string
	// MaxTokens, when positive, is the most max_tokens may ask for; a
	// larger value is lowered to it.
	MaxTokens int
	// DefaultMaxTokens, when positive, is sent as max_tokens when the body
	// has none (a count_tokens body: Bedrock's CountTokens takes an
	// InvokeModel body, which requires it).
	DefaultMaxTokens int
}

// ToBedrockInvoke returns the InvokeModel body for body, a valid Messages
// request object, and what it left out (see above).
func ToBedrockInvoke(body []byte, o BedrockInvoke) (out []byte, dropped []string, err error) {
	out = make([]byte, 0, len(body)+96)
	out = append(out, '{')
	var bodyBetas []byte
	hasMax := false
	member := func(k string, v []byte) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = jsonb.AppendString(out, k)
		out = append(out, ':')
		out = append(out, v...)
	}
	err = chatwire.Members(body, func(k string, v []byte) bool {
		switch {
		case k == "model" || k == "stream" || k == "anthropic_version":
			return true
		case k == "anthropic_beta":
			bodyBetas = v
			return true
		case bedrockDropped[k]:
			dropped = append(dropped, k)
			return true
		case k == "messages":
			var lost bool
			v, lost = invokeMessages(v)
			if lost {
				dropped = append(dropped, "messages.output_config")
			}
		case k == "thinking":
			var lost bool
			v, lost = invokeWithout(v, "display")
			if lost {
				dropped = append(dropped, "thinking.display")
			}
		case k == "max_tokens":
			hasMax = true
			if n, err := strconv.Atoi(string(bytes.TrimSpace(v))); o.MaxTokens > 0 && err == nil && n > o.MaxTokens {
				v = strconv.AppendInt(nil, int64(o.MaxTokens), 10)
			}
		}
		member(k, v)
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	if !hasMax && o.DefaultMaxTokens > 0 {
		member("max_tokens", strconv.AppendInt(nil, int64(o.DefaultMaxTokens), 10))
	}
	var fromBody []string
	if len(bodyBetas) > 0 {
		_ = json.Unmarshal(bodyBetas, &fromBody)
	}
	betas, lostBetas := bedrockBetas(append(fromBody, o.Betas...))
	dropped = append(dropped, lostBetas...)
	if len(betas) > 0 {
		list := []byte{'['}
		for i, b := range betas {
			if i > 0 {
				list = append(list, ',')
			}
			list = jsonb.AppendString(list, b)
		}
		member("anthropic_beta", append(list, ']'))
	}
	member("anthropic_version", jsonb.AppendString(nil, BedrockVersion))
	return append(out, '}'), dropped, nil
}

// bedrockBetas splits, renames and filters beta values: those Bedrock
// takes, in order and each once, and the names of the others
// ("anthropic-beta:" + the beta).
func bedrockBetas(values []string) (keep, lost []string) {
	for _, v := range values {
		for b := range strings.SplitSeq(v, ",") {
			b = strings.TrimSpace(b)
			if n, ok := bedrockBetaNames[b]; ok {
				b = n
			}
			switch {
			case b == "":
			case !BedrockBetas[b]:
				if k := "anthropic-beta:" + b; !slices.Contains(lost, k) {
					lost = append(lost, k)
				}
			case !slices.Contains(keep, b):
				keep = append(keep, b)
			}
		}
	}
	return keep, lost
}

// invokeWithout returns obj, a JSON value, without its member key (the
// other members' bytes kept), and whether it had one; a value that is not
// an object is returned as it is.
func invokeWithout(obj []byte, key string) ([]byte, bool) {
	if t := bytes.TrimSpace(obj); len(t) == 0 || t[0] != '{' {
		return obj, false
	}
	out, found := []byte{'{'}, false
	err := chatwire.Members(obj, func(k string, v []byte) bool {
		if k == key {
			found = true
			return true
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(jsonb.AppendString(out, k), ':')
		out = append(out, v...)
		return true
	})
	if err != nil || !found {
		return obj, false
	}
	return append(out, '}'), true
}

// bedrockServerTools are the tool type prefixes of Anthropic's server
// tools, which run on Anthropic's side and which Bedrock does not offer.
var bedrockServerTools = []string{"web_search_", "web_fetch_", "code_execution_", "mcp_toolset"}

// BedrockRefuses returns the first part of a Messages request Bedrock's
// InvokeModel cannot serve (param, where it is, and what it is), so the
// request goes to another target instead of failing there: Anthropic's
// server tools, MCP servers, a container, and Files API sources (Bedrock
// has no Files API). ok is false when Bedrock can take all of it.
func BedrockRefuses(body []byte) (param, what string, ok bool) {
	r := gjson.ParseBytes(body)
	for _, k := range []string{"mcp_servers", "container"} {
		if r.Get(k).Exists() {
			return k, "the " + k + " field", true
		}
	}
	for i, t := range r.Get("tools").Array() {
		typ := t.Get("type").String()
		for _, p := range bedrockServerTools {
			if strings.HasPrefix(typ, p) {
				return "tools[" + strconv.Itoa(i) + "]", "the " + typ + " tool", true
			}
		}
	}
	for i, m := range r.Get("messages").Array() {
		for j, b := range m.Get("content").Array() {
			if b.Get("source.type").String() == "file" {
				return "messages[" + strconv.Itoa(i) + "].content[" + strconv.Itoa(j) + "].source", "a Files API source", true
			}
		}
	}
	return "", "", false
}

// invokeMessages returns the messages array without each message's
// output_config (the other bytes kept), and whether one had it; the array
// itself when none has.
func invokeMessages(list []byte) ([]byte, bool) {
	if !bytes.Contains(list, []byte(`"output_config"`)) {
		return list, false
	}
	r := gjson.ParseBytes(list)
	if !r.IsArray() {
		return list, false
	}
	out, lost := []byte{'['}, false
	r.ForEach(func(_, m gjson.Result) bool {
		if len(out) > 1 {
			out = append(out, ',')
		}
		v, l := invokeWithout([]byte(m.Raw), "output_config")
		lost = lost || l
		out = append(out, v...)
		return true
	})
	return append(out, ']'), lost
}
