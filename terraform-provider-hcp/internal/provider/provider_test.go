package provider

import (
	"context"
	"sort"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// The framework checks schemas (defaults on computed attributes, plan modifiers, blocks) only when a
// server answers for them; this catches a schema mistake without a Terraform binary.
func TestTheProviderServesItsSchemasWithoutDiagnostics(t *testing.T) {
	server := providerserver.NewProtocol6(New("test")())()
	resp, err := server.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		t.Errorf("%s: %s: %s", d.Severity, d.Summary, d.Detail)
	}
	var resources, dataSources []string
	for name := range resp.ResourceSchemas {
		resources = append(resources, name)
	}
	for name := range resp.DataSourceSchemas {
		dataSources = append(dataSources, name)
	}
	sort.Strings(resources)
	sort.Strings(dataSources)
	if got := resources; len(got) != 1 || got[0] != "hcp_vm" {
		t.Errorf("resources %v", got)
	}
	if want := []string{"hcp_flavors", "hcp_images", "hcp_zones"}; len(dataSources) != 3 ||
		dataSources[0] != want[0] || dataSources[1] != want[1] || dataSources[2] != want[2] {
		t.Errorf("data sources %v, want %v", dataSources, want)
	}
	vm := resp.ResourceSchemas["hcp_vm"]
	attrs := map[string]*tfprotov6.SchemaAttribute{}
	for _, a := range vm.Block.Attributes {
		attrs[a.Name] = a
	}
	for name, want := range map[string]struct{ required, computed, sensitive bool }{
		"name": {required: true}, "zone": {required: true}, "image_id": {required: true}, "flavor_id": {required: true},
		"power_state": {computed: true}, "tags": {computed: true}, "user_data": {sensitive: true},
		"id": {computed: true}, "status": {computed: true}, "addresses": {computed: true},
	} {
		a, ok := attrs[name]
		if !ok {
			t.Errorf("hcp_vm has no %s", name)
			continue
		}
		if a.Required != want.required || (want.computed && !a.Computed) || a.Sensitive != want.sensitive {
			t.Errorf("hcp_vm.%s: required %v computed %v sensitive %v", name, a.Required, a.Computed, a.Sensitive)
		}
	}
	provider := map[string]bool{}
	for _, a := range resp.Provider.Block.Attributes {
		provider[a.Name] = a.Sensitive
	}
	if sensitive, ok := provider["token"]; !ok || !sensitive {
		t.Errorf("the provider's token is missing or not sensitive: %v", provider)
	}
}
