package responses

import (
	"encoding/json"
	"strings"

	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// Translation, Responses request -> canonical chat form (what every
// translating adapter reads):
//
//	instructions                         -> a first system message
//	input "text"                         -> one user message
//	message items (user, assistant)      -> chat messages of the same role
//	message items (system, developer)    -> system messages (every chat upstream knows system)
//	input_text / output_text parts       -> text parts (one text part: a plain string)
//	input_image (image_url)              -> image_url parts
//	input_file (file_data or file_id)    -> file parts
//	function_call                        -> assistant tool_calls (merged into the assistant turn before it)
//	function_call_output                 -> a tool message
//	reasoning items                      -> dropped: chat has no field for them
//	function tools, tool_choice          -> chat tools, tool_choice
//	namespace tools                      -> their functions, named namespace__function
//	parallel_tool_calls, temperature, top_p, user -> the same fields
//	text.format                          -> response_format (json_object, json_schema)
//	max_output_tokens                    -> max_completion_tokens
//	reasoning.effort                     -> reasoning_effort
//
// Hints that chat cannot carry and that change no semantics are dropped:
// text.verbosity, reasoning.summary, include, prompt_cache_key,
// service_tier, truncation, store (the gateway stores nothing; translated
// responses report store false). Everything else a translation cannot
// honour (built-in and custom tools, stored state, file references, item
// types the gateway does not know) is recorded as NativeOnly: only an
// upstream that speaks the Responses API natively may serve the request.

// translate builds d.chat from d.wire.
func (d *decoded) translate() error {
	w := &d.wire
	c := &chatwire.ChatRequest{
		Model:               w.Model,
		MaxCompletionTokens: w.MaxOutputTokens,
		Temperature:         w.Temperature,
		TopP:                w.TopP,
		ParallelToolCalls:   w.ParallelToolCalls,
	}
	if w.Stream != nil {
		c.Stream = *w.Stream
	}
	if w.User != nil {
		c.User = *w.User
	}
	if w.Reasoning != nil && w.Reasoning.Effort != nil {
		c.ReasoningEffort = *w.Reasoning.Effort
	}
	if w.Instructions != nil && *w.Instructions != "" {
		c.Messages = append(c.Messages, chatwire.Message{Role: "system", Content: chatwire.Content{Text: *w.Instructions}})
	}
	d.chat = c
	if err := d.input(); err != nil {
		return err
	}
	if err := d.tools(); err != nil {
		return err
	}
	if err := d.toolChoice(); err != nil {
		return err
	}
	if err := d.format(); err != nil {
		return err
	}
	if len(c.Messages) == 0 && d.native == nil {
		return bad("input", "input holds no message to send")
	}
	return nil
}

// input translates the input: a string, or an array of items.
func (d *decoded) input() error {
	raw := d.wire.Input
	switch kindOf(raw) {
	case 0, 'n':
		return nil
	case '"':
		var s string
		if err := unmarshalAt("input", raw, &s); err != nil {
			return err
		}
		d.chat.Messages = append(d.chat.Messages, chatwire.Message{Role: "user", Content: chatwire.Content{Text: s}})
		return nil
	case '[':
	default:
		return bad("input", "input must be a string or an array of input items")
	}
	var items []json.RawMessage
	if err := unmarshalAt("input", raw, &items); err != nil {
		return err
	}
	for i, rawItem := range items {
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

// item translates one input item.
func (d *decoded) item(p string, it *wireItem) error {
	msgs := &d.chat.Messages
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
		if it.Arguments != nil && *it.Arguments != "" {
			args = *it.Arguments
		}
		name := it.Name
		if it.Namespace != "" {
			name = it.Namespace + NamespaceSep + it.Name
		}
		call := chatwire.ToolCall{ID: it.CallID, Type: "function", Function: chatwire.FunctionCall{Name: name, Arguments: args}}
		if n := len(*msgs); n > 0 && (*msgs)[n-1].Role == "assistant" {
			(*msgs)[n-1].ToolCalls = append((*msgs)[n-1].ToolCalls, call)
			return nil
		}
		*msgs = append(*msgs, chatwire.Message{Role: "assistant", Content: chatwire.Content{Null: true}, ToolCalls: []chatwire.ToolCall{call}})
		return nil
	case "function_call_output":
		if it.CallID == "" {
			return bad(p+".call_id", "%s: a function_call_output needs call_id", p)
		}
		text, err := d.callOutput(p, it.Output)
		if err != nil {
			return err
		}
		*msgs = append(*msgs, chatwire.Message{Role: "tool", ToolCallID: it.CallID, Content: chatwire.Content{Text: text}})
		return nil
	case "reasoning":
		return nil
	case "item_reference":
		d.nativeOnly(p, "an item_reference (a stored item)", whyState)
		return nil
	}
	d.nativeOnly(p, "an input item of type "+it.Type, whyNative)
	return nil
}

// message translates a message item.
func (d *decoded) message(p string, it *wireItem) error {
	role := it.Role
	switch role {
	case "user", "assistant":
	case "system", "developer":
		role = "system"
	case "":
		return bad(p+".role", "%s: a message needs role", p)
	default:
		return bad(p+".role", "%s.role %q is not one of user, assistant, system, developer", p, it.Role)
	}
	m := chatwire.Message{Role: role}
	switch kindOf(it.Content) {
	case '"':
		if err := unmarshalAt(p+".content", it.Content, &m.Content.Text); err != nil {
			return err
		}
	case '[':
		var parts []wirePart
		if err := unmarshalAt(p+".content", it.Content, &parts); err != nil {
			return err
		}
		out, err := d.parts(p+".content", parts)
		if err != nil {
			return err
		}
		if len(out) == 1 && out[0].Type == "text" {
			m.Content.Text = out[0].Text
		} else {
			m.Content = chatwire.Content{Parts: out, IsParts: true}
		}
	default:
		return bad(p+".content", "%s.content must be a string or an array of content parts", p)
	}
	d.chat.Messages = append(d.chat.Messages, m)
	return nil
}

// parts translates a message's content parts.
func (d *decoded) parts(p string, parts []wirePart) ([]chatwire.ContentPart, error) {
	out := make([]chatwire.ContentPart, 0, len(parts))
	for j, part := range parts {
		pp := at("%s[%d]", p, j)
		switch part.Type {
		case "input_text", "output_text":
			if part.Text == nil {
				return nil, bad(pp+".text", "%s: a %s part needs text", pp, part.Type)
			}
			out = append(out, chatwire.ContentPart{Type: "text", Text: *part.Text})
		case "refusal":
			out = append(out, chatwire.ContentPart{Type: "text", Text: part.Refusal})
		case "input_image":
			switch {
			case part.ImageURL != "":
				out = append(out, chatwire.ContentPart{Type: "image_url", ImageURL: &chatwire.ImageURL{URL: part.ImageURL, Detail: part.Detail}})
			case part.FileID != "":
				d.nativeOnly(pp, "an input_image given by file_id", whyNative)
			default:
				return nil, bad(pp+".image_url", "%s: an input_image needs image_url or file_id", pp)
			}
		case "input_file":
			f := map[string]string{}
			switch {
			case part.FileData != "":
				f["file_data"] = part.FileData
				if part.Filename != "" {
					f["filename"] = part.Filename
				}
			case part.FileID != "":
				f["file_id"] = part.FileID
			case part.FileURL != "":
				d.nativeOnly(pp, "an input_file given by file_url", whyNative)
				continue
			default:
				return nil, bad(pp, "%s: an input_file needs file_data, file_id or file_url", pp)
			}
			raw, _ := json.Marshal(f)
			out = append(out, chatwire.ContentPart{Type: "file", File: raw})
		case "":
			return nil, bad(pp+".type", "%s: a content part needs type", pp)
		default:
			d.nativeOnly(pp, "a content part of type "+part.Type, whyNative)
		}
	}
	return out, nil
}

// callOutput returns a function_call_output's output as text.
func (d *decoded) callOutput(p string, raw json.RawMessage) (string, error) {
	switch kindOf(raw) {
	case '"':
		var s string
		err := unmarshalAt(p+".output", raw, &s)
		return s, err
	case '[':
	default:
		return "", bad(p+".output", "%s.output must be a string or an array of content parts", p)
	}
	var parts []wirePart
	if err := unmarshalAt(p+".output", raw, &parts); err != nil {
		return "", err
	}
	var sb strings.Builder
	for j, part := range parts {
		pp := at("%s.output[%d]", p, j)
		switch {
		case part.Type == "input_text" || part.Type == "output_text":
			if part.Text != nil {
				sb.WriteString(*part.Text)
			}
		case part.Type == "":
			return "", bad(pp+".type", "%s: a content part needs type", pp)
		default:
			// A chat tool message carries text only.
			d.nativeOnly(pp, "a function_call_output part of type "+part.Type, whyNative)
		}
	}
	return sb.String(), nil
}
