// Package ssmtest is an in-memory SSM Parameter Store that speaks the real
// AWS JSON 1.1 protocol (GetParametersByPath with 10-item pages,
// GetParameter, PutParameter), so tests drive the real SDK client against
// it through AWS_ENDPOINT_URL_SSM or a BaseEndpoint.
package ssmtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Server is a fake SSM endpoint.
type Server struct {
	*httptest.Server
	// Calls counts requests by operation name.
	Calls sync.Map // string -> *atomic.Int64
	// Fail, when set, makes every call fail with a 500 InternalServerError.
	Fail atomic.Bool

	mu     sync.Mutex
	params map[string]param
}

type param struct {
	Name    string `json:"Name"`
	Type    string `json:"Type"`
	Value   string `json:"Value"`
	Version int64  `json:"Version"`
}

// New starts a fake SSM server.
func New() *Server {
	s := &Server{params: map[string]param{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Put stores a parameter (typ: String or SecureString).
func (s *Server) Put(name, typ, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.params[name]
	s.params[name] = param{Name: name, Type: typ, Value: value, Version: p.Version + 1}
}

// Count returns how many calls an operation received.
func (s *Server) Count(op string) int64 {
	v, ok := s.Calls.Load(op)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSSM.")
	c, _ := s.Calls.LoadOrStore(op, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if s.Fail.Load() {
		fail(w, 500, "InternalServerError", "injected failure")
		return
	}
	var in struct {
		Path, Name, NextToken, Value, Type string
		Overwrite                          bool
	}
	json.NewDecoder(r.Body).Decode(&in)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch op {
	case "GetParametersByPath":
		prefix := strings.TrimSuffix(in.Path, "/") + "/"
		var names []string
		for n := range s.params {
			if strings.HasPrefix(n, prefix) {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		start, _ := strconv.Atoi(in.NextToken)
		end := min(start+10, len(names))
		out := struct {
			Parameters []param `json:"Parameters"`
			NextToken  string  `json:"NextToken,omitempty"`
		}{Parameters: []param{}}
		for _, n := range names[min(start, len(names)):end] {
			out.Parameters = append(out.Parameters, s.params[n])
		}
		if end < len(names) {
			out.NextToken = strconv.Itoa(end)
		}
		json.NewEncoder(w).Encode(out)
	case "GetParameter":
		p, ok := s.params[in.Name]
		if !ok {
			fail(w, 400, "ParameterNotFound", "")
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"Parameter": p})
	case "PutParameter":
		p := s.params[in.Name]
		if p.Version > 0 && !in.Overwrite {
			fail(w, 400, "ParameterAlreadyExists", "")
			return
		}
		s.params[in.Name] = param{Name: in.Name, Type: in.Type, Value: in.Value, Version: p.Version + 1}
		json.NewEncoder(w).Encode(map[string]any{"Version": p.Version + 1, "Tier": "Standard"})
	default:
		fail(w, 400, "InvalidAction", op)
	}
}

func fail(w http.ResponseWriter, status int, typ, msg string) {
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}
