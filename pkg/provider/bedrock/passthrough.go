package bedrock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
	"github.com/llmgw/llmgw/pkg/wire/delta"
)

// Passthrough: a client of the Converse API (the Bedrock Runtime ingress's
// Converse and ConverseStream) served by a Bedrock target. The descriptor
// says every Bedrock target speaks the Converse API (config.Kind.Speaks),
// so the registry's guard lets requests holding what only Converse
// carries (additionalModelRequestFields beyond thinking, performanceConfig,
// promptVariables, guardrailConfig, ...) reach it, and Send picks this
// path for them (provider.Passthrough). The model id is only in the URL
// path, so the client's body goes upstream byte for byte, to
// /model/{target model}/converse or /converse-stream; only the target's
// prompt variant, the admitted output cap and the target's service tier,
// when there are any, edit it (bedrockwire.EditConverse: the system
// blocks, inferenceConfig, serviceTier).
//
// The call is the SDK client's own Converse or ConverseStream operation -
// its endpoint, its credentials (SigV4 from the credential chain, or the
// Bedrock API key of AWS_BEARER_TOKEN_BEDROCK), its HTTP client with the
// gateway's bounds, its error decoding (callError), retries left to the
// failover engine - with two middlewares (rawExchange): one puts the
// client's bytes in place of the serialised input, before the request is
// signed; one takes the upstream's 2xx response for the relay, before the
// SDK decodes it (the SDK's decoder gets an empty body). Error answers go
// to the SDK as they are, so they are classified as on every other path.
//
// The answer is relayed untouched: a Converse body is one Raw event
// (RawAPI exchange.Converse, Whole | HasContent, HasFinish from its
// stopReason; usage from its usage member); a ConverseStream is one Raw
// event per event-stream frame, its exact bytes (CRCs checked by the frame
// reader, frames with malformed JSON payloads dropped and counted as on
// the translated path), read by bedrockwire.ReadEvent for the flags:
//
//	contentBlockStart toolUse, a non-empty contentBlockDelta -> HasContent
//	messageStop                        -> HasFinish (Finish: the canonical reason)
//	metadata after messageStop         -> the last event (its usage), then io.EOF
//	an exception frame                 -> classified by its type (classifyException)
//	malformed_model_output, malformed_tool_use -> a provider failure
//
// A stream that ends before messageStop and metadata is interrupted.

// rawExchange carries the client's body into one SDK call and the
// upstream's success response out of it.
type rawExchange struct {
	body   []byte
	stream bool
	resp   *http.Response // the upstream's 2xx answer; its body is the relay's
}

// options adds the two middlewares to one call.
func (x *rawExchange) options(o *bedrockruntime.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		if err := st.Serialize.Add(middleware.SerializeMiddlewareFunc("llmgwRawBody", x.serialize), middleware.After); err != nil {
			return err
		}
		return st.Deserialize.Add(middleware.DeserializeMiddlewareFunc("llmgwRawResponse", x.deserialize), middleware.After)
	})
}

// serialize replaces the serialised input with the client's body (it runs
// after the SDK's serializer, before the payload hash and the signature).
func (x *rawExchange) serialize(ctx context.Context, in middleware.SerializeInput, next middleware.SerializeHandler) (middleware.SerializeOutput, middleware.Metadata, error) {
	req, ok := in.Request.(*smithyhttp.Request)
	if !ok {
		return middleware.SerializeOutput{}, middleware.Metadata{}, fmt.Errorf("unexpected request type %T", in.Request)
	}
	r, err := req.SetStream(bytes.NewReader(x.body))
	if err != nil {
		return middleware.SerializeOutput{}, middleware.Metadata{}, err
	}
	r.Header.Set("Content-Type", "application/json")
	in.Request = r
	return next.HandleSerialize(ctx, in)
}

// deserialize takes a 2xx response for the relay and hands the SDK's
// decoder an empty one; an error response goes on to the SDK untouched.
// It runs innermost, next to the HTTP client.
func (x *rawExchange) deserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleDeserialize(ctx, in)
	if err != nil {
		return out, md, err
	}
	resp, ok := out.RawResponse.(*smithyhttp.Response)
	if !ok || resp.Response == nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return out, md, err
	}
	x.resp = resp.Response
	stub := *resp.Response
	stub.Body = io.NopCloser(strings.NewReader("{}"))
	if x.stream {
		stub.Body = http.NoBody
	}
	out.RawResponse = &smithyhttp.Response{Response: &stub}
	return out, md, nil
}

// sendConverse serves a Converse request (see above).
func (a *Adapter) sendConverse(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	body, err := bedrockwire.EditConverse(call.Req.Body, call.Variant(), call.OutputLimit(), call.Step.ServiceTier)
	if err != nil {
		return nil, &gwerr.Error{Category: gwerr.InvalidRequest, Message: "request body is not a JSON object", Provider: a.id, Cause: err}
	}
	model := call.Model()
	x := &rawExchange{body: body, stream: call.Req.Stream}
	if call.Req.Stream {
		malformed := new(atomic.Int64)
		out, err := a.api.ConverseStream(withMalformedCounter(ctx, malformed), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(model)},
			traceHeader(call.Req.TraceParent), x.options, ownStreamCodec)
		if err != nil {
			observeError(call, err)
			return nil, callError(ctx, a.id, err)
		}
		observe(call, out.ResultMetadata)
		if es := out.GetStream(); es != nil {
			es.Close() // the SDK's reader of the empty stub
		}
		if x.resp == nil || x.resp.Body == nil {
			return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned no event stream", Provider: a.id}
		}
		return &rawStream{id: a.id, ctx: ctx, body: x.resp.Body, fr: bedrockwire.NewFrameReader(x.resp.Body),
			reqBytes: len(body), malformed: malformed, trace: &call.Req.Trace}, nil
	}
	out, err := a.api.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(model)}, traceHeader(call.Req.TraceParent), x.options)
	if err != nil {
		observeError(call, err)
		return nil, callError(ctx, a.id, err)
	}
	observe(call, out.ResultMetadata)
	if x.resp == nil || x.resp.Body == nil {
		return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned no body", Provider: a.id}
	}
	defer x.resp.Body.Close()
	data, err := io.ReadAll(x.resp.Body) // bounded by plainBodies
	if err != nil {
		var ge *gwerr.Error
		if errors.As(err, &ge) {
			return nil, ge
		}
		return nil, provider.TransportError(ctx, a.id, err)
	}
	return wholeConverse(a.id, data, len(body))
}

// malformedOutput is the provider failure of a malformed_model_output or
// malformed_tool_use stop reason.
func malformedOutput(id, stop string) *gwerr.Error {
	return &gwerr.Error{Category: gwerr.Unavailable, Message: "provider model produced malformed output (" + stop + ")", Code: "malformed_output", Provider: id}
}

// converseUsage is Converse's usage in the gateway's terms.
func converseUsage(u bedrockwire.Usage) exchange.TokenUsage {
	return exchange.TokenUsage{Input: u.Input + u.CacheRead + u.CacheWrite, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite,
		CacheWrite1h: u.CacheWrite1h, Tier: u.Tier}
}

// wholeConverse is the stream of a Converse answer relayed whole.
func wholeConverse(id string, data []byte, reqBytes int) (provider.Stream, error) {
	if !gjson.ValidBytes(data) || !gjson.ParseBytes(data).IsObject() {
		return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned malformed JSON", Provider: id}
	}
	ei, _ := bedrockwire.ReadResponse(nil, data)
	if bedrockwire.Malformed(ei.StopReason) {
		return nil, malformedOutput(id, ei.StopReason)
	}
	u := converseUsage(ei.Usage)
	if !ei.HasUsage {
		u = exchange.TokenUsage{Input: exchange.EstimateTokens(reqBytes), Output: exchange.EstimateTokens(ei.Chars), Estimated: true}
	}
	if !ei.Content && u.Output == 0 {
		return nil, provider.EmptyResponse(id)
	}
	ev := exchange.Event{Kind: exchange.Raw, Raw: data, RawAPI: exchange.Converse, Flags: exchange.Whole | exchange.HasContent | exchange.HasFinish,
		Finish: bedrockwire.FinishReason(ei.StopReason), Stop: ei.StopReason}
	return provider.Events(u, ev), nil
}

// rawStream relays a ConverseStream response frame by frame (see above).
type rawStream struct {
	id        string
	ctx       context.Context
	body      io.ReadCloser
	fr        *bedrockwire.FrameReader
	reqBytes  int
	trace     *exchange.Trace
	malformed *atomic.Int64
	counted   int64
	parts     []delta.Part
	closeOnce sync.Once

	stopped, meta, done, gotUsage bool
	usage                         exchange.TokenUsage
	chars                         int
}

// Next implements provider.Stream.
func (s *rawStream) Next() (exchange.Event, error) {
	for {
		if s.done {
			return exchange.Event{}, io.EOF
		}
		fr, err := s.fr.Next()
		s.countMalformed()
		if err != nil {
			return exchange.Event{}, s.ended(err)
		}
		if fr.Exception {
			s.Close()
			name := bedrockwire.ExceptionOf(fr.Type)
			msg := gwerr.Redact(gjson.GetBytes(fr.Payload, "message").String())
			if e := classifyException(s.id, name, msg, errors.New(fr.Type), true); e != nil {
				return exchange.Event{}, e
			}
			return exchange.Event{}, provider.Interrupted(s.id, "failed ("+fr.Type+")", nil)
		}
		var ei bedrockwire.EventInfo
		ei, s.parts = bedrockwire.ReadEvent(s.parts[:0], fr.Type, fr.Payload)
		ev := exchange.Event{Kind: exchange.Raw, RawAPI: exchange.Converse, Raw: fr.Raw}
		if ei.Content {
			ev.Flags |= exchange.HasContent
		}
		s.chars += ei.Chars
		switch fr.Type {
		case bedrockwire.EventMessageStop:
			if bedrockwire.Malformed(ei.StopReason) {
				s.Close()
				return exchange.Event{}, malformedOutput(s.id, ei.StopReason)
			}
			s.stopped = true
			ev.Flags |= exchange.HasFinish
			ev.Finish, ev.Stop = bedrockwire.FinishReason(ei.StopReason), ei.StopReason
		case bedrockwire.EventMetadata:
			s.meta = true
			if ei.HasUsage {
				s.gotUsage, s.usage = true, converseUsage(ei.Usage)
			}
			s.done = s.stopped
		}
		return ev, nil
	}
}

// ended is the error for a body that ended (or broke) before messageStop
// and metadata.
func (s *rawStream) ended(err error) error {
	s.Close()
	var ge *gwerr.Error
	switch {
	case s.ctx.Err() != nil:
		return provider.TransportError(s.ctx, s.id, s.ctx.Err())
	case errors.As(err, &ge):
		return ge // the frame bound (plainBodies)
	case err == io.EOF && s.stopped:
		return provider.Interrupted(s.id, "ended without its metadata event", nil)
	case err == io.EOF:
		return provider.Interrupted(s.id, "ended without messageStop", nil)
	}
	return provider.Interrupted(s.id, "broke off", err)
}

// countMalformed adds the frames dropped since the last call to the trace.
func (s *rawStream) countMalformed() {
	if n := s.malformed.Load(); n != s.counted {
		s.trace.MalformedFrames += int(n - s.counted)
		s.counted = n
	}
}

// Usage implements provider.Stream: the metadata event's figures, else an
// estimate.
func (s *rawStream) Usage() exchange.TokenUsage {
	if s.gotUsage {
		return s.usage
	}
	return exchange.TokenUsage{Input: exchange.EstimateTokens(s.reqBytes), Output: exchange.EstimateTokens(s.chars), Estimated: true}
}

// Close implements provider.Stream.
func (s *rawStream) Close() error {
	s.closeOnce.Do(func() { s.body.Close() })
	return nil
}
