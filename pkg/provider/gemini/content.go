package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// The conversation's translation (see request.go for what is translated,
// rejected and ignored): messages into turns of parts, and the system
// instruction.

// Gemini's roles.
const (
	roleUser  = "user"
	roleModel = "model"
)

// filesAPIPrefix is where the Files API keeps uploads: the only http(s)
// URLs Gemini reads (as fileData).
const filesAPIPrefix = "https://generativelanguage.googleapis.com/"

// messages translates the conversation and the system prompt.
func (t *translator) messages(out *request, msgs []chatwire.Message) error {
	names := map[string]string{} // tool call id -> function name
	for i, m := range msgs {
		p := fmt.Sprintf("messages[%d]", i)
		var role string
		var parts []part
		var err error
		switch m.Role {
		case "system", "developer":
			parts, err = t.parts(p, m.Content, false)
			if err != nil {
				return err
			}
			if len(parts) > 0 {
				if out.SystemInstruction == nil {
					out.SystemInstruction = &content{}
				}
				out.SystemInstruction.Parts = append(out.SystemInstruction.Parts, parts...)
			}
			continue
		case "user":
			role = roleUser
			parts, err = t.parts(p, m.Content, true)
		case "assistant":
			role = roleModel
			parts, err = t.assistant(p, m, names)
		case "tool":
			role = roleUser
			parts, err = t.toolResult(p, m, names)
		default:
			return t.unsupported(p+".role", fmt.Sprintf("role %q (legacy function calling; use tools)", m.Role))
		}
		if err != nil {
			return err
		}
		if len(parts) == 0 {
			return t.invalid(p+".content", "%s has no content; Gemini requires every turn to have at least one part", p)
		}
		if n := len(out.Contents); n > 0 && out.Contents[n-1].Role == role {
			out.Contents[n-1].Parts = append(out.Contents[n-1].Parts, parts...)
			continue
		}
		out.Contents = append(out.Contents, content{Role: role, Parts: parts})
	}
	if len(out.Contents) == 0 {
		return t.invalid("messages", "messages has only system or developer messages; Gemini needs at least one user message")
	}
	for i := range out.Contents {
		if out.Contents[i].Role == roleUser {
			responsesFirst(out.Contents[i].Parts)
		}
	}
	return nil
}

// responsesFirst moves functionResponse parts before the other parts of a
// user turn, keeping both groups' order: the answers to the model's calls
// lead the turn that follows them.
func responsesFirst(ps []part) {
	sorted := make([]part, 0, len(ps))
	for _, p := range ps {
		if p.FunctionResponse != nil {
			sorted = append(sorted, p)
		}
	}
	for _, p := range ps {
		if p.FunctionResponse == nil {
			sorted = append(sorted, p)
		}
	}
	copy(ps, sorted)
}

// parts translates a message's content. Empty text is dropped. media
// allows images, audio and files.
func (t *translator) parts(p string, c chatwire.Content, media bool) ([]part, error) {
	if !c.IsParts {
		if c.Text == "" {
			return nil, nil
		}
		return []part{{Text: c.Text}}, nil
	}
	out := make([]part, 0, len(c.Parts))
	for j, cp := range c.Parts {
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		switch cp.Type {
		case "text", "refusal":
			txt := cp.Text
			if cp.Type == "refusal" {
				txt = cp.Refusal
			}
			if txt != "" {
				out = append(out, part{Text: txt})
			}
			continue
		}
		if !media {
			return nil, t.unsupported(pp, fmt.Sprintf("a %s part in a system or assistant message", cp.Type))
		}
		var np part
		var err error
		switch cp.Type {
		case "image_url":
			np, err = t.image(pp+".image_url.url", cp.ImageURL.URL)
		case "input_audio":
			np, err = t.audio(pp+".input_audio", cp.InputAudio)
		case "file":
			np, err = t.file(pp+".file", cp.File)
		default:
			return nil, t.unsupported(pp, fmt.Sprintf("content part type %q", cp.Type))
		}
		if err != nil {
			return nil, err
		}
		out = append(out, np)
	}
	return out, nil
}

// image translates an image URL: a base64 data URL becomes inlineData, a
// Files API URI fileData; other URLs are rejected (Gemini does not fetch
// them).
func (t *translator) image(p, u string) (part, error) {
	if strings.HasPrefix(u, "data:") {
		mt, data, ok := parseDataURL(u)
		if !ok {
			return part{}, t.invalid(p, "%s is a data URL that is not base64 (want data:<media type>;base64,<data>)", p)
		}
		return part{InlineData: &blob{MimeType: mt, Data: data}}, nil
	}
	if strings.HasPrefix(u, filesAPIPrefix) {
		return part{FileData: &fileData{FileURI: u}}, nil
	}
	if l := strings.ToLower(u); strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://") {
		return part{}, t.unsupported(p, "an image at an http(s) URL (send it as a base64 data URL; Gemini reads only inline data and Files API URIs)")
	}
	return part{}, t.invalid(p, "%s must be a base64 data URL or a Files API URI", p)
}

// audio translates an input_audio part ({data, format}).
func (t *translator) audio(p string, raw json.RawMessage) (part, error) {
	var a struct {
		Data   string `json:"data"`
		Format string `json:"format"`
	}
	if err := json.Unmarshal(raw, &a); err != nil || a.Data == "" || a.Format == "" {
		return part{}, t.invalid(p, "%s needs data and format", p)
	}
	return part{InlineData: &blob{MimeType: "audio/" + strings.ToLower(a.Format), Data: a.Data}}, nil
}

// file translates a file part given inline as a data URL.
func (t *translator) file(p string, raw json.RawMessage) (part, error) {
	var f struct {
		FileData string `json:"file_data"`
	}
	_ = json.Unmarshal(raw, &f)
	mt, data, ok := parseDataURL(f.FileData)
	if !ok {
		return part{}, t.unsupported(p, "a file part other than a base64 data URL (file_id)")
	}
	return part{InlineData: &blob{MimeType: mt, Data: data}}, nil
}

// parseDataURL splits data:<media type>[;params];base64,<data>.
func parseDataURL(u string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", false
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", false
	}
	params := strings.Split(meta, ";")
	if len(params) < 2 || !strings.EqualFold(params[len(params)-1], "base64") || params[0] == "" {
		return "", "", false
	}
	return strings.ToLower(params[0]), data, true
}

// assistant translates an assistant turn: its text, then its tool calls as
// functionCall parts (the first with the placeholder signature), noting
// each call's function name for the tool messages that answer it.
func (t *translator) assistant(p string, m chatwire.Message, names map[string]string) ([]part, error) {
	parts, err := t.parts(p, m.Content, false)
	if err != nil {
		return nil, err
	}
	if m.Refusal != nil && *m.Refusal != "" && len(parts) == 0 {
		parts = append(parts, part{Text: *m.Refusal})
	}
	for j, tc := range m.ToolCalls {
		pp := fmt.Sprintf("%s.tool_calls[%d]", p, j)
		if tc.Type != "" && tc.Type != "function" {
			return nil, t.unsupported(pp+".type", fmt.Sprintf("tool call type %q", tc.Type))
		}
		if tc.Function.Name == "" {
			return nil, t.invalid(pp, "%s needs a function name", pp)
		}
		args := bytes.TrimSpace([]byte(tc.Function.Arguments))
		if len(args) == 0 {
			args = []byte("{}")
		}
		if !json.Valid(args) || args[0] != '{' {
			return nil, t.invalid(pp+".function.arguments", "%s.function.arguments is not a JSON object", pp)
		}
		names[tc.ID] = tc.Function.Name
		np := part{FunctionCall: &functionCall{Name: tc.Function.Name, Args: args}}
		if j == 0 {
			np.ThoughtSignature = skipSignature
		}
		parts = append(parts, np)
	}
	return parts, nil
}

// toolResult translates a tool message into a functionResponse part named
// after the call it answers.
func (t *translator) toolResult(p string, m chatwire.Message, names map[string]string) ([]part, error) {
	name, ok := names[m.ToolCallID]
	if !ok {
		return nil, t.invalid(p+".tool_call_id", "%s answers tool call %q, which no earlier assistant message made (Gemini needs the function's name)", p, m.ToolCallID)
	}
	for j, cp := range m.Content.Parts {
		if cp.Type != "text" {
			return nil, t.unsupported(fmt.Sprintf("%s.content[%d]", p, j), fmt.Sprintf("a %s part in a tool result (Gemini takes JSON results)", cp.Type))
		}
	}
	text := m.Content.PlainText()
	resp := json.RawMessage(bytes.TrimSpace([]byte(text)))
	if len(resp) == 0 || resp[0] != '{' || !json.Valid(resp) {
		resp, _ = json.Marshal(map[string]string{"result": text})
	}
	return []part{{FunctionResponse: &functionResponse{Name: name, Response: resp}}}, nil
}
