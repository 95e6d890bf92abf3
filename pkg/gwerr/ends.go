package gwerr

import "errors"

// Why a request ended before its answer did: the causes every layer that
// relays or waits (the failover engine, the cache replay, moderation, the
// front) sets and matches with errors.Is.
var (
	// ErrDeadline is the cause the front sets on a request's soft deadline
	// (the request timeout, or the Lambda deadline minus a margin).
	ErrDeadline = errors.New("request deadline")
	// ErrClientGone is returned when the client disconnected.
	ErrClientGone = errors.New("client disconnected")
)
