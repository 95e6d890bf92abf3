package main

import (
	"bytes"
	"strconv"
	"strings"
)

// API is a client API the load speaks, taken from a target URL's path:
// its request body, its headers and how its event stream starts content,
// ends and fails.
type API struct {
	// Name is chat, messages or responses.
	Name string
	// Header is what the API's SDK sends besides Content-Type.
	Header map[string]string
	// request returns the body's fields after the model ("stream" first
	// when set), up to the text of the one user turn, and what closes it.
	head, tail string
	// streamHead is head of a streaming request.
	streamHead string
	// DoneEvent, when set, is the event name of the stream's last frame;
	// otherwise the last frame is the data line [DONE] (Chat Completions).
	DoneEvent string
	// ContentEvent, when set, is the event name of a frame with content
	// text; otherwise a chat chunk with a non-empty "content" string.
	ContentEvent string
	// ErrorEvents are event names of an error frame.
	ErrorEvents []string
}

var (
	apiChat = &API{Name: "chat",
		head: `"messages":[{"role":"user","content":"`, streamHead: `"stream":true,"messages":[{"role":"user","content":"`, tail: `"}]}`}
	apiMessages = &API{Name: "messages", Header: map[string]string{"anthropic-version": "2023-06-01"},
		head:       `"max_tokens":1024,"messages":[{"role":"user","content":"`,
		streamHead: `"stream":true,"max_tokens":1024,"messages":[{"role":"user","content":"`, tail: `"}]}`,
		DoneEvent: "message_stop", ContentEvent: "content_block_delta", ErrorEvents: []string{"error"}}
	apiResponses = &API{Name: "responses",
		head: `"input":[{"role":"user","content":"`, streamHead: `"stream":true,"input":[{"role":"user","content":"`, tail: `"}]}`,
		DoneEvent: "response.completed", ContentEvent: "response.output_text.delta", ErrorEvents: []string{"error", "response.failed"}}
)

// apiOfURL returns the API of a target URL: /v1/messages, /v1/responses,
// otherwise Chat Completions.
func apiOfURL(u string) *API {
	switch {
	case strings.HasSuffix(u, "/messages"):
		return apiMessages
	case strings.HasSuffix(u, "/responses"):
		return apiResponses
	}
	return apiChat
}

// body returns a request of about size bytes in the target's API: one
// user turn padded with text.
func body(t Target, stream bool, size int) []byte {
	a := t.api()
	head := `{"model":` + strconv.Quote(t.Model) + `,` + a.head
	if stream {
		head = `{"model":` + strconv.Quote(t.Model) + `,` + a.streamHead
	}
	n := max(1, size-len(head)-len(a.tail))
	const words = "the quick brown fox jumps over the lazy dog "
	pad := strings.Repeat(words, n/len(words)+1)[:n]
	return []byte(head + pad + a.tail)
}

// api returns the target's API (Chat Completions when unset).
func (t Target) api() *API {
	if t.API == nil {
		return apiChat
	}
	return t.API
}

// isContent reports whether a frame (its event name and data) carries
// content text: the first token a user sees.
func (a *API) isContent(event string, data []byte) bool {
	if a.ContentEvent != "" {
		return event == a.ContentEvent
	}
	i := bytes.Index(data, contentText)
	return i >= 0 && i+len(contentText) < len(data) && data[i+len(contentText)] != '"'
}

// isDone reports whether a frame is the stream's last.
func (a *API) isDone(event string, data []byte) bool {
	if a.DoneEvent != "" {
		return event == a.DoneEvent
	}
	return bytes.Equal(data, doneData)
}

// isError reports whether a frame is an error.
func (a *API) isError(event string, data []byte) bool {
	for _, e := range a.ErrorEvents {
		if event == e {
			return true
		}
	}
	return bytes.HasPrefix(data, errorData)
}
