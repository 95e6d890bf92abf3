package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// The canonical Prompt of a Converse or ConverseStream request, decoded in
// one hop:
//
//	system text (cachePoint after it)   -> Prompt.System (Cache)
//	user and assistant messages         -> messages of those roles, blocks in order:
//	  text                              -> BlockText
//	  image bytes / s3Location          -> BlockImage: bytes and image/<format> / the s3:// URI
//	  document bytes / text / s3Location -> BlockDocument: bytes and the format's media type
//	                                       (text: text/plain) / URI; name -> Title, context,
//	                                       citations.enabled -> AskCitations
//	  toolUse                           -> BlockToolUse (input as compact JSON)
//	  toolResult                        -> BlockToolResult (text, json as its text, image,
//	                                       document; status error -> IsError)
//	  reasoningContent reasoningText    -> BlockThinking (text, signature byte-exact)
//	  reasoningContent redactedContent  -> BlockRedactedThinking (its bytes)
//	  cachePoint                        -> the Cache of the block before it (ttl kept)
//	inferenceConfig                     -> Sampling (maxTokens, temperature, topP, stopSequences)
//	toolConfig.tools toolSpec           -> ToolFunction (inputSchema.json, strict; cachePoint
//	                                       -> the Cache of the tool before it)
//	toolConfig.toolChoice auto/any/tool -> ToolAuto/ToolAny/ToolNamed
//	additionalModelRequestFields        -> thinking (enabled with budget_tokens, adaptive,
//	                                       disabled) -> Output.Reasoning; top_k -> Sampling.TopK
//	requestMetadata                     -> Prompt.Metadata
//
// Untranslated (exchange.Request.Untranslated; every target that does not
// speak Converse refuses the request naming the feature, unless the
// route's translate_without lets it drop): guardrailConfig,
// promptVariables, additionalModelResponseFieldPaths, performanceConfig,
// serviceTier, outputConfig, other additionalModelRequestFields members,
// systemTool tools, and the video, audio, guardContent, citationsContent,
// searchResult, toolAddition and toolRemoval blocks. A member the service
// model does not define is a ValidationException, as Bedrock answers it.

// maxDepth bounds the nesting of a request body.
const maxDepth = 64

// bad is the ValidationException for a field.
func bad(param, format string, args ...any) *gwerr.Error {
	return gwerr.New(gwerr.InvalidRequest, format, args...).WithParam(param)
}

// untranslatedMembers are the top-level members a Prompt cannot hold.
var untranslatedMembers = map[string]string{
	"guardrailConfig": "Bedrock guardrails", "promptVariables": "prompt variables",
	"additionalModelResponseFieldPaths": "additional model response fields", "performanceConfig": "latency-optimized inference",
	"serviceTier": "a service tier", "outputConfig": "structured output and effort (outputConfig)",
}

// promptConv decodes a Converse request into a Prompt.
type promptConv struct {
	p    *exchange.Prompt
	lost []exchange.Feature
}

func (c *promptConv) lose(param, what string) {
	c.lost = append(c.lost, exchange.Feature{Param: param, Key: exchange.FeatureKey(param), What: what})
}

// checkBody refuses a body that is not one JSON object of valid UTF-8 no
// deeper than maxDepth, or that repeats a member, and returns its member
// names in order.
func checkBody(body []byte) ([]string, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, gwerr.New(gwerr.InvalidRequest, "request body is empty; expected a JSON object")
	}
	if !utf8.Valid(body) || !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return nil, gwerr.New(gwerr.InvalidRequest, "Malformed input request: the body is not a JSON object, please reformat your input and try again.")
	}
	if jsonb.Depth(body) > maxDepth {
		return nil, gwerr.New(gwerr.InvalidRequest, "request JSON is nested more than %d levels deep", maxDepth)
	}
	var keys []string
	var dup string
	jsonb.Members(string(body), func(k, _ string) bool {
		if slices.Contains(keys, k) {
			dup = k
			return false
		}
		keys = append(keys, k)
		return true
	})
	if dup != "" {
		return nil, bad(dup, "Malformed input request: key [%s] appears more than once", dup)
	}
	return keys, nil
}

// decodeConverse validates a Converse body (only members the service
// model defines for it: allowed) and decodes its Prompt.
func decodeConverse(body []byte, allowed []string) (*exchange.Prompt, []exchange.Feature, error) {
	keys, err := checkBody(body)
	if err != nil {
		return nil, nil, err
	}
	c := &promptConv{p: &exchange.Prompt{}}
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			return nil, nil, bad(k, "Malformed input request: extraneous key [%s] is not permitted, please reformat your input and try again.", k)
		}
		if what, ok := untranslatedMembers[k]; ok {
			c.lose(k, what)
		}
	}
	// Then the refusal every ingress shares: duplicate or case-variant
	// keys at any depth.
	if err := jsonb.CheckKeys(body); err != nil {
		return nil, nil, err
	}
	var r bedrockwire.ConverseRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&r); err != nil {
		return nil, nil, decodeError(err)
	}
	if len(r.Messages) == 0 {
		return nil, nil, bad("messages", "messages: must contain at least one message")
	}
	if err := c.system(r.System); err != nil {
		return nil, nil, err
	}
	for i := range r.Messages {
		if err := c.message(fmt.Sprintf("messages[%d]", i), &r.Messages[i]); err != nil {
			return nil, nil, err
		}
	}
	if err := c.inference(r.InferenceConfig); err != nil {
		return nil, nil, err
	}
	if err := c.tools(r.ToolConfig); err != nil {
		return nil, nil, err
	}
	if err := c.additional(r.AdditionalModelRequestFields); err != nil {
		return nil, nil, err
	}
	if len(r.RequestMetadata) > 0 {
		c.p.Metadata = r.RequestMetadata
	}
	return c.p, c.lost, nil
}

// decodeError names the field of a decoding error.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "body"
		}
		return bad(field, "%s: wrong type: got JSON %s", field, te.Value)
	}
	return gwerr.New(gwerr.InvalidRequest, "Malformed input request: %s", gwerr.Redact(err.Error()))
}

// cache is the breakpoint of a cachePoint.
func cache(p string, cp *bedrockwire.CachePoint) (*exchange.CacheBreakpoint, error) {
	if cp.Type != "default" {
		return nil, bad(p+".type", "%s.type: must be default", p)
	}
	switch cp.TTL {
	case "", "5m", "1h":
	default:
		return nil, bad(p+".ttl", "%s.ttl: must be 5m or 1h", p)
	}
	return &exchange.CacheBreakpoint{TTL: cp.TTL}, nil
}

// attach puts a cachePoint's breakpoint on the last block of bs.
func attach(p string, bs []exchange.Block, cp *bedrockwire.CachePoint) error {
	bp, err := cache(p, cp)
	if err != nil {
		return err
	}
	if len(bs) == 0 {
		return bad(p, "%s: a cachePoint must follow a content block", p)
	}
	bs[len(bs)-1].Cache = bp
	return nil
}

func (c *promptConv) system(sys []bedrockwire.SystemBlock) error {
	for i, b := range sys {
		p := fmt.Sprintf("system[%d]", i)
		switch {
		case b.Text != nil:
			if strings.TrimSpace(*b.Text) == "" {
				return bad(p+".text", "%s.text: must not be blank", p)
			}
			c.p.System = append(c.p.System, exchange.Block{Type: exchange.BlockText, Text: *b.Text})
		case b.CachePoint != nil:
			if err := attach(p+".cachePoint", c.p.System, b.CachePoint); err != nil {
				return err
			}
		case len(b.GuardContent) > 0:
			c.lose(p+".guardContent", "guardrail content")
		default:
			return bad(p, "%s: must set exactly one of text, cachePoint, guardContent", p)
		}
	}
	return nil
}

func (c *promptConv) message(p string, m *bedrockwire.Message) error {
	var role exchange.Role
	switch m.Role {
	case "user":
		role = exchange.RoleUser
	case "assistant":
		role = exchange.RoleAssistant
	default:
		return bad(p+".role", "%s.role: must be user or assistant, got %q", p, m.Role)
	}
	if len(m.Content) == 0 {
		return bad(p+".content", "%s.content: must contain at least one content block", p)
	}
	msg := exchange.Message{Role: role}
	for j := range m.Content {
		bs, err := c.block(fmt.Sprintf("%s.content[%d]", p, j), &m.Content[j], msg.Content)
		if err != nil {
			return err
		}
		msg.Content = bs
	}
	c.p.Messages = append(c.p.Messages, msg)
	return nil
}

// block decodes one content block, appending it to bs (a cachePoint marks
// the last block of bs instead).
func (c *promptConv) block(p string, b *bedrockwire.ContentBlock, bs []exchange.Block) ([]exchange.Block, error) {
	if n := members(b); n != 1 {
		return nil, bad(p, "%s: a content block must set exactly one member, got %d", p, n)
	}
	switch {
	case b.Text != nil:
		return append(bs, exchange.Block{Type: exchange.BlockText, Text: *b.Text}), nil
	case b.Image != nil:
		ib, err := image(p+".image", b.Image)
		if err != nil {
			return nil, err
		}
		return append(bs, ib), nil
	case b.Document != nil:
		db, err := document(p+".document", b.Document)
		if err != nil {
			return nil, err
		}
		return append(bs, db), nil
	case b.ToolUse != nil:
		tu := b.ToolUse
		if tu.ToolUseID == "" || tu.Name == "" {
			return nil, bad(p+".toolUse", "%s.toolUse: toolUseId and name are required", p)
		}
		input := bytes.TrimSpace(tu.Input)
		if len(input) == 0 || string(input) == "null" {
			input = []byte("{}")
		}
		var compact bytes.Buffer
		if json.Compact(&compact, input) == nil {
			input = compact.Bytes()
		}
		return append(bs, exchange.Block{Type: exchange.BlockToolUse, ToolID: tu.ToolUseID, ToolName: tu.Name, Input: input}), nil
	case b.ToolResult != nil:
		tb, err := c.toolResult(p+".toolResult", b.ToolResult)
		if err != nil {
			return nil, err
		}
		return append(bs, tb), nil
	case b.ReasoningContent != nil:
		rc := b.ReasoningContent
		switch {
		case rc.ReasoningText != nil:
			return append(bs, exchange.Block{Type: exchange.BlockThinking, Text: rc.ReasoningText.Text, Signature: rc.ReasoningText.Signature}), nil
		case len(rc.RedactedContent) > 0:
			return append(bs, exchange.Block{Type: exchange.BlockRedactedThinking, Data: rc.RedactedContent}), nil
		}
		return nil, bad(p+".reasoningContent", "%s.reasoningContent: must set reasoningText or redactedContent", p)
	case b.CachePoint != nil:
		return bs, attach(p+".cachePoint", bs, b.CachePoint)
	}
	for name, raw := range map[string]json.RawMessage{"video": b.Video, "audio": b.Audio, "guardContent": b.GuardContent,
		"citationsContent": b.CitationsContent, "searchResult": b.SearchResult, "toolAddition": b.ToolAddition, "toolRemoval": b.ToolRemoval} {
		if len(raw) > 0 {
			c.lose(p+"."+name, "a "+name+" content block")
		}
	}
	return bs, nil
}

// members counts the members a content block sets.
func members(b *bedrockwire.ContentBlock) int {
	n := 0
	for _, set := range []bool{b.Text != nil, b.Image != nil, b.Document != nil, b.ToolUse != nil, b.ToolResult != nil,
		b.ReasoningContent != nil, b.CachePoint != nil, len(b.Video) > 0, len(b.Audio) > 0, len(b.GuardContent) > 0,
		len(b.CitationsContent) > 0, len(b.SearchResult) > 0, len(b.ToolAddition) > 0, len(b.ToolRemoval) > 0} {
		if set {
			n++
		}
	}
	return n
}
