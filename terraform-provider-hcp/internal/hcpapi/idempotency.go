package hcpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// CreateKey derives the base of a create's Idempotency-Key from what the create sends: the project and
// the request body. Terraform gives a provider nowhere to keep a value between a request that was sent
// and an apply that died before the answer was saved, so the key must be something the next apply
// computes again by itself: the same configuration gives the same key (HCP then answers its first
// answer again, the same VM and job), a different configuration a different one. json.Marshal writes
// map keys sorted, so the encoding of a body is canonical.
func CreateKey(project string, body CreateVMRequest) (string, error) {
	enc, err := json.Marshal(struct {
		Project string          `json:"project"`
		Body    CreateVMRequest `json:"body"`
	}{project, body})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(enc)
	return "tf-vm-create-" + hex.EncodeToString(sum[:20]), nil
}

// GenerationKey is the key of one generation of a base: base itself for 0, then base-1, base-2... The
// result stays within API.md's 1..255 printable ASCII.
func GenerationKey(base string, gen int) string {
	if gen == 0 {
		return base
	}
	return fmt.Sprintf("%s-%d", base, gen)
}
