// Package hcpapi is the provider's HTTP client for HCP's northbound API (docs/API.md). Every answer is
// validated where it enters: a status the route does not answer, a body that is not the documented JSON
// or misses a field the provider relies on becomes an *Error, never a zero value.
package hcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to one HCP endpoint with one bearer token.
type Client struct {
	baseURL *url.URL
	token   string
	http    *http.Client
	// Retries of a request HCP refused as retryable (429, 503) or that got no answer; every request the
	// client retries is idempotent (a GET, a PATCH setting values, or a POST/DELETE with an Idempotency-Key).
	maxAttempts int
	// Wait before a retry when HCP's answer carries no Retry-After, and between job polls.
	backoff    time.Duration
	maxBackoff time.Duration
	userAgent  string
}

// Options tune a Client; zero values take the defaults.
type Options struct {
	HTTPClient  *http.Client
	MaxAttempts int
	Backoff     time.Duration
	MaxBackoff  time.Duration
	UserAgent   string
}

// NewClient checks the endpoint (an absolute http or https URL) and the token (non-empty).
func NewClient(endpoint, token string, opts Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(endpoint, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("endpoint %q is not an absolute http(s) URL", endpoint)
	}
	if strings.TrimSpace(token) == "" {
		return nil, errors.New("token is empty")
	}
	c := &Client{baseURL: u, token: token, http: opts.HTTPClient, maxAttempts: opts.MaxAttempts,
		backoff: opts.Backoff, maxBackoff: opts.MaxBackoff, userAgent: opts.UserAgent}
	if c.http == nil {
		c.http = &http.Client{Timeout: 60 * time.Second}
	}
	if c.maxAttempts <= 0 {
		c.maxAttempts = 5
	}
	if c.backoff <= 0 {
		c.backoff = 500 * time.Millisecond
	}
	if c.maxBackoff <= 0 {
		c.maxBackoff = 5 * time.Second
	}
	if c.userAgent == "" {
		c.userAgent = "terraform-provider-hcp"
	}
	return c, nil
}

// Error is HCP's error envelope ({"error": {code, message, details, trace_id}}) or, for an answer that is
// not one, a description of what was wrong with it (Code "INVALID_ANSWER" or "UNREACHABLE").
type Error struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
	TraceID string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Status > 0 {
		fmt.Fprintf(&b, "HCP answered %d %s: %s", e.Status, e.Code, e.Message)
	} else {
		fmt.Fprintf(&b, "%s: %s", e.Code, e.Message)
	}
	if len(e.Details) > 0 {
		if d, err := json.Marshal(e.Details); err == nil {
			fmt.Fprintf(&b, " (details %s)", d)
		}
	}
	if e.TraceID != "" {
		fmt.Fprintf(&b, " [trace_id %s]", e.TraceID)
	}
	return b.String()
}

// IsCode reports whether err is an *Error with this code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// ErrorCodes of docs/API.md; an envelope naming another code is not HCP's and is refused as an answer.
var ErrorCodes = map[string]int{
	"INVALID_REQUEST": 400, "UNSUPPORTED_MEDIA_TYPE": 415, "UNAUTHORIZED": 401, "FORBIDDEN": 403,
	"NOT_FOUND": 404, "CONFLICT": 409, "QUOTA_EXCEEDED": 403, "FEATURE_NOT_SUPPORTED": 422,
	"RATE_LIMITED": 429, "PROVIDER_UNAVAILABLE": 503, "PROVIDER_TIMEOUT": 504, "INTERNAL_ERROR": 500,
}

type envelope struct {
	Error *struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
		TraceID string         `json:"trace_id"`
	} `json:"error"`
}

// request is one call: method, path (with query), body (JSON-encoded when not nil), the statuses that
// count as success, and the idempotency key for job-starting POST/DELETE.
type request struct {
	method         string
	path           string
	body           any
	ok             []int
	idempotencyKey string
}

// answer is a successful response: its status, headers and raw body.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (c *Client) do(ctx context.Context, r request) (*answer, error) {
	var payload []byte
	if r.body != nil {
		var err error
		if payload, err = json.Marshal(r.body); err != nil {
			return nil, &Error{Code: "INVALID_REQUEST", Message: "cannot encode the request body: " + err.Error()}
		}
	}
	target := c.baseURL.String() + r.path
	var last error
	for attempt := 1; attempt <= c.maxAttempts; attempt++ {
		ans, retryAfter, err := c.once(ctx, r, target, payload)
		if err == nil {
			return ans, nil
		}
		last = err
		if retryAfter < 0 || attempt == c.maxAttempts {
			return nil, err
		}
		wait := retryAfter
		if wait == 0 {
			wait = c.backoff << (attempt - 1)
		}
		if wait > c.maxBackoff {
			wait = c.maxBackoff
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, last
		}
	}
	return nil, last
}

// once sends the request one time. retryAfter < 0: do not retry; 0: retry after the client's backoff;
// > 0: retry after that long (HCP's Retry-After).
func (c *Client) once(ctx context.Context, r request, target string, payload []byte) (*answer, time.Duration, error) {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return nil, -1, &Error{Code: "INVALID_REQUEST", Message: err.Error()}
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", r.idempotencyKey)
	}
	res, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, -1, &Error{Code: "UNREACHABLE", Message: fmt.Sprintf("%s %s: %v", r.method, r.path, ctx.Err())}
		}
		// No answer: safe to send again only when the request is idempotent.
		retry := time.Duration(-1)
		if r.method == http.MethodGet || r.method == http.MethodPatch || r.idempotencyKey != "" {
			retry = 0
		}
		return nil, retry, &Error{Code: "UNREACHABLE", Message: fmt.Sprintf("%s %s: %v", r.method, r.path, err)}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return nil, 0, &Error{Code: "UNREACHABLE", Message: fmt.Sprintf("%s %s: reading the answer: %v", r.method, r.path, err)}
	}
	for _, s := range r.ok {
		if res.StatusCode == s {
			return &answer{status: res.StatusCode, header: res.Header, body: raw}, 0, nil
		}
	}
	herr := decodeError(res.StatusCode, raw)
	retry := time.Duration(-1)
	if res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable {
		retry = parseRetryAfter(res.Header.Get("Retry-After"))
	}
	return nil, retry, herr
}

func decodeError(status int, raw []byte) *Error {
	var env envelope
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&env); err != nil || env.Error == nil || env.Error.Code == "" {
		return &Error{Status: status, Code: "INVALID_ANSWER",
			Message: fmt.Sprintf("an answer without HCP's error envelope: %s", snippet(raw))}
	}
	if _, known := ErrorCodes[env.Error.Code]; !known {
		return &Error{Status: status, Code: "INVALID_ANSWER",
			Message: fmt.Sprintf("an error code HCP does not have (%q): %s", env.Error.Code, env.Error.Message)}
	}
	return &Error{Status: status, Code: env.Error.Code, Message: env.Error.Message, Details: env.Error.Details,
		TraceID: env.Error.TraceID}
}

func parseRetryAfter(v string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		if s == 0 {
			return time.Millisecond
		}
		return time.Duration(s) * time.Second
	}
	return 0
}

func snippet(raw []byte) string {
	s := strings.TrimSpace(string(raw))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}

// decodeInto decodes a JSON answer and then checks it with validate.
func decodeInto[T any](a *answer, what string, validate func(*T) error) (*T, error) {
	var v T
	if err := json.Unmarshal(a.body, &v); err != nil {
		return nil, &Error{Status: a.status, Code: "INVALID_ANSWER",
			Message: fmt.Sprintf("%s is not the documented JSON (%v): %s", what, err, snippet(a.body))}
	}
	if validate != nil {
		if err := validate(&v); err != nil {
			return nil, &Error{Status: a.status, Code: "INVALID_ANSWER", Message: fmt.Sprintf("%s: %v", what, err)}
		}
	}
	return &v, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func esc(s string) string { return url.PathEscape(s) }
