package server

import (
	"unicode/utf8"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/stage"
)

// paced wraps a streamed response's source in the pacer of its profile.
// Non-streaming bodies are sent whole: pacing does not apply to them.
func (x *exchangeState) paced(src stage.Source) stage.Source {
	p := x.h.opts.Pacing
	if p == nil || x.pacing == "" || !x.req.Stream {
		return src
	}
	x.rec.Pacing = x.pacing
	return p.Pace(src, x.pacing, stage.PaceOptions{Weigh: weigher(x.in), Cancel: x.cancel})
}

// weigher counts the characters of text a Raw event carries, through the
// ingress's own decoder (nil when the ingress has none).
func weigher(in ingress.Ingress) func(*exchange.Event) (int, bool) {
	dec, ok := in.(ingress.RawDecoder)
	if !ok {
		return nil
	}
	var scratch []exchange.Event
	return func(ev *exchange.Event) (int, bool) {
		var ok bool
		scratch, ok = dec.DecodeRaw(scratch[:0], ev)
		if !ok {
			return 0, false
		}
		n := 0
		for i := range scratch {
			if k := scratch[i].Kind; k == exchange.Text || k == exchange.Reasoning {
				n += utf8.RuneCountInString(scratch[i].Text)
			}
		}
		return n, true
	}
}
