// terraform-provider-hcp: a Terraform/OpenTofu provider for HCP's northbound API.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/hcp/terraform-provider-hcp/internal/provider"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run with support for debuggers such as delve")
	flag.Parse()

	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.opentofu.org/hcp/hcp",
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err.Error())
	}
}
