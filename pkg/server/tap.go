package server

import "github.com/llmgw/llmgw/pkg/exchange"

// tap is the Reporting.Tap of this request's answer (nil: none), seeing
// passthrough frames through the ingress's own decoder, so that it always
// sees canonical events. It also notes the finish reasons of passthrough
// frames on the record.
func (x *exchangeState) tap() func(ev *exchange.Event) {
	if x.h.report.Tap == nil {
		return nil
	}
	see := x.h.report.Tap(x.req)
	if see == nil {
		return nil
	}
	dec := decoder(x.in)
	var scratch []exchange.Event
	return func(ev *exchange.Event) {
		if ev.Kind != exchange.Raw {
			see(ev)
			return
		}
		if dec == nil {
			return
		}
		var ok bool
		if scratch, ok = dec(scratch[:0], ev); !ok {
			return
		}
		for i := range scratch {
			x.rec.NoteFinish(scratch[i].Finish)
			see(&scratch[i])
		}
	}
}
