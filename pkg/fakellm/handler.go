package fakellm

import (
	"context"
	"io"
	"net"
	"net/http"
)

// Handler serves the script as an HTTP upstream in the wire format of the
// request's path: Anthropic Messages on .../messages (count_tokens too),
// OpenAI Responses on .../responses, Chat Completions otherwise. A reset
// is a real TCP reset.
type Handler struct {
	Script *Script
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	s := h.Script
	rq := parseRequest(body)
	ctx := r.Context()
	api := apiOf(r.URL.Path)
	if api == apiCountTokens {
		w.Header().Set("Content-Type", "application/json")
		w.Write(countTokensBody(rq))
		return
	}
	switch s.Fail {
	case "reset":
		resetConn(w)
		return
	case "stall":
		<-ctx.Done()
		return
	case "status":
		if sleep(ctx, s.FirstTokenDelay.D()) != nil {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if s.Status == 429 {
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(s.Status)
		w.Write(api.errorBody(s.Status))
		return
	}
	if !rq.stream {
		if sleep(ctx, s.FirstTokenDelay.D()) != nil {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(api.completion(s, rq))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	if err := api.writeStream(ctx, s, rq, w, func() { rc.Flush() }); err == errReset {
		resetConn(w)
	}
}

// resetConn aborts the connection with a TCP RST.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// wireAPI is the client API a request path is in: it picks the fake's
// reply, stream and error writers.
type wireAPI int

const (
	apiChat wireAPI = iota
	apiMessages
	apiCountTokens
	apiResponses
)

// apiOf returns the API of a request path.
func apiOf(path string) wireAPI {
	switch {
	case isCountTokens(path):
		return apiCountTokens
	case isMessages(path):
		return apiMessages
	case isResponses(path):
		return apiResponses
	}
	return apiChat
}

// writeStream writes the scripted stream in the API's wire format.
func (a wireAPI) writeStream(ctx context.Context, s *Script, rq request, w io.Writer, flush func()) error {
	switch a {
	case apiMessages:
		return writeMessagesStream(ctx, s, rq, w, flush)
	case apiResponses:
		return writeResponsesStream(ctx, s, rq, w, flush)
	}
	return writeStream(ctx, s, rq, w, flush)
}

// completion returns the non-streaming reply body in the API's format.
func (a wireAPI) completion(s *Script, rq request) []byte {
	switch a {
	case apiMessages:
		return messagesCompletion(s, rq)
	case apiResponses:
		return responsesCompletion(s, rq)
	}
	return completion(s, rq)
}

// errorBody returns a scripted failure in the API's error shape.
func (a wireAPI) errorBody(status int) []byte {
	if a == apiMessages {
		return messagesErrorBody(status)
	}
	return errorBody(status)
}
