package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// inventoryVM is one VM as vcsim holds it, read through the vim25 API (a container view and the
// property collector), never through the client under test.
type inventoryVM struct {
	Name         string            `json:"name"`
	Moref        string            `json:"moref"`
	PowerState   string            `json:"power_state"`
	Template     bool              `json:"template"`
	ExtraConfig  map[string]string `json:"extra_config"`  // keys starting with "hcp." or "guestinfo.hcp" only
	ResourcePool string            `json:"resource_pool"` // inventory path, e.g. /DC0/host/DC0_C0/Resources
	Folder       string            `json:"folder"`        // inventory path, e.g. /DC0/vm
	Datastores   []string          `json:"datastores"`
	Host         string            `json:"host"`
	NumCPU       int32             `json:"num_cpu"`
	MemoryMB     int32             `json:"memory_mb"`
}

func readInventory(ctx context.Context, c *vim25.Client) ([]inventoryVM, error) {
	vms, err := allVMs(ctx, c, []string{"name", "runtime.powerState", "runtime.host", "config", "resourcePool", "parent", "datastore"})
	if err != nil {
		return nil, err
	}
	paths := &pathResolver{c: c, cache: map[types.ManagedObjectReference]string{}}
	out := make([]inventoryVM, 0, len(vms))
	for _, vm := range vms {
		item := inventoryVM{
			Name:        vm.Name,
			Moref:       vm.Self.Value,
			PowerState:  string(vm.Runtime.PowerState),
			ExtraConfig: map[string]string{},
			Datastores:  []string{},
		}
		if vm.Config != nil {
			item.Template = vm.Config.Template
			item.NumCPU = vm.Config.Hardware.NumCPU
			item.MemoryMB = vm.Config.Hardware.MemoryMB
			for _, opt := range vm.Config.ExtraConfig {
				kv := opt.GetOptionValue()
				if strings.HasPrefix(kv.Key, "hcp.") || strings.HasPrefix(kv.Key, "guestinfo.hcp") {
					item.ExtraConfig[kv.Key] = fmt.Sprint(kv.Value)
				}
			}
		}
		if vm.ResourcePool != nil {
			if item.ResourcePool, err = paths.path(ctx, *vm.ResourcePool); err != nil {
				return nil, err
			}
		}
		if vm.Parent != nil {
			if item.Folder, err = paths.path(ctx, *vm.Parent); err != nil {
				return nil, err
			}
		}
		if vm.Runtime.Host != nil {
			if item.Host, err = paths.name(ctx, *vm.Runtime.Host); err != nil {
				return nil, err
			}
		}
		for _, ds := range vm.Datastore {
			name, err := paths.name(ctx, ds)
			if err != nil {
				return nil, err
			}
			item.Datastores = append(item.Datastores, name)
		}
		out = append(out, item)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func allVMs(ctx context.Context, c *vim25.Client, props []string) ([]mo.VirtualMachine, error) {
	v, err := view.NewManager(c).CreateContainerView(ctx, c.ServiceContent.RootFolder, []string{"VirtualMachine"}, true)
	if err != nil {
		return nil, err
	}
	defer func() { _ = v.Destroy(context.Background()) }()
	var vms []mo.VirtualMachine
	err = v.Retrieve(ctx, []string{"VirtualMachine"}, props, &vms)
	return vms, err
}

func findVM(ctx context.Context, c *vim25.Client, name string) (*object.VirtualMachine, error) {
	vms, err := allVMs(ctx, c, []string{"name"})
	if err != nil {
		return nil, err
	}
	for _, vm := range vms {
		if vm.Name == name {
			return object.NewVirtualMachine(c, vm.Self), nil
		}
	}
	return nil, fmt.Errorf("no VM named %q", name)
}

func setPowerState(ctx context.Context, c *vim25.Client, name, state string) error {
	vm, err := findVM(ctx, c, name)
	if err != nil {
		return err
	}
	var task *object.Task
	switch types.VirtualMachinePowerState(state) {
	case types.VirtualMachinePowerStatePoweredOn:
		task, err = vm.PowerOn(ctx)
	case types.VirtualMachinePowerStatePoweredOff:
		task, err = vm.PowerOff(ctx)
	case types.VirtualMachinePowerStateSuspended:
		task, err = vm.Suspend(ctx)
	default:
		return fmt.Errorf("state %q is not poweredOn, poweredOff or suspended", state)
	}
	if err != nil {
		return err
	}
	return task.Wait(ctx)
}

func destroyVM(ctx context.Context, c *vim25.Client, name string) error {
	vm, err := findVM(ctx, c, name)
	if err != nil {
		return err
	}
	if state, err := vm.PowerState(ctx); err == nil && state != types.VirtualMachinePowerStatePoweredOff {
		if task, err := vm.PowerOff(ctx); err == nil {
			_ = task.Wait(ctx)
		}
	}
	task, err := vm.Destroy(ctx)
	if err != nil {
		return err
	}
	return task.Wait(ctx)
}

// pathResolver turns references into inventory paths ("/DC0/vm") by walking their parents; the root
// folder is the empty prefix, as in govc.
type pathResolver struct {
	c     *vim25.Client
	cache map[types.ManagedObjectReference]string
}

func (p *pathResolver) name(ctx context.Context, ref types.ManagedObjectReference) (string, error) {
	var e mo.ManagedEntity
	if err := property.DefaultCollector(p.c).RetrieveOne(ctx, ref, []string{"name"}, &e); err != nil {
		return "", err
	}
	return e.Name, nil
}

func (p *pathResolver) path(ctx context.Context, ref types.ManagedObjectReference) (string, error) {
	if path, ok := p.cache[ref]; ok {
		return path, nil
	}
	if ref == p.c.ServiceContent.RootFolder {
		return "", nil
	}
	var e mo.ManagedEntity
	if err := property.DefaultCollector(p.c).RetrieveOne(ctx, ref, []string{"name", "parent"}, &e); err != nil {
		return "", err
	}
	parent := ""
	if e.Parent != nil {
		var err error
		if parent, err = p.path(ctx, *e.Parent); err != nil {
			return "", err
		}
	}
	path := parent + "/" + e.Name
	p.cache[ref] = path
	return path, nil
}

// addInventory creates the extra VM folders (under /DC0/vm) and resource pools (under the first
// cluster's Resources) the tests place VMs into; nested paths create their parents first.
func addInventory(ctx context.Context, c *vim25.Client, vmFolders, pools []string) error {
	finder := find.NewFinder(c)
	dc, err := finder.DefaultDatacenter(ctx)
	if err != nil {
		return err
	}
	finder.SetDatacenter(dc)
	folders, err := dc.Folders(ctx)
	if err != nil {
		return err
	}
	for _, path := range vmFolders {
		parent := folders.VmFolder
		for _, name := range strings.Split(strings.Trim(path, "/"), "/") {
			child, err := finder.Folder(ctx, parent.InventoryPath+"/"+name)
			if err != nil {
				if child, err = parent.CreateFolder(ctx, name); err != nil {
					return fmt.Errorf("folder %s: %w", path, err)
				}
				child.InventoryPath = parent.InventoryPath + "/" + name
			}
			parent = child
		}
	}
	if len(pools) == 0 {
		return nil
	}
	clusters, err := finder.ClusterComputeResourceList(ctx, "*")
	if err != nil {
		return err
	}
	root, err := clusters[0].ResourcePool(ctx)
	if err != nil {
		return err
	}
	root.InventoryPath = clusters[0].InventoryPath + "/Resources"
	for _, path := range pools {
		parent := root
		for _, name := range strings.Split(strings.Trim(path, "/"), "/") {
			child, err := finder.ResourcePool(ctx, parent.InventoryPath+"/"+name)
			if err != nil {
				if child, err = parent.Create(ctx, name, types.DefaultResourceConfigSpec()); err != nil {
					return fmt.Errorf("resource pool %s: %w", path, err)
				}
				child.InventoryPath = parent.InventoryPath + "/" + name
			}
			parent = child
		}
	}
	return nil
}
