package responses

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
	chatingress "github.com/llmgw/llmgw/pkg/ingress/chat"
)

// The content parts of the Prompt's messages and tool results (see
// prompt.go for the mapping).

func textOnly(blocks []exchange.Block) []exchange.Block {
	out := blocks[:0:0]
	for _, b := range blocks {
		if b.Type == exchange.BlockText {
			out = append(out, b)
		}
	}
	return out
}

// parts decodes content parts (of a message or a function_call_output).
func (d *promptDecoder) parts(p string, parts []wirePart) ([]exchange.Block, error) {
	out := make([]exchange.Block, 0, len(parts))
	for j, part := range parts {
		pp := at("%s[%d]", p, j)
		switch part.Type {
		case "input_text", "output_text":
			if part.Text == nil {
				return nil, bad(pp+".text", "%s: a %s part needs text", pp, part.Type)
			}
			out = append(out, text(*part.Text))
		case "refusal":
			out = append(out, exchange.Block{Type: exchange.BlockRefusal, Text: part.Refusal})
		case "input_image":
			switch {
			case part.ImageURL != "":
				b, err := media(pp+".image_url", exchange.BlockImage, part.ImageURL)
				if err != nil {
					return nil, err
				}
				b.Detail = part.Detail
				out = append(out, b)
			case part.FileID != "":
				d.lose(pp, "an input_image given by file_id", whyNative)
			default:
				return nil, bad(pp+".image_url", "%s: an input_image needs image_url or file_id", pp)
			}
		case "input_file":
			var b exchange.Block
			var err error
			switch {
			case part.FileData != "":
				b, err = fileData(pp+".file_data", part.FileData, part.Filename)
			case part.FileURL != "":
				b, err = media(pp+".file_url", exchange.BlockDocument, part.FileURL)
			case part.FileID != "":
				d.lose(pp, "an input_file given by file_id", whyNative)
				continue
			default:
				return nil, bad(pp, "%s: an input_file needs file_data, file_id or file_url", pp)
			}
			if err != nil {
				return nil, err
			}
			b.FileName = part.Filename
			out = append(out, b)
		case "":
			return nil, bad(pp+".type", "%s: a content part needs type", pp)
		default:
			d.lose(pp, "a content part of type "+part.Type, whyNative)
		}
	}
	return out, nil
}

// media decodes an image or file given by URL with the gateway's one
// data-URL reader (chatingress.Media): a base64 data URL becomes bytes
// with their media type, any other URL stays a URL the upstream fetches.
func media(param string, t exchange.BlockType, u string) (exchange.Block, error) {
	b := exchange.Block{Type: t}
	if err := chatingress.Media(&b, u, param); err != nil {
		return exchange.Block{}, err
	}
	return b, nil
}

// fileData decodes an input_file's file_data: a base64 data URL, or bare
// base64 whose media type the filename tells (a PDF when it says nothing
// else).
func fileData(param, s, filename string) (exchange.Block, error) {
	if strings.HasPrefix(s, "data:") {
		return media(param, exchange.BlockDocument, s)
	}
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return exchange.Block{}, bad(param, "%s must be a base64 data URL or base64 data", param)
	}
	mt := "application/pdf"
	if strings.HasSuffix(strings.ToLower(filename), ".txt") {
		mt = "text/plain"
	}
	return exchange.Block{Type: exchange.BlockDocument, MediaType: mt, Data: data}, nil
}

// callOutput decodes a function_call_output's output: a string (one text
// block) or content parts.
func (d *promptDecoder) callOutput(p string, raw json.RawMessage) ([]exchange.Block, error) {
	switch kindOf(raw) {
	case '"':
		s, err := unquoteAt(p+".output", raw)
		if err != nil {
			return nil, err
		}
		return []exchange.Block{text(s)}, nil
	case '[':
	default:
		return nil, bad(p+".output", "%s.output must be a string or an array of content parts", p)
	}
	var parts []wirePart
	if err := unmarshalAt(p+".output", raw, &parts); err != nil {
		return nil, err
	}
	return d.parts(p+".output", parts)
}
