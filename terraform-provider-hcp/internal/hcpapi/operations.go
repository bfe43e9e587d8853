package hcpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// CreateVMRequest is POST /v1/projects/{p}/vms's body.
type CreateVMRequest struct {
	Name     string            `json:"name"`
	Zone     string            `json:"zone"`
	ImageID  string            `json:"image_id"`
	FlavorID string            `json:"flavor_id"`
	Tags     map[string]string `json:"tags"`
	Metadata map[string]string `json:"metadata"`
	SSHKeys  []string          `json:"ssh_keys,omitempty"`
	UserData *string           `json:"user_data,omitempty"`
	PowerOn  bool              `json:"power_on"`
}

// UpdateVMRequest is PATCH /v1/projects/{p}/vms/{id}'s body (what a VM update allows).
type UpdateVMRequest struct {
	Tags     map[string]string `json:"tags"`
	Metadata map[string]string `json:"metadata"`
}

func vmPath(project, id string) string {
	return fmt.Sprintf("/v1/projects/%s/vms/%s", esc(project), esc(id))
}

// GetVM answers the VM, or an *Error with code NOT_FOUND.
func (c *Client) GetVM(ctx context.Context, project, id string) (*VM, error) {
	a, err := c.do(ctx, request{method: http.MethodGet, path: vmPath(project, id), ok: []int{200}})
	if err != nil {
		return nil, err
	}
	return decodeInto(a, "the VM", (*VM).validate)
}

// PostCreateVM sends one create with this Idempotency-Key and answers HCP's 202.
func (c *Client) PostCreateVM(ctx context.Context, project, key string, body CreateVMRequest) (*Accepted, error) {
	a, err := c.do(ctx, request{method: http.MethodPost, path: fmt.Sprintf("/v1/projects/%s/vms", esc(project)),
		body: body, ok: []int{202}, idempotencyKey: key})
	if err != nil {
		return nil, err
	}
	return decodeInto(a, "the create's answer", (*Accepted).validate)
}

// UpdateVM patches tags and metadata and answers the VM.
func (c *Client) UpdateVM(ctx context.Context, project, id string, body UpdateVMRequest) (*VM, error) {
	a, err := c.do(ctx, request{method: http.MethodPatch, path: vmPath(project, id), body: body, ok: []int{200}})
	if err != nil {
		return nil, err
	}
	return decodeInto(a, "the updated VM", (*VM).validate)
}

// VMAction starts a start or stop job (stop is graceful: force false).
func (c *Client) VMAction(ctx context.Context, project, id, action, key string) (*Accepted, error) {
	var body any = map[string]any{}
	if action == "stop" || action == "reboot" {
		body = map[string]any{"force": false}
	}
	a, err := c.do(ctx, request{method: http.MethodPost, path: vmPath(project, id) + "/actions/" + esc(action),
		body: body, ok: []int{202}, idempotencyKey: key})
	if err != nil {
		return nil, err
	}
	return decodeInto(a, "the "+action+"'s answer", (*Accepted).validate)
}

// DeleteVM starts the VM's delete job.
func (c *Client) DeleteVM(ctx context.Context, project, id, key string) (*Accepted, error) {
	a, err := c.do(ctx, request{method: http.MethodDelete, path: vmPath(project, id), ok: []int{202},
		idempotencyKey: key})
	if err != nil {
		return nil, err
	}
	return decodeInto(a, "the delete's answer", (*Accepted).validate)
}

// GetJob answers one job.
func (c *Client) GetJob(ctx context.Context, project, id string) (*Job, error) {
	a, err := c.do(ctx, request{method: http.MethodGet,
		path: fmt.Sprintf("/v1/projects/%s/jobs/%s", esc(project), esc(id)), ok: []int{200}})
	if err != nil {
		return nil, err
	}
	return decodeInto(a, "the job", (*Job).validate)
}

// WaitJob polls the job until it has an outcome or ctx ends. A job HCP does not show yet (NOT_FOUND right
// after the 202: its read side may lag) is polled again. A failed job is a *JobFailed.
func (c *Client) WaitJob(ctx context.Context, project, id string) (*Job, error) {
	wait := c.backoff
	for {
		job, err := c.GetJob(ctx, project, id)
		switch {
		case err == nil && job.Status == "succeeded":
			return job, nil
		case err == nil && job.Status == "failed":
			return job, &JobFailed{Job: job}
		case err != nil && !IsCode(err, "NOT_FOUND"):
			return nil, err
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("gave up waiting for job %s: %w", id, err)
		}
		wait = min(wait*2, c.maxBackoff)
	}
}

// WaitVM polls the VM until done says it is as wanted (its read side follows the write side a little
// later) or ctx ends. done gets nil while HCP does not find the VM.
func (c *Client) WaitVM(ctx context.Context, project, id string, done func(*VM) bool) (*VM, error) {
	wait := c.backoff / 2
	for {
		vm, err := c.GetVM(ctx, project, id)
		if err != nil && !IsCode(err, "NOT_FOUND") {
			return nil, err
		}
		if done(vm) {
			return vm, nil
		}
		if err := sleep(ctx, wait); err != nil {
			last := "not found"
			if vm != nil {
				last = fmt.Sprintf("status %s, desired_state %s", vm.Status, vm.DesiredState)
			}
			return nil, fmt.Errorf("gave up waiting for VM %s (last seen: %s): %w", id, last, err)
		}
		wait = min(wait*2, c.maxBackoff)
	}
}

// MaxCreateGenerations bounds the walk along a config's key chain (see CreateVM).
const MaxCreateGenerations = 1000

// CreateVM creates the VM the body describes at most once per key chain: it sends the create with the
// key of generation 0 of base (CreateKey), and while HCP answers with a VM that is deleted or being
// deleted (a replay of a create whose VM was destroyed since, within HCP's 24 h idempotency window), with
// the next generation's key. A repeated call with the same base and body, after an apply was interrupted
// anywhere, walks the same keys and gets HCP's first answer for the live one: the same VM and job, no
// second VM. It answers the accepted ids and the generation that gave them.
func (c *Client) CreateVM(ctx context.Context, project, base string, body CreateVMRequest) (*Accepted, int, error) {
	for gen := 0; gen < MaxCreateGenerations; gen++ {
		acc, err := c.PostCreateVM(ctx, project, GenerationKey(base, gen), body)
		if err != nil {
			return nil, gen, err
		}
		vm, err := c.GetVM(ctx, project, acc.ResourceID)
		if err != nil && !IsCode(err, "NOT_FOUND") {
			return nil, gen, err
		}
		// NOT_FOUND: a VM too new for the read side; never a destroyed one (those stay readable as deleted).
		if err != nil || !vm.Gone() {
			return acc, gen, nil
		}
	}
	return nil, MaxCreateGenerations, &Error{Code: "CONFLICT", Message: fmt.Sprintf(
		"%d VMs of this configuration were created and deleted within HCP's idempotency window", MaxCreateGenerations)}
}

// ListZones, ListImages and ListFlavors read the whole catalog list, page by page.
func (c *Client) ListZones(ctx context.Context) ([]Zone, error) {
	return listAll(ctx, c, "/v1/zones", "a zone", func(z *Zone) error { return need2(z.ID, z.Name) })
}

func (c *Client) ListImages(ctx context.Context) ([]Image, error) {
	return listAll(ctx, c, "/v1/images", "an image", func(i *Image) error { return need2(i.ID, i.Name) })
}

func (c *Client) ListFlavors(ctx context.Context) ([]Flavor, error) {
	return listAll(ctx, c, "/v1/flavors", "a flavor", func(f *Flavor) error {
		if f.VCPUs <= 0 || f.RAMMB <= 0 || f.DiskGB <= 0 {
			return fmt.Errorf("flavor %q has non-positive sizes", f.Name)
		}
		return need2(f.ID, f.Name)
	})
}

func need2(id, name string) error {
	if id == "" || name == "" {
		return errors.New("id and name are required")
	}
	return nil
}

// maxPages stops a server that keeps answering cursors from looping the provider forever.
const maxPages = 1000

func listAll[T any](ctx context.Context, c *Client, path, what string, validate func(*T) error) ([]T, error) {
	var all []T
	cursor := ""
	for range maxPages {
		q := url.Values{"limit": {"200"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		a, err := c.do(ctx, request{method: http.MethodGet, path: path + "?" + q.Encode(), ok: []int{200}})
		if err != nil {
			return nil, err
		}
		p, err := decodeInto(a, path+"'s page", func(p *page[T]) error {
			if p.Items == nil {
				return errors.New("items is missing")
			}
			for i := range p.Items {
				if err := validate(&p.Items[i]); err != nil {
					return fmt.Errorf("%s (item %d): %w", what, i, err)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		all = append(all, p.Items...)
		if p.NextCursor == nil || *p.NextCursor == "" {
			return all, nil
		}
		cursor = *p.NextCursor
	}
	return nil, &Error{Code: "INVALID_ANSWER", Message: fmt.Sprintf("%s answered more than %d pages", path, maxPages)}
}

// PollInterval is how long WaitJob first waits between polls (for callers sizing timeouts).
func (c *Client) PollInterval() time.Duration { return c.backoff }
