// Package provider is the `hcp` provider: its configuration, the hcp_vm resource and the catalog's data
// sources.
package provider

import (
	"context"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hcp/terraform-provider-hcp/internal/hcpapi"
)

// New answers the provider factory providerserver.Serve wants.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &hcpProvider{version: version} }
}

type hcpProvider struct {
	version string
}

// configured is what resources and data sources get from Configure: the client and the default project.
type configured struct {
	client  *hcpapi.Client
	project string
}

type providerModel struct {
	Endpoint types.String `tfsdk:"endpoint"`
	Token    types.String `tfsdk:"token"`
	Project  types.String `tfsdk:"project"`
}

func (p *hcpProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "hcp"
	resp.Version = p.version
}

func (p *hcpProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "HCP (Hypervisor Control Plane): VMs in a project and the tenant catalog.",
		Attributes: map[string]schema.Attribute{
			"endpoint": schema.StringAttribute{
				Optional:    true,
				Description: "HCP's base URL, e.g. https://hcp.example.com. Default: the HCP_URL environment variable.",
			},
			"token": schema.StringAttribute{
				Optional:    true,
				Sensitive:   true,
				Description: "Bearer token (JWT) for HCP. Default: the HCP_TOKEN environment variable.",
			},
			"project": schema.StringAttribute{
				Optional:    true,
				Description: "Project of the resources that name none. Default: the HCP_PROJECT environment variable.",
			},
		},
	}
}

func (p *hcpProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// Unknown until another resource is applied: nothing can be called yet; resources see a nil client.
	if cfg.Endpoint.IsUnknown() || cfg.Token.IsUnknown() || cfg.Project.IsUnknown() {
		return
	}
	endpoint := valueOrEnv(cfg.Endpoint, "HCP_URL")
	token := valueOrEnv(cfg.Token, "HCP_TOKEN")
	project := valueOrEnv(cfg.Project, "HCP_PROJECT")
	if endpoint == "" {
		resp.Diagnostics.AddAttributeError(path.Root("endpoint"), "HCP endpoint missing",
			"Set the provider's endpoint or the HCP_URL environment variable.")
	}
	if token == "" {
		resp.Diagnostics.AddAttributeError(path.Root("token"), "HCP token missing",
			"Set the provider's token or the HCP_TOKEN environment variable.")
	}
	if resp.Diagnostics.HasError() {
		return
	}
	client, err := hcpapi.NewClient(endpoint, token, hcpapi.Options{UserAgent: "terraform-provider-hcp/" + p.version})
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("endpoint"), "Invalid HCP provider configuration", err.Error())
		return
	}
	c := &configured{client: client, project: project}
	resp.ResourceData = c
	resp.DataSourceData = c
}

func (p *hcpProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{newVMResource}
}

func (p *hcpProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{newZonesDataSource, newImagesDataSource, newFlavorsDataSource}
}

func valueOrEnv(v types.String, env string) string {
	if !v.IsNull() && v.ValueString() != "" {
		return v.ValueString()
	}
	return os.Getenv(env)
}
