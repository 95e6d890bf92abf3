package chatwire

import "slices"

// The canonical-path oracle of the variant tests: a prompt variant applied
// to the decoded request, which the byte-level edits (applyVariant) must
// agree with. Production code applies variants to the Prompt
// (provider.WithVariant) or to the bytes.

// WithVariant returns the request with v applied (the oracle), as a copy (r is not
// modified); r itself when v is nil.
func (r *ChatRequest) WithVariant(v *Variant) *ChatRequest {
	if v == nil {
		return r
	}
	c := *r
	if v.EditsSystem() {
		c.Messages = variantMessages(r.Messages, v)
	}
	if v.Temperature != nil {
		t := *v.Temperature
		c.Temperature = &t
	}
	if v.TopP != nil {
		p := *v.TopP
		c.TopP = &p
	}
	if n := v.MaxTokensCap; n > 0 {
		for _, f := range []**int{&c.MaxTokens, &c.MaxCompletionTokens} {
			if *f != nil && **f > n {
				capped := n
				*f = &capped
			}
		}
	}
	return &c
}

// variantMessages applies v's system edits to a copy of msgs.
func variantMessages(msgs []Message, v *Variant) []Message {
	var sys []int
	for i, m := range msgs {
		if isSystem(m.Role) {
			sys = append(sys, i)
		}
	}
	if len(sys) == 0 {
		return append([]Message{{Role: "system", Content: Content{Text: v.SystemText()}}}, msgs...)
	}
	out := make([]Message, 0, len(msgs))
	for i, m := range msgs {
		switch {
		case v.System != "" && i == sys[0]:
			m.Content = Content{Text: v.System}
		case v.System != "" && isSystem(m.Role):
			continue
		case v.System == "":
			if i == sys[0] && v.SystemPrefix != "" {
				m.Content = withText(m.Content, v.SystemPrefix, true)
			}
			if i == sys[len(sys)-1] && v.SystemSuffix != "" {
				m.Content = withText(m.Content, v.SystemSuffix, false)
			}
		}
		out = append(out, m)
	}
	return out
}

// withText puts s before (or after) a content's text: concatenated to a
// string, as a new text part of an array.
func withText(c Content, s string, before bool) Content {
	if !c.IsParts {
		if before {
			c.Text = s + c.Text
		} else {
			c.Text += s
		}
		return c
	}
	p := ContentPart{Type: "text", Text: s}
	if before {
		c.Parts = append([]ContentPart{p}, c.Parts...)
	} else {
		c.Parts = append(slices.Clone(c.Parts), p)
	}
	return c
}
