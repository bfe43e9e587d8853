# A VM in HCP from Terraform or OpenTofu. The provider reads HCP_URL, HCP_TOKEN and HCP_PROJECT when the
# provider block leaves them out.
terraform {
  required_providers {
    hcp = {
      source = "hcp/hcp"
    }
  }
}

provider "hcp" {
  # endpoint = "https://hcp.example.com"   # or HCP_URL
  # token    = var.hcp_token               # or HCP_TOKEN (a tenant JWT with admin on the project)
  # project  = "demo"                      # or HCP_PROJECT
}

data "hcp_zones" "local" {
  name = "local"
}

data "hcp_images" "debian" {
  name = "debian-12"
}

data "hcp_flavors" "small" {
  name = "small"
}

resource "hcp_vm" "web" {
  name      = "web-1"
  zone      = data.hcp_zones.local.zones[0].id
  image_id  = data.hcp_images.debian.images[0].id
  flavor_id = data.hcp_flavors.small.flavors[0].id

  # Changed in place:
  tags        = { env = "dev", team = "web" }
  metadata    = { owner = "platform" }
  power_state = "running" # or "stopped"

  # Given at create only (changing them replaces the VM):
  # ssh_keys  = ["ssh-ed25519 AAAA... alice@laptop"]
  # user_data = file("cloud-init.yaml")

  timeouts {
    create = "20m"
    update = "10m"
    delete = "10m"
  }
}

output "vm_id" {
  value = hcp_vm.web.id
}

output "addresses" {
  value = hcp_vm.web.addresses
}
