package messageswire

import (
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// Variant is how a target's prompt variant edits a Messages body
// (chatwire.ApplyVariantMembers): the system member (a string, or text
// blocks), and max_tokens. The adapters that send a client's Messages body
// on (Anthropic's passthrough, Claude on Bedrock's InvokeModel) share it.
var Variant = chatwire.MemberVariant{Prompt: "system", MaxTokens: "max_tokens",
	Block: func(text string) []byte {
		return append(append([]byte(`{"type":"text","text":`), jsonb.AppendString(nil, text)...), '}')
	}}
