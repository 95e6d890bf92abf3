package bedrock

import (
	"strings"

	"github.com/llmgw/llmgw/pkg/modelid"
)

// Models: what the adapter knows about the model behind a target. A
// target's model may be a base model id, a cross-region inference profile
// id (us., eu., apac., global., ...) or an ARN; it is sent to Bedrock as
// it is, and looked up here as its base model (pkg/modelid: the profile
// prefix stripped, the model id read from the ARN, or the target's
// base_model option for an ARN that does not name its model).

// promptCaching is the table of base models that take cachePoint blocks
// (Bedrock's prompt caching), by model id prefix, and whether a cache
// point may also follow the tool definitions (Amazon Nova caches the
// system prompt and messages only). A cache_control on a request to any
// other model is dropped, never sent: Bedrock answers a cachePoint the
// model does not support with a ValidationException. A target's
// prompt_caching option ("on" or "off") overrides the table.
var promptCaching = []struct {
	prefix string
	tools  bool
}{
	{"anthropic.claude-3-7-sonnet", true},
	{"anthropic.claude-3-5-haiku", true},
	{"anthropic.claude-sonnet-4", true}, // Sonnet 4, 4.5 and later 4.x
	{"anthropic.claude-opus-4", true},   // Opus 4, 4.1, 4.5 and later 4.x
	{"anthropic.claude-haiku-4", true},  // Haiku 4.5
	{"amazon.nova-micro", false},
	{"amazon.nova-lite", false},
	{"amazon.nova-pro", false},
	{"amazon.nova-premier", false},
}

// caching reports where a target's requests may carry cache points: after
// messages and system blocks, and after tools.
func caching(model string, opts map[string]string) (messages, tools bool) {
	switch opts["prompt_caching"] {
	case "on":
		return true, true
	case "off":
		return false, false
	}
	base := baseModel(model, opts)
	for _, m := range promptCaching {
		if base != "" && strings.HasPrefix(base, m.prefix) {
			return true, m.tools
		}
	}
	return false, false
}

// claude reports whether a target's model is one of Anthropic's (the base
// model anthropic.claude-...), which take the Messages API's thinking
// configuration and top_k as additional model request fields, and signed
// reasoning back in the conversation.
func claude(model string, opts map[string]string) bool {
	return strings.HasPrefix(baseModel(model, opts), "anthropic.claude")
}

// baseModel is a target's base model: its base_model option, else its
// model id without an inference-profile prefix ("" for an ARN that names
// no base model).
func baseModel(model string, opts map[string]string) string {
	if b := opts["base_model"]; b != "" {
		return b
	}
	return modelid.Base(model)
}
