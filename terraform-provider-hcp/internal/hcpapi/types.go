package hcpapi

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// VM is docs/API.md's VM.
type VM struct {
	ID           string            `json:"id"`
	ProjectID    string            `json:"project_id"`
	Name         string            `json:"name"`
	Zone         string            `json:"zone"`
	ImageID      string            `json:"image_id"`
	FlavorID     string            `json:"flavor_id"`
	Status       string            `json:"status"`
	DesiredState string            `json:"desired_state"`
	Addresses    []Address         `json:"addresses"`
	Tags         map[string]string `json:"tags"`
	Metadata     map[string]string `json:"metadata"`
	CreatedAt    string            `json:"created_at"`
	UpdatedAt    string            `json:"updated_at"`
	LastJobID    string            `json:"last_job_id"`
}

// Address is one of a VM's addresses.
type Address struct {
	Type    string `json:"type"`
	Address string `json:"address"`
	NIC     string `json:"nic"`
}

// VMStatuses and DesiredStates are the values docs/API.md allows.
var (
	VMStatuses = []string{"provisioning", "starting", "running", "stopping", "stopped", "rebooting",
		"deleting", "deleted", "error"}
	DesiredStates = []string{"running", "stopped", "deleted"}
	JobStatuses   = []string{"queued", "running", "succeeded", "failed"}
)

// Gone reports whether the VM is deleted or being deleted: an answer about it is not a live VM.
func (v *VM) Gone() bool {
	return v.Status == "deleted" || v.Status == "deleting" || v.DesiredState == "deleted"
}

func (v *VM) validate() error {
	var errs []error
	need := func(field, value string) {
		if value == "" {
			errs = append(errs, fmt.Errorf("%s is missing", field))
		}
	}
	need("id", v.ID)
	need("project_id", v.ProjectID)
	need("name", v.Name)
	need("zone", v.Zone)
	need("image_id", v.ImageID)
	need("flavor_id", v.FlavorID)
	if !slices.Contains(VMStatuses, v.Status) {
		errs = append(errs, fmt.Errorf("status %q is not one of %v", v.Status, VMStatuses))
	}
	if !slices.Contains(DesiredStates, v.DesiredState) {
		errs = append(errs, fmt.Errorf("desired_state %q is not one of %v", v.DesiredState, DesiredStates))
	}
	if err := rfc3339("created_at", v.CreatedAt); err != nil {
		errs = append(errs, err)
	}
	for i, a := range v.Addresses {
		if (a.Type != "ipv4" && a.Type != "ipv6") || a.Address == "" {
			errs = append(errs, fmt.Errorf("addresses[%d] is not an ipv4/ipv6 address: %+v", i, a))
		}
	}
	if v.Tags == nil {
		v.Tags = map[string]string{}
	}
	if v.Metadata == nil {
		v.Metadata = map[string]string{}
	}
	return errors.Join(errs...)
}

// Accepted is the 202 answer of a job-starting request.
type Accepted struct {
	ResourceID string `json:"resource_id"`
	JobID      string `json:"job_id"`
}

func (a *Accepted) validate() error {
	if a.ResourceID == "" || a.JobID == "" {
		return errors.New("resource_id and job_id are both required")
	}
	return nil
}

// Job is docs/API.md's Job.
type Job struct {
	ID         string    `json:"id"`
	ProjectID  string    `json:"project_id"`
	Type       string    `json:"type"`
	Status     string    `json:"status"`
	ResourceID string    `json:"resource_id"`
	Attempts   int       `json:"attempts"`
	Error      *JobError `json:"error"`
	TraceID    string    `json:"trace_id"`
}

// JobError is a failed job's error.
type JobError struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Details   map[string]any `json:"details"`
	Retryable bool           `json:"retryable"`
}

// Finished reports whether the job has an outcome.
func (j *Job) Finished() bool { return j.Status == "succeeded" || j.Status == "failed" }

func (j *Job) validate() error {
	if j.ID == "" || j.Type == "" {
		return errors.New("id and type are required")
	}
	if !slices.Contains(JobStatuses, j.Status) {
		return fmt.Errorf("status %q is not one of %v", j.Status, JobStatuses)
	}
	if j.Status == "failed" && (j.Error == nil || j.Error.Code == "") {
		return errors.New("a failed job without an error")
	}
	return nil
}

// JobFailed is a job that ended with status failed.
type JobFailed struct {
	Job *Job
}

func (e *JobFailed) Error() string {
	msg := fmt.Sprintf("job %s (%s) failed: %s: %s", e.Job.ID, e.Job.Type, e.Job.Error.Code, e.Job.Error.Message)
	if e.Job.TraceID != "" {
		msg += fmt.Sprintf(" [trace_id %s]", e.Job.TraceID)
	}
	return msg
}

// Zone, Image and Flavor are the tenant catalog's entries.
type Zone struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Policy       string       `json:"policy"`
	Capabilities Capabilities `json:"capabilities"`
}

// Capabilities of a zone's provider.
type Capabilities struct {
	ConsoleTypes        []string `json:"console_types"`
	Reboot              bool     `json:"reboot"`
	GracefulStop        bool     `json:"graceful_stop"`
	Snapshots           bool     `json:"snapshots"`
	Resize              bool     `json:"resize"`
	GuestAgentAddresses bool     `json:"guest_agent_addresses"`
	ProviderTags        bool     `json:"provider_tags"`
}

type Image struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	OS         string `json:"os"`
	MinDiskGB  int64  `json:"min_disk_gb"`
	MinRAMMB   int64  `json:"min_ram_mb"`
	Visibility string `json:"visibility"`
	CreatedAt  string `json:"created_at"`
}

type Flavor struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	VCPUs     int64          `json:"vcpus"`
	RAMMB     int64          `json:"ram_mb"`
	DiskGB    int64          `json:"disk_gb"`
	Extras    map[string]any `json:"extras"`
	CreatedAt string         `json:"created_at"`
}

type page[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

func rfc3339(field, v string) error {
	if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
		return fmt.Errorf("%s %q is not an RFC 3339 time", field, v)
	}
	return nil
}
