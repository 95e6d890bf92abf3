package responses

import (
	"encoding/json"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// The canonical Prompt of a Responses request (exchange.Request.Prompt,
// what every translating adapter reads):
//
//	instructions                          -> System (one text block)
//	input "text"                          -> one user message
//	message items (user, assistant)       -> messages of the same role
//	message items (system, developer)     -> System while they lead the conversation,
//	                                         RoleSystem messages at their place after that
//	input_text / output_text parts        -> text blocks
//	refusal parts                         -> refusal blocks
//	input_image (a data URL)              -> an image block: bytes and media type
//	input_image (an http(s) URL)          -> an image block by URL; detail kept
//	input_file (file_data, file_url)      -> a document block: bytes and media type
//	                                         (or URL) with its filename
//	reasoning items                       -> thinking: the summaries as one thinking
//	                                         block's text, encrypted_content as a
//	                                         redacted thinking block's data (opaque,
//	                                         byte-exact), in the assistant turn they open
//	function_call                         -> a tool use block of the assistant turn
//	                                         before it (arguments as sent)
//	function_call_output                  -> a tool result block of a user turn
//	                                         (text, images, files); consecutive outputs
//	                                         share the turn
//	function tools                        -> ToolFunction (parameters, strict)
//	namespace tools                       -> their functions, named namespace__function
//	custom tools                          -> ToolCustom (the client's definition in Raw)
//	built-in tools (web_search, mcp, ...) -> ToolBuiltin (Type, Raw)
//	tool_choice none/auto/required/function/custom -> ToolNone/ToolAuto/ToolAny/ToolNamed
//	parallel_tool_calls false             -> ToolChoice.NoParallel
//	text.format                           -> Output.Format (json_object, json_schema with
//	                                         its name, schema, strict)
//	reasoning.effort, reasoning.summary   -> Output.Reasoning.Effort, .Summary
//	max_output_tokens, temperature, top_p -> Sampling
//	user, metadata                        -> User, Metadata
//
// Untranslated (only an upstream that speaks the Responses API may serve
// them): stored state (previous_response_id, conversation, background,
// prompt, item_reference items), files and images given by file_id,
// top_logprobs, tool_choice of another type (allowed_tools, a built-in
// tool), item and content part types the gateway does not know, and a
// namespaced function whose flat name is longer than a chat function name
// may be. Hints that change no semantics are dropped: text.verbosity,
// text.format's description, include, prompt_cache_key, service_tier,
// truncation, store.

// promptDecoder builds the Prompt of one request and the features it
// cannot carry (the first one recorded is the one reported).
type promptDecoder struct {
	w    *wireRequest
	p    *exchange.Prompt
	lost []exchange.Feature
	// said is true once the input held a turn with something to answer
	// (not only reasoning).
	said bool
}

func (d *promptDecoder) lose(param, name, why string) {
	if d.lost == nil {
		d.lost = append(d.lost, exchange.Feature{Param: param, What: name, Why: why})
	}
}

func text(s string) exchange.Block { return exchange.Block{Type: exchange.BlockText, Text: s} }

// toPrompt builds the Prompt of a validated request. native are the
// stateful features validate found.
func toPrompt(w *wireRequest, native []exchange.Feature) (*exchange.Prompt, []exchange.Feature, error) {
	d := &promptDecoder{w: w, p: &exchange.Prompt{}, lost: native}
	p := d.p
	if w.Instructions != nil && *w.Instructions != "" {
		p.System = []exchange.Block{text(*w.Instructions)}
	}
	if w.MaxOutputTokens != nil {
		p.Sampling.MaxTokens = *w.MaxOutputTokens
	}
	p.Sampling.Temperature, p.Sampling.TopP = w.Temperature, w.TopP
	if w.User != nil {
		p.User = *w.User
	}
	if len(w.Metadata) > 0 {
		p.Metadata = w.Metadata
	}
	if r := w.Reasoning; r != nil {
		if r.Effort != nil {
			p.Output.Reasoning.Effort = *r.Effort
		}
		if r.Summary != nil {
			p.Output.Reasoning.Summary = *r.Summary
		}
	}
	steps := []func() error{d.input, d.tools, d.toolChoice, d.format}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, nil, err
		}
	}
	if w.ParallelToolCalls != nil && !*w.ParallelToolCalls {
		p.ToolChoice.NoParallel = true
	}
	if !d.said && d.lost == nil {
		return nil, nil, bad("input", "input holds no message to send")
	}
	return p, d.lost, nil
}

// input decodes the input: a string, or an array of items.
func (d *promptDecoder) input() error {
	raw := d.w.Input
	switch kindOf(raw) {
	case 0, 'n':
		return nil
	case '"':
		s, err := unquoteAt("input", raw)
		if err != nil {
			return err
		}
		d.p.Messages = append(d.p.Messages, exchange.Message{Role: exchange.RoleUser, Content: []exchange.Block{text(s)}})
		d.said = true
		return nil
	case '[':
	default:
		return bad("input", "input must be a string or an array of input items")
	}
	// The body was validated as a whole, so the array's items are taken
	// as they are in it (no second scan, no copies).
	i := -1
	for rawItem := range jsonb.Elements(raw) {
		i++
		p := at("input[%d]", i)
		if kindOf(rawItem) != '{' {
			return bad(p, "%s must be an object", p)
		}
		var it wireItem
		if err := unmarshalAt(p, rawItem, &it); err != nil {
			return err
		}
		if err := d.item(p, &it); err != nil {
			return err
		}
	}
	return nil
}

// last returns the last message when it has role r, else nil.
func (d *promptDecoder) last(r exchange.Role) *exchange.Message {
	if n := len(d.p.Messages); n > 0 && d.p.Messages[n-1].Role == r {
		return &d.p.Messages[n-1]
	}
	return nil
}

// appendTo adds blocks to the last message when it has role r (and, for
// join, may take them), else to a new message of role r.
func (d *promptDecoder) appendTo(r exchange.Role, join func(*exchange.Message) bool, blocks ...exchange.Block) {
	if m := d.last(r); m != nil && join(m) {
		m.Content = append(m.Content, blocks...)
		return
	}
	d.p.Messages = append(d.p.Messages, exchange.Message{Role: r, Content: blocks})
}

func always(*exchange.Message) bool { return true }

// onlyThinking reports whether a message holds only reasoning: the turn a
// reasoning item opened, which the assistant's message then continues.
func onlyThinking(m *exchange.Message) bool {
	for _, b := range m.Content {
		if b.Type != exchange.BlockThinking && b.Type != exchange.BlockRedactedThinking {
			return false
		}
	}
	return true
}

// onlyResults reports whether a user message holds only tool results.
func onlyResults(m *exchange.Message) bool {
	for _, b := range m.Content {
		if b.Type != exchange.BlockToolResult {
			return false
		}
	}
	return true
}

// item decodes one input item.
func (d *promptDecoder) item(p string, it *wireItem) error {
	switch it.Type {
	case "", "message":
		return d.message(p, it)
	case "function_call":
		if it.CallID == "" {
			return bad(p+".call_id", "%s: a function_call needs call_id", p)
		}
		if it.Name == "" {
			return bad(p+".name", "%s: a function_call needs name", p)
		}
		args := "{}"
		if it.Arguments != nil && strings.TrimSpace(*it.Arguments) != "" {
			args = *it.Arguments
		}
		name := it.Name
		if it.Namespace != "" {
			name = it.Namespace + NamespaceSep + it.Name
		}
		d.appendTo(exchange.RoleAssistant, always, exchange.Block{Type: exchange.BlockToolUse, ToolID: it.CallID, ToolName: name, Input: json.RawMessage(args)})
		d.said = true
		return nil
	case "function_call_output":
		if it.CallID == "" {
			return bad(p+".call_id", "%s: a function_call_output needs call_id", p)
		}
		content, err := d.callOutput(p, it.Output)
		if err != nil {
			return err
		}
		d.appendTo(exchange.RoleUser, onlyResults, exchange.Block{Type: exchange.BlockToolResult, ToolID: it.CallID, Content: content})
		d.said = true
		return nil
	case "reasoning":
		return d.reasoning(p, it)
	case "item_reference":
		d.lose(p, "an item_reference (a stored item)", whyState)
		return nil
	}
	d.lose(p, "an input item of type "+it.Type, whyNative)
	return nil
}

// reasoning decodes a reasoning item into the thinking that opens an
// assistant turn: its summaries (joined by a blank line) as a thinking
// block's text, its encrypted_content as a redacted thinking block.
func (d *promptDecoder) reasoning(p string, it *wireItem) error {
	var blocks []exchange.Block
	if len(it.Summary) > 0 {
		var sums []wirePart
		if err := unmarshalAt(p+".summary", it.Summary, &sums); err != nil {
			return err
		}
		parts := make([]string, 0, len(sums))
		for _, s := range sums {
			if s.Text != nil && *s.Text != "" {
				parts = append(parts, *s.Text)
			}
		}
		if len(parts) > 0 {
			blocks = append(blocks, exchange.Block{Type: exchange.BlockThinking, Text: strings.Join(parts, "\n\n"), Origin: exchange.ReasoningOpenAI})
		}
	}
	if it.EncryptedContent != "" {
		blocks = append(blocks, exchange.Block{Type: exchange.BlockRedactedThinking, Data: []byte(it.EncryptedContent), Origin: exchange.ReasoningOpenAI})
	}
	if len(blocks) > 0 {
		d.appendTo(exchange.RoleAssistant, onlyThinking, blocks...)
	}
	return nil
}

// message decodes a message item.
func (d *promptDecoder) message(p string, it *wireItem) error {
	var role exchange.Role
	switch it.Role {
	case "user":
		role = exchange.RoleUser
	case "assistant":
		role = exchange.RoleAssistant
	case "system", "developer":
		role = exchange.RoleSystem
	case "":
		return bad(p+".role", "%s: a message needs role", p)
	default:
		return bad(p+".role", "%s.role %q is not one of user, assistant, system, developer", p, it.Role)
	}
	var blocks []exchange.Block
	switch kindOf(it.Content) {
	case '"':
		s, err := unquoteAt(p+".content", it.Content)
		if err != nil {
			return err
		}
		blocks = []exchange.Block{text(s)}
	case '[':
		var parts []wirePart
		if err := unmarshalAt(p+".content", it.Content, &parts); err != nil {
			return err
		}
		var err error
		if blocks, err = d.parts(p+".content", parts); err != nil {
			return err
		}
	default:
		return bad(p+".content", "%s.content must be a string or an array of content parts", p)
	}
	if role == exchange.RoleSystem {
		for j, b := range blocks {
			if b.Type != exchange.BlockText {
				d.lose(at("%s.content[%d]", p, j), "a non-text part in a "+it.Role+" message", whyNative)
				blocks = textOnly(blocks)
				break
			}
		}
	}
	d.said = true
	if role == exchange.RoleSystem && len(d.p.Messages) == 0 {
		d.p.System = append(d.p.System, blocks...)
		return nil
	}
	if role == exchange.RoleAssistant {
		d.appendTo(role, onlyThinking, blocks...)
		return nil
	}
	d.p.Messages = append(d.p.Messages, exchange.Message{Role: role, Content: blocks})
	return nil
}
