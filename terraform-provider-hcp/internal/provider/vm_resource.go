package provider

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/hcp/terraform-provider-hcp/internal/hcpapi"
)

const (
	defaultCreateTimeout = 20 * time.Minute
	defaultUpdateTimeout = 10 * time.Minute
	defaultDeleteTimeout = 10 * time.Minute
)

type vmResource struct {
	c *configured
}

func newVMResource() resource.Resource { return &vmResource{} }

var (
	_ resource.ResourceWithConfigure      = (*vmResource)(nil)
	_ resource.ResourceWithImportState    = (*vmResource)(nil)
	_ resource.ResourceWithValidateConfig = (*vmResource)(nil)
)

type vmModel struct {
	ID         types.String   `tfsdk:"id"`
	ProjectID  types.String   `tfsdk:"project_id"`
	Name       types.String   `tfsdk:"name"`
	Zone       types.String   `tfsdk:"zone"`
	ImageID    types.String   `tfsdk:"image_id"`
	FlavorID   types.String   `tfsdk:"flavor_id"`
	Tags       types.Map      `tfsdk:"tags"`
	Metadata   types.Map      `tfsdk:"metadata"`
	SSHKeys    types.List     `tfsdk:"ssh_keys"`
	UserData   types.String   `tfsdk:"user_data"`
	PowerState types.String   `tfsdk:"power_state"`
	Status     types.String   `tfsdk:"status"`
	Addresses  types.List     `tfsdk:"addresses"`
	CreatedAt  types.String   `tfsdk:"created_at"`
	UpdatedAt  types.String   `tfsdk:"updated_at"`
	LastJobID  types.String   `tfsdk:"last_job_id"`
	Timeouts   timeouts.Value `tfsdk:"timeouts"`
}

var addressType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"type": types.StringType, "address": types.StringType, "nic": types.StringType,
}}

func (r *vmResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vm"
}

func (r *vmResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	emptyMap := types.MapValueMust(types.StringType, map[string]attr.Value{})
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		Description: "A VM in an HCP project. Creating waits for HCP's create job; tags, metadata and " +
			"power_state change in place, anything else replaces the VM. A create sends an Idempotency-Key " +
			"derived from the project and the configuration, so an apply that is interrupted and run again " +
			"gets the same VM back instead of a second one.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: "The VM's id.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"project_id": schema.StringAttribute{Optional: true, Computed: true,
				Description:   "Project of the VM. Default: the provider's project.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()}},
			"name":      schema.StringAttribute{Required: true, PlanModifiers: replace},
			"zone":      schema.StringAttribute{Required: true, PlanModifiers: replace, Description: "Zone id (data source hcp_zones)."},
			"image_id":  schema.StringAttribute{Required: true, PlanModifiers: replace, Description: "Image id (data source hcp_images)."},
			"flavor_id": schema.StringAttribute{Required: true, PlanModifiers: replace, Description: "Flavor id (data source hcp_flavors)."},
			"tags": schema.MapAttribute{Optional: true, Computed: true, ElementType: types.StringType,
				Default: mapdefault.StaticValue(emptyMap), Description: "Tags; changed in place."},
			"metadata": schema.MapAttribute{Optional: true, Computed: true, ElementType: types.StringType,
				Default: mapdefault.StaticValue(emptyMap), Description: "Metadata; changed in place."},
			"ssh_keys": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplaceIf(
					func(ctx context.Context, req planmodifier.ListRequest, resp *listplanmodifier.RequiresReplaceIfFuncResponse) {
						resp.RequiresReplace = !createInputsUnknown(ctx, req.Private, req.StateValue.IsNull())
					}, createInputsDescription, createInputsDescription)},
				Description: "SSH public keys given to the guest at create (HCP does not answer them back)."},
			"user_data": schema.StringAttribute{Optional: true, Sensitive: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplaceIf(
					func(ctx context.Context, req planmodifier.StringRequest, resp *stringplanmodifier.RequiresReplaceIfFuncResponse) {
						resp.RequiresReplace = !createInputsUnknown(ctx, req.Private, req.StateValue.IsNull())
					}, createInputsDescription, createInputsDescription)},
				Description: "Cloud-init user data given at create (HCP does not answer it back)."},
			"power_state": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("running"),
				Description: "running or stopped; a change starts or (gracefully) stops the VM in place."},
			"status": schema.StringAttribute{Computed: true, Description: "HCP's status of the VM."},
			"addresses": schema.ListAttribute{Computed: true, ElementType: addressType,
				Description: "The VM's addresses: type (ipv4, ipv6), address, nic."},
			"created_at": schema.StringAttribute{Computed: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"updated_at":  schema.StringAttribute{Computed: true},
			"last_job_id": schema.StringAttribute{Computed: true},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true, Delete: true}),
		},
	}
}

func (r *vmResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	c, ok := req.ProviderData.(*configured)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data", fmt.Sprintf("got %T", req.ProviderData))
		return
	}
	r.c = c
}

func (r *vmResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var ps types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("power_state"), &ps)...)
	if !ps.IsNull() && !ps.IsUnknown() && ps.ValueString() != "running" && ps.ValueString() != "stopped" {
		resp.Diagnostics.AddAttributeError(path.Root("power_state"), "Invalid power_state",
			fmt.Sprintf("power_state must be running or stopped, not %q.", ps.ValueString()))
	}
}

func (r *vmResource) ready(d *diag.Diagnostics) bool {
	if r.c == nil {
		d.AddError("HCP provider not configured", "The provider's endpoint and token are needed to manage VMs.")
		return false
	}
	return true
}

func (r *vmResource) project(m *vmModel, d *diag.Diagnostics) string {
	if !m.ProjectID.IsNull() && !m.ProjectID.IsUnknown() && m.ProjectID.ValueString() != "" {
		return m.ProjectID.ValueString()
	}
	if r.c.project == "" {
		d.AddAttributeError(path.Root("project_id"), "No HCP project",
			"Set project_id on the resource, project on the provider, or the HCP_PROJECT environment variable.")
	}
	return r.c.project
}

func (r *vmResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan vmModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() || !r.ready(&resp.Diagnostics) {
		return
	}
	project := r.project(&plan, &resp.Diagnostics)
	body, diags := createBody(ctx, &plan)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	limit, diags := plan.Timeouts.Create(ctx, defaultCreateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()

	base, err := hcpapi.CreateKey(project, body)
	if err != nil {
		resp.Diagnostics.AddError("Cannot derive the create's idempotency key", err.Error())
		return
	}
	acc, gen, err := r.c.client.CreateVM(ctx, project, base, body)
	if err != nil {
		resp.Diagnostics.AddError("HCP refused to create the VM", err.Error())
		return
	}
	tflog.Info(ctx, "HCP accepted the VM create", map[string]any{"vm_id": acc.ResourceID, "job_id": acc.JobID,
		"idempotency_key": hcpapi.GenerationKey(base, gen)})

	// From here on the VM exists at HCP: whatever happens next, it goes into the state (tainted on an
	// error), so Terraform never forgets a VM it made.
	plan.ID = types.StringValue(acc.ResourceID)
	plan.ProjectID = types.StringValue(project)
	if _, err := r.c.client.WaitJob(ctx, project, acc.JobID); err != nil {
		r.saveAfterFailure(ctx, &plan, &resp.State, &resp.Diagnostics)
		resp.Diagnostics.AddError("The VM's create job did not succeed", err.Error())
		return
	}
	want := plan.PowerState.ValueString()
	vm, err := r.c.client.WaitVM(ctx, project, acc.ResourceID, func(v *hcpapi.VM) bool {
		return v != nil && (v.Status == want || v.Status == "error")
	})
	if err == nil && vm.Status == "error" {
		err = fmt.Errorf("HCP shows VM %s in status error after its create job", acc.ResourceID)
	}
	if err != nil {
		r.saveAfterFailure(ctx, &plan, &resp.State, &resp.Diagnostics)
		resp.Diagnostics.AddError("The created VM did not become "+want, err.Error())
		return
	}
	resp.Diagnostics.Append(fromVM(ctx, &plan, vm)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// saveAfterFailure records the VM (id and what the plan knows; the rest from HCP if it answers, else
// null) so Terraform marks it tainted and replaces it rather than losing track of it.
func (r *vmResource) saveAfterFailure(ctx context.Context, m *vmModel, state interface {
	Set(context.Context, any) diag.Diagnostics
}, d *diag.Diagnostics) {
	readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if vm, err := r.c.client.GetVM(readCtx, m.ProjectID.ValueString(), m.ID.ValueString()); err == nil {
		d.Append(fromVM(ctx, m, vm)...)
	} else {
		m.Status = types.StringNull()
		m.Addresses = types.ListNull(addressType)
		m.CreatedAt = types.StringNull()
		m.UpdatedAt = types.StringNull()
		m.LastJobID = types.StringNull()
	}
	d.Append(state.Set(ctx, m)...)
}

func (r *vmResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state vmModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || !r.ready(&resp.Diagnostics) {
		return
	}
	project := r.project(&state, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	vm, err := r.c.client.GetVM(ctx, project, state.ID.ValueString())
	if err == nil && vm.Gone() && vm.Status != "deleted" {
		// Being deleted (a destroy that was interrupted, or someone else): it is gone once that delete is
		// done, so wait for it; a destroy run again then ends when the VM is deleted, not before.
		limit, diags := state.Timeouts.Delete(ctx, defaultDeleteTimeout)
		resp.Diagnostics.Append(diags...)
		if resp.Diagnostics.HasError() {
			return
		}
		waitCtx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		tflog.Info(ctx, "the VM is being deleted; waiting for the delete", map[string]any{"vm_id": vm.ID})
		_, err = r.c.client.WaitVM(waitCtx, project, vm.ID, func(v *hcpapi.VM) bool { return v == nil || v.Status == "deleted" })
		if err != nil {
			resp.Diagnostics.AddError("The VM is being deleted and the delete did not finish", err.Error())
			return
		}
	}
	if hcpapi.IsCode(err, "NOT_FOUND") || (err == nil && vm.Gone()) {
		tflog.Warn(ctx, "the VM is gone from HCP; removing it from the state", map[string]any{"vm_id": state.ID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the VM", err.Error())
		return
	}
	state.ProjectID = types.StringValue(project)
	resp.Diagnostics.Append(fromVM(ctx, &state, vm)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *vmResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state vmModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || !r.ready(&resp.Diagnostics) {
		return
	}
	limit, diags := plan.Timeouts.Update(ctx, defaultUpdateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	project, id := state.ProjectID.ValueString(), state.ID.ValueString()
	plan.ID, plan.ProjectID = state.ID, state.ProjectID

	var tags, metadata map[string]string
	resp.Diagnostics.Append(plan.Tags.ElementsAs(ctx, &tags, false)...)
	resp.Diagnostics.Append(plan.Metadata.ElementsAs(ctx, &metadata, false)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var vm *hcpapi.VM
	if !plan.Tags.Equal(state.Tags) || !plan.Metadata.Equal(state.Metadata) {
		tags, metadata = orEmpty(tags), orEmpty(metadata)
		if _, err := r.c.client.UpdateVM(ctx, project, id, hcpapi.UpdateVMRequest{Tags: tags, Metadata: metadata}); err != nil {
			resp.Diagnostics.AddError("HCP refused to update the VM's tags and metadata", err.Error())
			return
		}
		// The PATCH answers the written VM; reads follow a little later. Wait for them, so the next plan
		// (which reads) sees what was written.
		var err error
		vm, err = r.c.client.WaitVM(ctx, project, id, func(v *hcpapi.VM) bool {
			return v != nil && maps.Equal(v.Tags, tags) && maps.Equal(v.Metadata, metadata)
		})
		if err != nil {
			resp.Diagnostics.AddError("The VM's new tags did not show", err.Error())
			return
		}
	}
	if want := plan.PowerState.ValueString(); want != state.PowerState.ValueString() {
		var err error
		if vm, err = r.setPower(ctx, project, id, want); err != nil {
			resp.Diagnostics.AddError("Cannot change the VM's power state to "+want, err.Error())
			return
		}
	}
	if vm == nil {
		var err error
		if vm, err = r.c.client.GetVM(ctx, project, id); err != nil {
			resp.Diagnostics.AddError("Cannot read the VM", err.Error())
			return
		}
	}
	resp.Diagnostics.Append(fromVM(ctx, &plan, vm)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// setPower starts or stops the VM and waits until HCP shows it in that state. The action's
// Idempotency-Key names the VM, the action and the VM's last job, so a retried request is the same one
// and a later change of power state a new one.
func (r *vmResource) setPower(ctx context.Context, project, id, want string) (*hcpapi.VM, error) {
	vm, err := r.c.client.GetVM(ctx, project, id)
	if err != nil {
		return nil, err
	}
	if vm.DesiredState != want {
		action := map[string]string{"running": "start", "stopped": "stop"}[want]
		key := fmt.Sprintf("tf-vm-%s-%s-%s", action, id, vm.LastJobID)
		acc, err := r.c.client.VMAction(ctx, project, id, action, key)
		if err != nil {
			return nil, err
		}
		if _, err := r.c.client.WaitJob(ctx, project, acc.JobID); err != nil {
			return nil, err
		}
	}
	return r.c.client.WaitVM(ctx, project, id, func(v *hcpapi.VM) bool { return v != nil && v.Status == want })
}

func (r *vmResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state vmModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || !r.ready(&resp.Diagnostics) {
		return
	}
	limit, diags := state.Timeouts.Delete(ctx, defaultDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	project, id := state.ProjectID.ValueString(), state.ID.ValueString()

	acc, err := r.c.client.DeleteVM(ctx, project, id, "tf-vm-delete-"+id)
	switch {
	case hcpapi.IsCode(err, "NOT_FOUND"):
		return
	case hcpapi.IsCode(err, "CONFLICT"):
		// Being deleted already (by an earlier, interrupted destroy or someone else) is what we want.
		vm, gerr := r.c.client.GetVM(ctx, project, id)
		if gerr == nil && vm.Gone() {
			break
		}
		resp.Diagnostics.AddError("HCP refused to delete the VM", err.Error())
		return
	case err != nil:
		resp.Diagnostics.AddError("HCP refused to delete the VM", err.Error())
		return
	default:
		if _, err := r.c.client.WaitJob(ctx, project, acc.JobID); err != nil {
			resp.Diagnostics.AddError("The VM's delete job did not succeed", err.Error())
			return
		}
	}
	_, err = r.c.client.WaitVM(ctx, project, id, func(v *hcpapi.VM) bool { return v == nil || v.Status == "deleted" })
	if err != nil {
		resp.Diagnostics.AddError("The VM did not show as deleted", err.Error())
	}
}

// ImportState takes `project/vm_id`, or a VM id in the provider's project.
func (r *vmResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	project, id, found := strings.Cut(req.ID, "/")
	if !found {
		project, id = "", req.ID
		if r.c != nil {
			project = r.c.project
		}
	}
	if id == "" || project == "" || strings.Contains(id, "/") {
		resp.Diagnostics.AddError("Invalid import id",
			fmt.Sprintf("Expected <project>/<vm id>, or a VM id with the provider's project set; got %q.", req.ID))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), id)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("project_id"), project)...)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, importedKey, []byte("true"))...)
}

// importedKey marks, in the resource's private state, a VM that came in by import: what it was created
// with (ssh_keys, user_data) is unknown, since HCP does not answer it back.
const importedKey = "imported"

const createInputsDescription = "Changing it replaces the VM, except that on an imported VM the first value " +
	"is only recorded (HCP does not answer what the VM was created with)."

// privateGetter is the part of the framework's private state a plan modifier sees.
type privateGetter interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

// createInputsUnknown: the recorded value is null on an imported VM, so the configuration's value is
// taken as what it was created with instead of replacing the VM.
func createInputsUnknown(ctx context.Context, private privateGetter, stateNull bool) bool {
	if !stateNull || private == nil {
		return false
	}
	v, _ := private.GetKey(ctx, importedKey)
	return string(v) == "true"
}

// createBody is the create's request body from the plan.
func createBody(ctx context.Context, m *vmModel) (hcpapi.CreateVMRequest, diag.Diagnostics) {
	var d diag.Diagnostics
	b := hcpapi.CreateVMRequest{Name: m.Name.ValueString(), Zone: m.Zone.ValueString(), ImageID: m.ImageID.ValueString(),
		FlavorID: m.FlavorID.ValueString(), PowerOn: m.PowerState.ValueString() != "stopped"}
	d.Append(m.Tags.ElementsAs(ctx, &b.Tags, false)...)
	d.Append(m.Metadata.ElementsAs(ctx, &b.Metadata, false)...)
	if !m.SSHKeys.IsNull() {
		d.Append(m.SSHKeys.ElementsAs(ctx, &b.SSHKeys, false)...)
	}
	if !m.UserData.IsNull() {
		s := m.UserData.ValueString()
		b.UserData = &s
	}
	b.Tags, b.Metadata = orEmpty(b.Tags), orEmpty(b.Metadata)
	return b, d
}

// fromVM writes what HCP answered into the model; ssh_keys, user_data and timeouts are the
// configuration's (HCP does not answer them).
func fromVM(ctx context.Context, m *vmModel, vm *hcpapi.VM) diag.Diagnostics {
	var d, dd diag.Diagnostics
	m.ID = types.StringValue(vm.ID)
	m.ProjectID = types.StringValue(vm.ProjectID)
	m.Name = types.StringValue(vm.Name)
	m.Zone = types.StringValue(vm.Zone)
	m.ImageID = types.StringValue(vm.ImageID)
	m.FlavorID = types.StringValue(vm.FlavorID)
	m.Tags, dd = types.MapValueFrom(ctx, types.StringType, vm.Tags)
	d.Append(dd...)
	m.Metadata, dd = types.MapValueFrom(ctx, types.StringType, vm.Metadata)
	d.Append(dd...)
	if vm.DesiredState == "running" || vm.DesiredState == "stopped" {
		m.PowerState = types.StringValue(vm.DesiredState)
	}
	m.Status = types.StringValue(vm.Status)
	addrs := make([]attr.Value, 0, len(vm.Addresses))
	for _, a := range vm.Addresses {
		o, dd := types.ObjectValue(addressType.AttrTypes, map[string]attr.Value{
			"type": types.StringValue(a.Type), "address": types.StringValue(a.Address), "nic": types.StringValue(a.NIC),
		})
		d.Append(dd...)
		addrs = append(addrs, o)
	}
	m.Addresses, dd = types.ListValue(addressType, addrs)
	d.Append(dd...)
	m.CreatedAt = types.StringValue(vm.CreatedAt)
	m.UpdatedAt = stringOrNull(vm.UpdatedAt)
	m.LastJobID = stringOrNull(vm.LastJobID)
	return d
}

func stringOrNull(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
