package hcpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func newTestClient(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, "tok", Options{Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func vmJSON(id, status, desired string) map[string]any {
	return map[string]any{"id": id, "project_id": "p", "name": "web", "zone": "local", "image_id": "i", "flavor_id": "f",
		"status": status, "desired_state": desired, "addresses": []any{}, "tags": map[string]string{},
		"metadata": map[string]string{}, "created_at": "2026-12-04T09:00:00.000Z", "updated_at": "2026-12-04T09:00:00.000Z",
		"last_job_id": "j-" + id}
}

var body = CreateVMRequest{Name: "web", Zone: "local", ImageID: "i", FlavorID: "f",
	Tags: map[string]string{"env": "dev"}, Metadata: map[string]string{}, PowerOn: true}

func TestNewClientRefusesARelativeEndpointAndAnEmptyToken(t *testing.T) {
	if _, err := NewClient("hcp.local:8080", "t", Options{}); err == nil {
		t.Error("accepted an endpoint without a scheme")
	}
	if _, err := NewClient("ftp://hcp", "t", Options{}); err == nil {
		t.Error("accepted an ftp endpoint")
	}
	if _, err := NewClient("http://hcp", " ", Options{}); err == nil {
		t.Error("accepted a blank token")
	}
}

func TestCreateKeyIsTheSameForTheSameConfigurationAndDiffersOtherwise(t *testing.T) {
	k1, _ := CreateKey("p", body)
	again := body
	again.Tags = map[string]string{"env": "dev"}
	k2, _ := CreateKey("p", again)
	if k1 != k2 {
		t.Fatalf("same configuration, different keys: %s %s", k1, k2)
	}
	changed := body
	changed.Tags = map[string]string{"env": "prod"}
	k3, _ := CreateKey("p", changed)
	k4, _ := CreateKey("q", body)
	if k3 == k1 || k4 == k1 {
		t.Fatal("a different tag or project gave the same key")
	}
	for _, k := range []string{k1, GenerationKey(k1, 999)} {
		if len(k) < 1 || len(k) > 255 {
			t.Fatalf("key %q is not 1..255 characters", k)
		}
		for _, r := range k {
			if r < 0x21 || r > 0x7e {
				t.Fatalf("key %q has a character that is not printable ASCII", k)
			}
		}
	}
}

// fakeCreates answers creates as HCP does: per key, the first answer again; the VM of each answer is
// looked up in vms.
type fakeCreates struct {
	mu     sync.Mutex
	byKey  map[string]Accepted
	vms    map[string]map[string]any
	keys   []string
	nextID int
}

func (f *fakeCreates) handler(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer tok" {
			writeJSON(w, 401, map[string]any{"error": map[string]any{"code": "UNAUTHORIZED", "message": "no"}})
			return
		}
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/projects/p/vms":
			key := r.Header.Get("Idempotency-Key")
			f.keys = append(f.keys, key)
			acc, ok := f.byKey[key]
			if !ok {
				f.nextID++
				id := fmt.Sprintf("vm-%d", f.nextID)
				acc = Accepted{ResourceID: id, JobID: "j-" + id}
				f.byKey[key] = acc
				f.vms[id] = vmJSON(id, "provisioning", "running")
			}
			writeJSON(w, 202, acc)
		case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/v1/projects/p/vms/"):
			vm, ok := f.vms[strings.TrimPrefix(r.URL.Path, "/v1/projects/p/vms/")]
			if !ok {
				writeJSON(w, 404, map[string]any{"error": map[string]any{"code": "NOT_FOUND", "message": "no VM"}})
				return
			}
			writeJSON(w, 200, vm)
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		}
	}
}

func TestCreateVMSentAgainGetsTheSameVMAndNoSecondOne(t *testing.T) {
	f := &fakeCreates{byKey: map[string]Accepted{}, vms: map[string]map[string]any{}}
	c := newTestClient(t, f.handler(t))
	base, _ := CreateKey("p", body)
	first, _, err := c.CreateVM(context.Background(), "p", base, body)
	if err != nil {
		t.Fatal(err)
	}
	// The apply died before saving the answer; the next apply computes the same key.
	second, _, err := c.CreateVM(context.Background(), "p", base, body)
	if err != nil {
		t.Fatal(err)
	}
	if *first != *second || len(f.vms) != 1 {
		t.Fatalf("two creates: %+v then %+v, %d VMs", first, second, len(f.vms))
	}
}

func TestCreateVMAfterADestroyWithinTheWindowMakesANewVM(t *testing.T) {
	f := &fakeCreates{byKey: map[string]Accepted{}, vms: map[string]map[string]any{}}
	c := newTestClient(t, f.handler(t))
	base, _ := CreateKey("p", body)
	first, gen, err := c.CreateVM(context.Background(), "p", base, body)
	if err != nil || gen != 0 {
		t.Fatalf("first create: gen %d, %v", gen, err)
	}
	f.vms[first.ResourceID] = vmJSON(first.ResourceID, "deleted", "deleted")
	second, gen, err := c.CreateVM(context.Background(), "p", base, body)
	if err != nil || gen != 1 || second.ResourceID == first.ResourceID {
		t.Fatalf("after a destroy: %+v gen %d, %v", second, gen, err)
	}
	// And that one, interrupted and sent again, is found again at generation 1.
	third, gen, err := c.CreateVM(context.Background(), "p", base, body)
	if err != nil || gen != 1 || *third != *second {
		t.Fatalf("replay after a destroy: %+v gen %d, %v", third, gen, err)
	}
	if want := []string{base, base, base + "-1", base, base + "-1"}; strings.Join(f.keys, ",") != strings.Join(want, ",") {
		t.Fatalf("keys sent %v, want %v", f.keys, want)
	}
}

func TestAnErrorEnvelopeBecomesAnErrorWithCodeMessageAndTrace(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 403, map[string]any{"error": map[string]any{"code": "QUOTA_EXCEEDED", "message": "vcpus 9 > 8",
			"details": map[string]any{"resource": "vcpus"}, "trace_id": "tr-1"}})
	})
	_, err := c.PostCreateVM(context.Background(), "p", "k", body)
	var e *Error
	if !errors.As(err, &e) || e.Code != "QUOTA_EXCEEDED" || e.Status != 403 || e.TraceID != "tr-1" {
		t.Fatalf("got %#v", err)
	}
	for _, part := range []string{"403", "QUOTA_EXCEEDED", "vcpus 9 > 8", "tr-1", `"resource":"vcpus"`} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("message %q lacks %q", err.Error(), part)
		}
	}
}

func TestAnswersThatAreNotHCPsAreRefused(t *testing.T) {
	cases := map[string]struct {
		status int
		body   string
	}{
		"an error without the envelope":    {502, "<html>bad gateway</html>"},
		"an envelope with an unknown code": {400, `{"error":{"code":"OOPS","message":"x"}}`},
		"a 202 without a job id":           {202, `{"resource_id":"vm-1"}`},
		"a 202 that is not JSON":           {202, `accepted`},
		"a success status the route lacks": {200, `{"resource_id":"vm-1","job_id":"j"}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			})
			_, err := c.PostCreateVM(context.Background(), "p", "k", body)
			if !IsCode(err, "INVALID_ANSWER") {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestAVMWithAStatusAPIMdLacksIsRefused(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, vmJSON("vm-1", "hibernating", "running"))
	})
	_, err := c.GetVM(context.Background(), "p", "vm-1")
	if !IsCode(err, "INVALID_ANSWER") || !strings.Contains(err.Error(), "hibernating") {
		t.Fatalf("got %v", err)
	}
}

func TestARetryableRefusalIsSentAgainWithTheSameKey(t *testing.T) {
	var keys []string
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		if len(keys) < 3 {
			w.Header().Set("Retry-After", "0")
			writeJSON(w, 503, map[string]any{"error": map[string]any{"code": "PROVIDER_UNAVAILABLE", "message": "draining"}})
			return
		}
		writeJSON(w, 202, Accepted{ResourceID: "vm-1", JobID: "j-1"})
	})
	acc, err := c.PostCreateVM(context.Background(), "p", "key-1", body)
	if err != nil || acc.ResourceID != "vm-1" {
		t.Fatalf("got %+v, %v", acc, err)
	}
	if strings.Join(keys, ",") != "key-1,key-1,key-1" {
		t.Fatalf("keys %v", keys)
	}
}

func TestARefusalThatIsNotRetryableIsNotSentAgain(t *testing.T) {
	calls := 0
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls++
		writeJSON(w, 409, map[string]any{"error": map[string]any{"code": "CONFLICT", "message": "key reused"}})
	})
	if _, err := c.PostCreateVM(context.Background(), "p", "k", body); !IsCode(err, "CONFLICT") || calls != 1 {
		t.Fatalf("got %v after %d calls", err, calls)
	}
}

func TestWaitJobPollsUntilTheJobFailsAndAnswersItsError(t *testing.T) {
	polls := 0
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		polls++
		switch {
		case polls == 1:
			writeJSON(w, 404, map[string]any{"error": map[string]any{"code": "NOT_FOUND", "message": "not yet"}})
		case polls < 4:
			writeJSON(w, 200, map[string]any{"id": "j-1", "type": "vm.create", "status": "running"})
		default:
			writeJSON(w, 200, map[string]any{"id": "j-1", "type": "vm.create", "status": "failed", "trace_id": "tr-9",
				"error": map[string]any{"code": "PROVIDER_TIMEOUT", "message": "clone took too long", "retryable": true}})
		}
	})
	_, err := c.WaitJob(context.Background(), "p", "j-1")
	var failed *JobFailed
	if !errors.As(err, &failed) || failed.Job.Error.Code != "PROVIDER_TIMEOUT" || polls != 4 {
		t.Fatalf("got %v after %d polls", err, polls)
	}
	if !strings.Contains(err.Error(), "clone took too long") || !strings.Contains(err.Error(), "tr-9") {
		t.Fatalf("message %q", err.Error())
	}
}

func TestWaitJobGivesUpWhenTheTimeoutEnds(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"id": "j-1", "type": "vm.create", "status": "queued"})
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.WaitJob(ctx, "p", "j-1"); err == nil {
		t.Fatal("a cancelled wait answered no error")
	}
}

func TestListsFollowTheCursorToTheLastPage(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cursor") == "" {
			writeJSON(w, 200, map[string]any{"items": []any{map[string]any{"id": "f1", "name": "small", "vcpus": 1, "ram_mb": 1024, "disk_gb": 10}}, "next_cursor": "c2"})
			return
		}
		writeJSON(w, 200, map[string]any{"items": []any{map[string]any{"id": "f2", "name": "large", "vcpus": 4, "ram_mb": 8192, "disk_gb": 80}}, "next_cursor": nil})
	})
	flavors, err := c.ListFlavors(context.Background())
	if err != nil || len(flavors) != 2 || flavors[1].Name != "large" {
		t.Fatalf("got %+v, %v", flavors, err)
	}
}

func TestAListWithoutItemsIsRefused(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"zones": []any{}})
	})
	if _, err := c.ListZones(context.Background()); !IsCode(err, "INVALID_ANSWER") {
		t.Fatalf("got %v", err)
	}
}

// HCP records the create, then the connection drops before its answer reaches the provider.
func TestACreateWhoseAnswerWasCutIsSentAgainWithTheSameKeyAndGetsTheSameVM(t *testing.T) {
	f := &fakeCreates{byKey: map[string]Accepted{}, vms: map[string]map[string]any{}}
	inner := f.handler(t)
	cut := true
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && cut {
			cut = false
			inner(httptest.NewRecorder(), r) // HCP acts on it...
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Fatal(err)
			}
			_ = conn.Close() // ...and the answer never arrives.
			return
		}
		inner(w, r)
	})
	base, _ := CreateKey("p", body)
	acc, _, err := c.CreateVM(context.Background(), "p", base, body)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.vms) != 1 || acc.ResourceID != "vm-1" || strings.Join(f.keys, ",") != base+","+base {
		t.Fatalf("answer %+v, %d VMs, keys %v", acc, len(f.vms), f.keys)
	}
}
