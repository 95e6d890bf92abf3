package gemini

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// The conversation's translation (see request.go for what is translated,
// rejected and ignored): the Prompt's turns into turns of parts, and the
// system instruction.

// Gemini's roles.
const (
	roleUser  = "user"
	roleModel = "model"
)

// filesAPIPrefix is where the Files API keeps uploads: the only http(s)
// URLs Gemini reads (as fileData).
const filesAPIPrefix = "https://generativelanguage.googleapis.com/"

// SignaturePrefix marks a thinking block's signature as a thoughtSignature
// Gemini made: the adapter sends the client a Gemini signature with this
// prefix, and on the way back only a signature carrying it is returned to
// Gemini (without it, byte-exact). Other adapters' signatures never start
// with it, and other adapters can tell a Gemini signature by it.
const SignaturePrefix = exchange.GeminiSignaturePrefix

// messages translates the system prompt and the conversation.
func (t *translator) messages(out *request, p *exchange.Prompt) error {
	if err := t.system(out, "system", p.System); err != nil {
		return err
	}
	names := map[string]string{} // tool use id -> function name
	for i := range p.Messages {
		m := &p.Messages[i]
		param := fmt.Sprintf("messages[%d]", i)
		var role string
		var parts []part
		var err error
		switch m.Role {
		case exchange.RoleSystem:
			if err := t.system(out, param+".content", m.Content); err != nil {
				return err
			}
			continue
		case exchange.RoleAssistant:
			role = roleModel
			parts, err = t.assistant(param, m.Content, names)
		default:
			role = roleUser
			parts, err = t.user(param, m.Content, names)
		}
		if err != nil {
			return err
		}
		if len(parts) == 0 {
			return t.invalid(param+".content", "%s has no content; Gemini requires every turn to have at least one part", param)
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

// system appends text blocks to the system instruction.
func (t *translator) system(out *request, param string, blocks []exchange.Block) error {
	for j := range blocks {
		b := &blocks[j]
		if b.Type != exchange.BlockText {
			return t.unsupported(fmt.Sprintf("%s[%d]", param, j), "a non-text block in a system or developer message")
		}
		if b.Text == "" {
			continue
		}
		if out.SystemInstruction == nil {
			out.SystemInstruction = &content{}
		}
		out.SystemInstruction.Parts = append(out.SystemInstruction.Parts, part{Text: b.Text})
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

// user translates a user turn: text, images and documents, tool results.
func (t *translator) user(param string, blocks []exchange.Block, names map[string]string) ([]part, error) {
	out := make([]part, 0, len(blocks))
	for j := range blocks {
		b := &blocks[j]
		pp := fmt.Sprintf("%s.content[%d]", param, j)
		switch b.Type {
		case exchange.BlockText, exchange.BlockRefusal:
			if b.Text != "" {
				out = append(out, part{Text: b.Text})
			}
		case exchange.BlockImage, exchange.BlockDocument:
			np, err := t.media(pp, b)
			if err != nil {
				return nil, err
			}
			out = append(out, np)
		case exchange.BlockToolResult:
			np, err := t.toolResult(pp, b, names)
			if err != nil {
				return nil, err
			}
			out = append(out, np)
		default:
			return nil, t.unsupported(pp, "a thinking or tool use block in a user turn")
		}
	}
	return out, nil
}

// media translates an image or a document: bytes become inlineData, a
// Files API URI fileData; other URLs are unsupported (Gemini does not fetch
// them). A document's citations, title or context are refused, or dropped
// with the document kept.
func (t *translator) media(pp string, b *exchange.Block) (part, error) {
	if b.Type == exchange.BlockDocument {
		switch {
		case b.AskCitations:
			if err := t.refuse("citations", pp+".citations", "citations on a document"); err != nil {
				return part{}, err
			}
		case b.Title != "" || b.Context != "":
			if err := t.refuse("document_context", pp, "a document's title or context"); err != nil {
				return part{}, err
			}
		}
	}
	switch {
	case len(b.Data) > 0:
		return part{InlineData: &blob{MimeType: b.MediaType, Data: base64.StdEncoding.EncodeToString(b.Data)}}, nil
	case strings.HasPrefix(b.URL, filesAPIPrefix):
		return part{FileData: &fileData{MimeType: b.MediaType, FileURI: b.URL}}, nil
	}
	what := "an image"
	if b.Type == exchange.BlockDocument {
		what = "a document"
	}
	return part{}, t.unsupported(pp, what+" at an http(s) URL (send its bytes; Gemini reads only inline data and Files API URIs)")
}

// assistant translates a model turn: text, thought parts, function calls.
// A Gemini signature goes on the part that follows its thinking block;
// the first function call without one gets the placeholder.
func (t *translator) assistant(param string, blocks []exchange.Block, names map[string]string) ([]part, error) {
	var out []part
	sig := ""       // a Gemini signature waiting for its part
	signed := false // a function call of this turn carries a signature
	for j := range blocks {
		b := &blocks[j]
		pp := fmt.Sprintf("%s.content[%d]", param, j)
		var np part
		switch b.Type {
		case exchange.BlockText, exchange.BlockRefusal:
			if b.Text == "" {
				continue
			}
			np = part{Text: b.Text}
		case exchange.BlockThinking:
			s, ok := strings.CutPrefix(b.Signature, SignaturePrefix)
			if !ok {
				continue // another provider's reasoning: Gemini cannot read it
			}
			if b.Text != "" {
				out = append(out, part{Text: b.Text, Thought: true})
			}
			sig = s
			continue
		case exchange.BlockRedactedThinking:
			continue
		case exchange.BlockToolUse:
			if b.ToolName == "" {
				return nil, t.invalid(pp, "%s needs a function name", pp)
			}
			args := bytes.TrimSpace(b.Input)
			if len(args) == 0 {
				args = []byte("{}")
			}
			if !json.Valid(args) || args[0] != '{' {
				return nil, t.invalid(pp+".input", "%s: the tool call's arguments are not a JSON object", pp)
			}
			names[b.ToolID] = b.ToolName
			np = part{FunctionCall: &functionCall{Name: b.ToolName, Args: args}}
			if sig == "" && !signed {
				np.ThoughtSignature = skipSignature
			}
			signed = true
		default:
			return nil, t.unsupported(pp, "an image, document or tool result in an assistant turn")
		}
		if sig != "" {
			np.ThoughtSignature, sig = sig, ""
		}
		out = append(out, np)
	}
	if n := len(out); sig != "" && n > 0 && out[n-1].ThoughtSignature == "" {
		// A signature with nothing after it (Gemini sent it on the
		// turn's last, empty part): on the last part.
		out[n-1].ThoughtSignature = sig
	}
	return out, nil
}

// toolResult translates a tool result into a functionResponse part named
// after the call it answers.
func (t *translator) toolResult(p string, b *exchange.Block, names map[string]string) (part, error) {
	name, ok := names[b.ToolID]
	if !ok {
		return part{}, t.invalid(p+".tool_call_id", "%s answers tool call %q, which no earlier assistant message made (Gemini needs the function's name)", p, b.ToolID)
	}
	var sb strings.Builder
	for j := range b.Content {
		c := &b.Content[j]
		if c.Type != exchange.BlockText {
			return part{}, t.unsupported(fmt.Sprintf("%s.content[%d]", p, j), "a non-text block in a tool result (Gemini takes JSON results)")
		}
		sb.WriteString(c.Text)
	}
	text := sb.String()
	resp := json.RawMessage(bytes.TrimSpace([]byte(text)))
	key := "result"
	if b.IsError {
		key = "error"
	}
	if b.IsError || len(resp) == 0 || resp[0] != '{' || !json.Valid(resp) {
		resp, _ = json.Marshal(map[string]string{key: text})
	}
	return part{FunctionResponse: &functionResponse{Name: name, Response: resp}}, nil
}
