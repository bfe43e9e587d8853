package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"sync"
	"time"
)

// controlGate sits in front of the engine's SOAP handler: it reads the method name from the SOAP body,
// counts the calls, and holds ("hangs") or delays the calls the control endpoint asked for. SOAP faults
// are not injected here but by the engine's own fault injector, so they are encoded exactly as vcsim
// encodes every other fault.
type controlGate struct {
	mu       sync.Mutex
	hangs    map[string]int // method -> calls still to hold; <0 = every call until cleared
	delays   map[string]int // method -> ms
	calls    map[string]int
	released chan struct{} // closed (and replaced) by clear: every held call goes on
}

func newControlGate() *controlGate {
	return &controlGate{hangs: map[string]int{}, delays: map[string]int{}, calls: map[string]int{}, released: make(chan struct{})}
}

func (g *controlGate) hang(method string, times int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if times <= 0 {
		times = -1
	}
	g.hangs[method] = times
}

func (g *controlGate) setDelay(method string, ms int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ms <= 0 {
		delete(g.delays, method)
		return
	}
	g.delays[method] = ms
}

func (g *controlGate) clear() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hangs = map[string]int{}
	g.delays = map[string]int{}
	close(g.released)
	g.released = make(chan struct{})
}

func (g *controlGate) callCounts() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int, len(g.calls))
	for k, v := range g.calls {
		out[k] = v
	}
	return out
}

// admit records the call and says whether to hold it (and until which release) and how long to delay it.
func (g *controlGate) admit(method string) (hold bool, released <-chan struct{}, delay time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls[method]++
	if n, ok := g.hangs[method]; ok && n != 0 {
		if n > 0 {
			g.hangs[method] = n - 1
		}
		hold = true
	}
	return hold, g.released, time.Duration(g.delays[method]) * time.Millisecond
}

func (g *controlGate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))

		hold, released, delay := g.admit(soapMethod(body))
		if hold {
			select {
			case <-r.Context().Done():
				return // the client gave up: it gets no answer, as from a vCenter that stopped answering
			case <-released:
			}
		}
		if delay > 0 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(delay):
			}
		}
		next.ServeHTTP(w, r)
	})
}

// soapMethod is the local name of the first element inside the SOAP Body ("" when there is none).
func soapMethod(body []byte) string {
	d := xml.NewDecoder(bytes.NewReader(body))
	inBody := false
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		if start, ok := tok.(xml.StartElement); ok {
			if inBody {
				return start.Name.Local
			}
			inBody = start.Name.Local == "Body"
		}
	}
}
