// Package sqstest is an in-memory SQS queue that speaks the AWS JSON 1.0
// protocol the SDK uses (SendMessage, ReceiveMessage with visibility
// timeouts, DeleteMessageBatch), so tests drive the real SDK client
// against it through AWS_ENDPOINT_URL_SQS or a BaseEndpoint.
package sqstest

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a fake SQS endpoint holding any number of queues (by URL).
type Server struct {
	*httptest.Server
	// Fail, when set, makes every call fail with a 500.
	Fail atomic.Bool

	mu   sync.Mutex
	seq  int
	msgs map[string][]*message // queue URL -> messages
}

type message struct {
	id, body, receipt string
	visibleAt         time.Time
	received          int
}

// New starts a fake SQS server.
func New() *Server {
	s := &Server{msgs: map[string][]*message{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// QueueURL is the URL of a queue named name on this server.
func (s *Server) QueueURL(name string) string { return s.URL + "/000000000000/" + name }

// Len is how many messages the queue holds (visible or in flight).
func (s *Server) Len(url string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs[url])
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	if s.Fail.Load() {
		w.WriteHeader(500)
		fmt.Fprint(w, `{"__type":"com.amazonaws.sqs#InternalError","message":"injected failure"}`)
		return
	}
	var in struct {
		QueueUrl            string
		MessageBody         string
		MaxNumberOfMessages int
		VisibilityTimeout   int
		Entries             []struct{ Id, ReceiptHandle string }
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"__type":"com.amazonaws.sqs#InvalidParameterValue","message":%q}`, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var out any
	switch op {
	case "SendMessage":
		s.seq++
		m := &message{id: fmt.Sprintf("m-%d", s.seq), body: in.MessageBody}
		s.msgs[in.QueueUrl] = append(s.msgs[in.QueueUrl], m)
		out = map[string]string{"MessageId": m.id, "MD5OfMessageBody": md5hex(m.body)}
	case "ReceiveMessage":
		max := in.MaxNumberOfMessages
		if max <= 0 {
			max = 1
		}
		var got []map[string]string
		for _, m := range s.msgs[in.QueueUrl] {
			if len(got) == max {
				break
			}
			if now.Before(m.visibleAt) {
				continue
			}
			s.seq++
			m.receipt = fmt.Sprintf("rh-%d", s.seq)
			m.received++
			m.visibleAt = now.Add(time.Duration(in.VisibilityTimeout) * time.Second)
			got = append(got, map[string]string{"MessageId": m.id, "ReceiptHandle": m.receipt, "Body": m.body, "MD5OfBody": md5hex(m.body)})
		}
		out = map[string]any{"Messages": got}
	case "DeleteMessageBatch":
		var ok []map[string]string
		for _, e := range in.Entries {
			q := s.msgs[in.QueueUrl]
			for i, m := range q {
				if m.receipt == e.ReceiptHandle {
					s.msgs[in.QueueUrl] = append(q[:i], q[i+1:]...)
					break
				}
			}
			ok = append(ok, map[string]string{"Id": e.Id})
		}
		out = map[string]any{"Successful": ok, "Failed": []any{}}
	default:
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"__type":"com.amazonaws.sqs#UnsupportedOperation","message":"%s"}`, op)
		return
	}
	json.NewEncoder(w).Encode(out)
}

// ResetVisibility makes every message of the queue visible again, as if
// its visibility timeout had passed.
func (s *Server) ResetVisibility(url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.msgs[url] {
		m.visibleAt = time.Time{}
	}
}
