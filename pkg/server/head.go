package server

import (
	"net/http"
	"strconv"
)

// headWriter answers a HEAD request with exactly the status and headers
// the GET would have had, and no body: it holds the status until the GET
// handler is done, counts the body bytes it discards, and sends their
// number as Content-Length. (net/http would drop a HEAD body by itself,
// lambdaurl would not.)
type headWriter struct {
	http.ResponseWriter
	status int
	n      int
}

// WriteHeader records the status; finish sends it.
func (hw *headWriter) WriteHeader(code int) {
	if hw.status == 0 {
		hw.status = code
	}
}

// Write counts and discards body bytes.
func (hw *headWriter) Write(b []byte) (int, error) {
	if hw.status == 0 {
		hw.status = http.StatusOK
	}
	hw.n += len(b)
	return len(b), nil
}

// finish sends the status and headers, with the Content-Length of the
// body the GET would have sent.
func (hw *headWriter) finish() {
	if hw.status == 0 {
		hw.status = http.StatusOK
	}
	if hw.ResponseWriter.Header().Get("Content-Length") == "" {
		hw.ResponseWriter.Header().Set("Content-Length", strconv.Itoa(hw.n))
	}
	hw.ResponseWriter.WriteHeader(hw.status)
}
