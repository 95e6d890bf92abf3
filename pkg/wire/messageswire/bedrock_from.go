package messageswire

import (
	"errors"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// FromBedrockInvoke turns the body of a Bedrock InvokeModel (or
// InvokeModelWithResponseStream) call to a Claude model into the
// first-party Messages request it stands for: anthropic_version
// ("bedrock-2023-05-31") is dropped, the anthropic_beta array becomes the
// values of the anthropic-beta header (betas), and model and stream, which
// Bedrock takes from the path and the operation, are written first (any
// model or stream member of the body is replaced). Every other member is
// kept byte for byte, in order. ToBedrockInvoke is the opposite direction.
//
// An error (a body that is not a JSON object, an anthropic_beta that is
// not an array of strings) is the caller's mistake: the Bedrock ingress
// answers it with a ValidationException.
func FromBedrockInvoke(body []byte, model string, stream bool) (out []byte, betas []string, err error) {
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return nil, nil, errors.New("the InvokeModel body must be a JSON object (the Anthropic Messages body with anthropic_version)")
	}
	out = make([]byte, 0, len(body)+len(model)+32)
	out = append(out, `{"model":`...)
	out = jsonb.AppendString(out, model)
	if stream {
		out = append(out, `,"stream":true`...)
	}
	jsonb.Members(string(body), func(key, value string) bool {
		switch key {
		case "anthropic_version", "model", "stream":
			return true
		case "anthropic_beta":
			v := gjson.Parse(value)
			if !v.IsArray() {
				err = fmt.Errorf("anthropic_beta must be an array of strings")
				return false
			}
			for _, b := range v.Array() {
				if b.Type != gjson.String || b.Str == "" {
					err = fmt.Errorf("anthropic_beta must be an array of non-empty strings")
					return false
				}
				betas = append(betas, b.Str)
			}
			return true
		}
		out = append(out, ",\""...)
		out = append(out, key...)
		out = append(out, "\":"...)
		out = append(out, value...)
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	return append(out, '}'), betas, nil
}
