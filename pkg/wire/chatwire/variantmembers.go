package chatwire

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// MemberVariant describes an API whose system prompt is one top-level
// member, for ApplyVariantMembers: Anthropic Messages ("system", a string
// or an array of text blocks; output limit "max_tokens") or OpenAI
// Responses ("instructions"; "max_output_tokens").
type MemberVariant struct {
	// Prompt and MaxTokens name the system prompt and output limit members.
	Prompt, MaxTokens string
	// Block is one text element of an array prompt.
	Block func(text string) []byte
}

// ApplyVariantMembers applies v to body (a valid JSON object) with
// byte-level edits: the prompt member (replaced for System; prefixed and
// suffixed for SystemPrefix and SystemSuffix: a string prompt is
// concatenated, an array prompt gets a text element first or last; added
// when absent), temperature and top_p (replaced or added), and the output
// limit member lowered to MaxTokensCap. Every other byte is kept. It
// returns body itself when v is nil.
func ApplyVariantMembers(body []byte, v *Variant, api MemberVariant) ([]byte, error) {
	if v == nil {
		return body, nil
	}
	num := func(f float64) []byte { return strconv.AppendFloat(nil, f, 'g', -1, 64) }
	seenPrompt, seenTemp, seenTopP := false, false, false
	out, err := EditMembers(make([]byte, 0, len(body)+len(v.System)+len(v.SystemPrefix)+len(v.SystemSuffix)+64), body,
		func(key string, val []byte) ([]byte, bool) {
			switch {
			case key == api.Prompt && v.EditsSystem():
				seenPrompt = true
				return api.prompt(bytes.TrimSpace(val), v), true
			case key == "temperature" && v.Temperature != nil:
				seenTemp = true
				return num(*v.Temperature), true
			case key == "top_p" && v.TopP != nil:
				seenTopP = true
				return num(*v.TopP), true
			case key == api.MaxTokens && v.MaxTokensCap > 0:
				if n, err := strconv.Atoi(string(bytes.TrimSpace(val))); err == nil && n > v.MaxTokensCap {
					return strconv.AppendInt(nil, int64(v.MaxTokensCap), 10), true
				}
			}
			return nil, false
		})
	if err != nil {
		return nil, err
	}
	var add []byte
	member := func(key string, val []byte) {
		add = append(append(append(append(add, `,"`...), key...), `":`...), val...)
	}
	if v.EditsSystem() && !seenPrompt {
		member(api.Prompt, jsonb.AppendString(nil, v.SystemText()))
	}
	if v.Temperature != nil && !seenTemp {
		member("temperature", num(*v.Temperature))
	}
	if v.TopP != nil && !seenTopP {
		member("top_p", num(*v.TopP))
	}
	if len(add) == 0 {
		return out, nil
	}
	end := bytes.LastIndexByte(out, '}')
	if len(bytes.TrimSpace(out[bytes.IndexByte(out, '{')+1:end])) == 0 {
		add = add[1:] // an empty object: no separator
	}
	res := make([]byte, 0, len(out)+len(add))
	res = append(append(append(res, out[:end]...), add...), out[end:]...)
	return res, nil
}

// prompt is the edited value of a prompt member val.
func (api MemberVariant) prompt(val []byte, v *Variant) []byte {
	if v.System != "" {
		return jsonb.AppendString(nil, v.System)
	}
	switch {
	case len(val) > 0 && val[0] == '"':
		var s string
		_ = json.Unmarshal(val, &s)
		return jsonb.AppendString(nil, v.SystemPrefix+s+v.SystemSuffix)
	case len(val) > 1 && val[0] == '[' && api.Block != nil:
		inner := val[1 : len(val)-1]
		var parts [][]byte
		if v.SystemPrefix != "" {
			parts = append(parts, api.Block(v.SystemPrefix))
		}
		if len(bytes.TrimSpace(inner)) > 0 {
			parts = append(parts, inner)
		}
		if v.SystemSuffix != "" {
			parts = append(parts, api.Block(v.SystemSuffix))
		}
		return append(append([]byte{'['}, bytes.Join(parts, []byte{','})...), ']')
	}
	return jsonb.AppendString(nil, v.SystemText()) // null, or a shape the variant does not edit
}
