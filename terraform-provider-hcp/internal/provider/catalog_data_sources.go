package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The catalog lists (GET /v1/zones, /v1/images, /v1/flavors) take no filters on HCP's side; the data
// sources filter what they read, so a configuration can look an image or flavor up by name.

// catalogBase is the Configure every catalog data source shares.
type catalogBase struct {
	c *configured
}

func (b *catalogBase) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	c, ok := req.ProviderData.(*configured)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data", fmt.Sprintf("got %T", req.ProviderData))
		return
	}
	b.c = c
}

func (b *catalogBase) ready(resp *datasource.ReadResponse) bool {
	if b.c == nil {
		resp.Diagnostics.AddError("HCP provider not configured", "The provider's endpoint and token are needed to read the catalog.")
		return false
	}
	return true
}

func matches(filter types.String, value string) bool {
	return filter.IsNull() || filter.IsUnknown() || filter.ValueString() == value
}

// --- hcp_zones -----------------------------------------------------------------------------------

type zonesDataSource struct{ catalogBase }

func newZonesDataSource() datasource.DataSource { return &zonesDataSource{} }

type zoneModel struct {
	ID                  types.String   `tfsdk:"id"`
	Name                types.String   `tfsdk:"name"`
	Policy              types.String   `tfsdk:"policy"`
	ConsoleTypes        []types.String `tfsdk:"console_types"`
	Reboot              types.Bool     `tfsdk:"reboot"`
	GracefulStop        types.Bool     `tfsdk:"graceful_stop"`
	Snapshots           types.Bool     `tfsdk:"snapshots"`
	Resize              types.Bool     `tfsdk:"resize"`
	GuestAgentAddresses types.Bool     `tfsdk:"guest_agent_addresses"`
	ProviderTags        types.Bool     `tfsdk:"provider_tags"`
}

type zonesModel struct {
	ID    types.String `tfsdk:"id"`
	Name  types.String `tfsdk:"name"`
	Zones []zoneModel  `tfsdk:"zones"`
}

func (d *zonesDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_zones"
}

func (d *zonesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Zones a VM can be placed in, with their providers' capabilities.",
		Attributes: map[string]schema.Attribute{
			"id":   schema.StringAttribute{Computed: true, Description: "Always \"zones\"."},
			"name": schema.StringAttribute{Optional: true, Description: "Only the zone with this id or name."},
			"zones": schema.ListNestedAttribute{
				Computed: true,
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":                    schema.StringAttribute{Computed: true},
					"name":                  schema.StringAttribute{Computed: true},
					"policy":                schema.StringAttribute{Computed: true},
					"console_types":         schema.ListAttribute{Computed: true, ElementType: types.StringType},
					"reboot":                schema.BoolAttribute{Computed: true},
					"graceful_stop":         schema.BoolAttribute{Computed: true},
					"snapshots":             schema.BoolAttribute{Computed: true},
					"resize":                schema.BoolAttribute{Computed: true},
					"guest_agent_addresses": schema.BoolAttribute{Computed: true},
					"provider_tags":         schema.BoolAttribute{Computed: true},
				}},
			},
		},
	}
}

func (d *zonesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m zonesModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || !d.ready(resp) {
		return
	}
	zones, err := d.c.client.ListZones(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Cannot list HCP zones", err.Error())
		return
	}
	m.ID = types.StringValue("zones")
	m.Zones = []zoneModel{}
	for _, z := range zones {
		if !matches(m.Name, z.ID) && !matches(m.Name, z.Name) {
			continue
		}
		consoles := make([]types.String, 0, len(z.Capabilities.ConsoleTypes))
		for _, t := range z.Capabilities.ConsoleTypes {
			consoles = append(consoles, types.StringValue(t))
		}
		m.Zones = append(m.Zones, zoneModel{
			ID: types.StringValue(z.ID), Name: types.StringValue(z.Name), Policy: types.StringValue(z.Policy),
			ConsoleTypes: consoles, Reboot: types.BoolValue(z.Capabilities.Reboot),
			GracefulStop: types.BoolValue(z.Capabilities.GracefulStop), Snapshots: types.BoolValue(z.Capabilities.Snapshots),
			Resize: types.BoolValue(z.Capabilities.Resize), GuestAgentAddresses: types.BoolValue(z.Capabilities.GuestAgentAddresses),
			ProviderTags: types.BoolValue(z.Capabilities.ProviderTags),
		})
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// --- hcp_images ----------------------------------------------------------------------------------

type imagesDataSource struct{ catalogBase }

func newImagesDataSource() datasource.DataSource { return &imagesDataSource{} }

type imageModel struct {
	ID         types.String `tfsdk:"id"`
	Name       types.String `tfsdk:"name"`
	OS         types.String `tfsdk:"os"`
	MinDiskGB  types.Int64  `tfsdk:"min_disk_gb"`
	MinRAMMB   types.Int64  `tfsdk:"min_ram_mb"`
	Visibility types.String `tfsdk:"visibility"`
}

type imagesModel struct {
	ID     types.String `tfsdk:"id"`
	Name   types.String `tfsdk:"name"`
	OS     types.String `tfsdk:"os"`
	Images []imageModel `tfsdk:"images"`
}

func (d *imagesDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_images"
}

func (d *imagesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Catalog images visible to tenants.",
		Attributes: map[string]schema.Attribute{
			"id":   schema.StringAttribute{Computed: true, Description: "Always \"images\"."},
			"name": schema.StringAttribute{Optional: true, Description: "Only images with this name."},
			"os":   schema.StringAttribute{Optional: true, Description: "Only images of this OS (e.g. linux)."},
			"images": schema.ListNestedAttribute{
				Computed: true,
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":          schema.StringAttribute{Computed: true},
					"name":        schema.StringAttribute{Computed: true},
					"os":          schema.StringAttribute{Computed: true},
					"min_disk_gb": schema.Int64Attribute{Computed: true},
					"min_ram_mb":  schema.Int64Attribute{Computed: true},
					"visibility":  schema.StringAttribute{Computed: true},
				}},
			},
		},
	}
}

func (d *imagesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m imagesModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || !d.ready(resp) {
		return
	}
	images, err := d.c.client.ListImages(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Cannot list HCP images", err.Error())
		return
	}
	m.ID = types.StringValue("images")
	m.Images = []imageModel{}
	for _, i := range images {
		if !matches(m.Name, i.Name) || !matches(m.OS, i.OS) {
			continue
		}
		m.Images = append(m.Images, imageModel{ID: types.StringValue(i.ID), Name: types.StringValue(i.Name),
			OS: types.StringValue(i.OS), MinDiskGB: types.Int64Value(i.MinDiskGB), MinRAMMB: types.Int64Value(i.MinRAMMB),
			Visibility: types.StringValue(i.Visibility)})
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// --- hcp_flavors ---------------------------------------------------------------------------------

type flavorsDataSource struct{ catalogBase }

func newFlavorsDataSource() datasource.DataSource { return &flavorsDataSource{} }

type flavorModel struct {
	ID     types.String `tfsdk:"id"`
	Name   types.String `tfsdk:"name"`
	VCPUs  types.Int64  `tfsdk:"vcpus"`
	RAMMB  types.Int64  `tfsdk:"ram_mb"`
	DiskGB types.Int64  `tfsdk:"disk_gb"`
}

type flavorsModel struct {
	ID       types.String  `tfsdk:"id"`
	Name     types.String  `tfsdk:"name"`
	MinVCPUs types.Int64   `tfsdk:"min_vcpus"`
	MinRAMMB types.Int64   `tfsdk:"min_ram_mb"`
	Flavors  []flavorModel `tfsdk:"flavors"`
}

func (d *flavorsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_flavors"
}

func (d *flavorsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Catalog flavors (sizes).",
		Attributes: map[string]schema.Attribute{
			"id":         schema.StringAttribute{Computed: true, Description: "Always \"flavors\"."},
			"name":       schema.StringAttribute{Optional: true, Description: "Only flavors with this name."},
			"min_vcpus":  schema.Int64Attribute{Optional: true, Description: "Only flavors with at least this many vCPUs."},
			"min_ram_mb": schema.Int64Attribute{Optional: true, Description: "Only flavors with at least this much RAM (MB)."},
			"flavors": schema.ListNestedAttribute{
				Computed: true,
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":      schema.StringAttribute{Computed: true},
					"name":    schema.StringAttribute{Computed: true},
					"vcpus":   schema.Int64Attribute{Computed: true},
					"ram_mb":  schema.Int64Attribute{Computed: true},
					"disk_gb": schema.Int64Attribute{Computed: true},
				}},
			},
		},
	}
}

func (d *flavorsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m flavorsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || !d.ready(resp) {
		return
	}
	flavors, err := d.c.client.ListFlavors(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Cannot list HCP flavors", err.Error())
		return
	}
	m.ID = types.StringValue("flavors")
	m.Flavors = []flavorModel{}
	for _, f := range flavors {
		if !matches(m.Name, f.Name) || f.VCPUs < m.MinVCPUs.ValueInt64() || f.RAMMB < m.MinRAMMB.ValueInt64() {
			continue
		}
		m.Flavors = append(m.Flavors, flavorModel{ID: types.StringValue(f.ID), Name: types.StringValue(f.Name),
			VCPUs: types.Int64Value(f.VCPUs), RAMMB: types.Int64Value(f.RAMMB), DiskGB: types.Int64Value(f.DiskGB)})
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
