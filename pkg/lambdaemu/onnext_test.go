package lambdaemu_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/lambdaemu"
)

// TestOnNextMarksEveryNextRequest: the hook runs when the function asks for
// an invocation, before any event is queued (ready for the first one), and
// again each time it comes back for the next one.
func TestOnNextMarksEveryNextRequest(t *testing.T) {
	rt, err := lambdaemu.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	calls := make(chan time.Time, 4)
	rt.SetOnNext(func() { calls <- time.Now() })
	base := "http://" + rt.Addr() + "/2018-06-01/runtime/invocation/"

	// A minimal function: ask for an event, answer it, in the background.
	type got struct {
		id, event string
		err       error
	}
	next := func() chan got {
		ch := make(chan got, 1)
		go func() {
			resp, err := http.Get(base + "next")
			if err != nil {
				ch <- got{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			ch <- got{id: resp.Header.Get("Lambda-Runtime-Aws-Request-Id"), event: string(b), err: err}
		}()
		return ch
	}
	wait := func(what string) time.Time {
		t.Helper()
		select {
		case at := <-calls:
			return at
		case <-time.After(5 * time.Second):
			t.Fatalf("SetOnNext hook not called %s", what)
			return time.Time{}
		}
	}

	first := next()
	ready := wait("when the function first asked for an invocation (nothing queued yet)")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan string, 1)
	go func() {
		r, err := rt.Invoke(ctx, []byte(`{"n":1}`), time.Now().Add(time.Minute))
		if err != nil || r.Err != nil {
			done <- fmt.Sprint("invoke: ", err, r)
			return
		}
		b, _ := io.ReadAll(r.Body) // the emulator relays the body as it is read
		done <- string(b)
	}()
	g := <-first
	if g.err != nil || g.event != `{"n":1}` {
		t.Fatalf("next: %q %v", g.event, g.err)
	}
	if _, err := http.Post(base+g.id+"/response", "application/json", strings.NewReader(`"ok"`)); err != nil {
		t.Fatal(err)
	}
	if body := <-done; body != `"ok"` {
		t.Fatalf("response: %s", body)
	}
	select {
	case <-calls:
		t.Fatal("the SetOnNext hook called without a new next request")
	default:
	}
	second := next()
	again := wait("when the function came back for the next invocation")
	if !again.After(ready) {
		t.Errorf("second call at %v, not after the first at %v", again, ready)
	}
	rt.Close() // ends the waiting next request
	<-second
}
