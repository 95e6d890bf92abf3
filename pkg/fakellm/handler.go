package fakellm

import (
	"io"
	"net"
	"net/http"
)

// Handler serves the script as an OpenAI-compatible HTTP upstream
// (POST .../chat/completions). A reset is a real TCP reset.
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
		w.Write(errorBody(s.Status))
		return
	}
	if !rq.stream {
		if sleep(ctx, s.FirstTokenDelay.D()) != nil {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(completion(s, rq))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	if err := writeStream(ctx, s, rq, w, func() { rc.Flush() }); err == errReset {
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
