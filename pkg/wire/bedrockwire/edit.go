package bedrockwire

import (
	"bytes"
	"strconv"

	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// EditConverse applies what the gateway rewrites on a Converse body that
// passes through to a Bedrock upstream, with byte-level edits (every other
// byte kept, so members the gateway does not model reach the upstream):
// the target's prompt variant v (System replaces the system member with
// one text block, SystemPrefix and SystemSuffix add a text block first and
// last, a missing system member is added; Temperature and TopP replace or
// add inferenceConfig's temperature and topP) and the output limit
// (inferenceConfig.maxTokens lowered to limit, or added when the client
// gave none) and the target's service tier (serviceTier replaced by
// {"type":tier}, or added; "" leaves the client's). With no variant, no
// limit and no tier it returns body itself.
func EditConverse(body []byte, v *chatwire.Variant, limit int, tier string) ([]byte, error) {
	if v == nil && limit <= 0 && tier == "" {
		return body, nil
	}
	var tierVal []byte
	if tier != "" {
		tierVal = append(jsonb.AppendString([]byte(`{"type":`), tier), '}')
	}
	if v == nil {
		v = &chatwire.Variant{}
	}
	num := func(f float64) []byte { return strconv.AppendFloat(nil, f, 'g', -1, 64) }
	var inference [][2]string // the inferenceConfig members to set
	if v.Temperature != nil {
		inference = append(inference, [2]string{"temperature", string(num(*v.Temperature))})
	}
	if v.TopP != nil {
		inference = append(inference, [2]string{"topP", string(num(*v.TopP))})
	}
	if v.MaxTokensCap > 0 && (limit <= 0 || v.MaxTokensCap < limit) {
		limit = v.MaxTokensCap
	}
	seenSystem, seenInference, seenTier := false, false, false
	out, err := chatwire.EditMembers(make([]byte, 0, len(body)+64), body, func(key string, val []byte) ([]byte, bool) {
		switch key {
		case "system":
			if !v.EditsSystem() {
				return nil, false
			}
			seenSystem = true
			return system(bytes.TrimSpace(val), v), true
		case "inferenceConfig":
			seenInference = true
			return editInference(bytes.TrimSpace(val), inference, limit)
		case "serviceTier":
			if tierVal == nil {
				return nil, false
			}
			seenTier = true
			return tierVal, true
		}
		return nil, false
	})
	if err != nil {
		return nil, err
	}
	var add []byte
	if v.EditsSystem() && !seenSystem {
		add = append(append(add, `,"system":`...), system(nil, v)...)
	}
	if !seenInference && (len(inference) > 0 || limit > 0) {
		ic, _ := editInference([]byte("{}"), inference, limit)
		add = append(append(add, `,"inferenceConfig":`...), ic...)
	}
	if tierVal != nil && !seenTier {
		add = append(append(add, `,"serviceTier":`...), tierVal...)
	}
	if len(add) == 0 {
		return out, nil
	}
	end := bytes.LastIndexByte(out, '}')
	if len(bytes.TrimSpace(out[bytes.IndexByte(out, '{')+1:end])) == 0 {
		add = add[1:]
	}
	res := make([]byte, 0, len(out)+len(add))
	return append(append(append(res, out[:end]...), add...), out[end:]...), nil
}

// textBlock is a system text block.
func textBlock(s string) []byte { return append(jsonb.AppendString([]byte(`{"text":`), s), '}') }

// system is the edited system member (val: the client's, nil if none).
func system(val []byte, v *chatwire.Variant) []byte {
	if v.System != "" || len(val) < 2 || val[0] != '[' {
		return append(append([]byte{'['}, textBlock(v.SystemText())...), ']')
	}
	var parts [][]byte
	if v.SystemPrefix != "" {
		parts = append(parts, textBlock(v.SystemPrefix))
	}
	if inner := bytes.TrimSpace(val[1 : len(val)-1]); len(inner) > 0 {
		parts = append(parts, inner)
	}
	if v.SystemSuffix != "" {
		parts = append(parts, textBlock(v.SystemSuffix))
	}
	return append(append([]byte{'['}, bytes.Join(parts, []byte{','})...), ']')
}

// editInference sets members of an inferenceConfig object and lowers (or
// adds) its maxTokens to limit; ok false when nothing changes.
func editInference(val []byte, set [][2]string, limit int) ([]byte, bool) {
	if len(val) == 0 || val[0] != '{' {
		return nil, false
	}
	seen := make([]bool, len(set))
	seenMax, changed := false, false
	out, err := chatwire.EditMembers(nil, val, func(key string, mv []byte) ([]byte, bool) {
		for i, kv := range set {
			if key == kv[0] {
				seen[i], changed = true, true
				return []byte(kv[1]), true
			}
		}
		if key == "maxTokens" && limit > 0 {
			seenMax = true
			if n, err := strconv.Atoi(string(bytes.TrimSpace(mv))); err == nil && n > limit {
				changed = true
				return strconv.AppendInt(nil, int64(limit), 10), true
			}
		}
		return nil, false
	})
	if err != nil {
		return nil, false
	}
	var add []byte
	for i, kv := range set {
		if !seen[i] {
			add = append(append(append(append(add, `,"`...), kv[0]...), `":`...), kv[1]...)
		}
	}
	if limit > 0 && !seenMax {
		add = strconv.AppendInt(append(add, `,"maxTokens":`...), int64(limit), 10)
	}
	if len(add) == 0 {
		return out, changed
	}
	end := bytes.LastIndexByte(out, '}')
	if len(bytes.TrimSpace(out[1:end])) == 0 {
		add = add[1:]
	}
	res := make([]byte, 0, len(out)+len(add))
	return append(append(append(res, out[:end]...), add...), out[end:]...), true
}
