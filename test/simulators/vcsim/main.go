// vcsim for HCP's tests: VMware's vCenter simulator engine (package simulator of govmomi, pinned in
// go.mod) behind a main of our own, because the govmomi module on the Go proxy ships no vcsim main.
// It does what upstream's vcsim main does with the VPX model (one datacenter, a cluster with hosts, a
// standalone host, datastores, VMs usable as clone sources) plus a loopback control endpoint for tests:
// SOAP faults, hangs and delays per method, and the simulator's inventory as vcsim itself sees it.
//
// stdout, one KEY=value per line, VCSIM_READY last: VCSIM_URL, VCSIM_CONTROL_URL, VCSIM_CA_FILE,
// VCSIM_THUMBPRINT_SHA256, VCSIM_USERNAME, VCSIM_PASSWORD. It runs until SIGTERM/SIGINT or until its
// stdin closes (so a test runner that dies does not leave it behind).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/vmware/govmomi/simulator"
	_ "github.com/vmware/govmomi/vapi/simulator" // the REST API (/rest, /api) next to SOAP, as in upstream vcsim
	"github.com/vmware/govmomi/vim25"
)

func main() {
	listen := flag.String("l", "127.0.0.1:0", "listen address of the SDK (https)")
	controlListen := flag.String("control", "127.0.0.1:0", "listen address of the test control endpoint (http, keep it on loopback)")
	username := flag.String("username", "administrator@vsphere.local", "the only user name Login accepts")
	password := flag.String("password", "vcsim-pass", "the only password Login accepts")
	methodDelay := flag.String("method-delay", "", "per SOAP method delay in ms before it is served, e.g. PowerOnVM_Task:500,CloneVM_Task:1000")
	certDir := flag.String("cert-dir", "", "directory for the generated certificate (default: a new temporary directory)")
	watchStdin := flag.Bool("exit-on-stdin-eof", true, "exit when stdin reaches EOF")
	datastores := flag.Int("ds", 1, "number of datastores (LocalDS_0, LocalDS_1, ...), each on every host")
	var vmFolders, pools listFlag
	flag.Var(&vmFolders, "vm-folder", "an extra VM folder, a path under the datacenter's vm folder (repeatable), e.g. hcp/prod")
	flag.Var(&pools, "resource-pool", "an extra resource pool, a path under the cluster's root pool Resources (repeatable), e.g. hcp")
	flag.Parse()

	delays, err := parseMethodDelays(*methodDelay)
	if err != nil {
		log.Fatalf("-method-delay: %v", err)
	}

	model := simulator.VPX()
	model.DelayConfig.MethodDelay = delays
	model.Datastore = *datastores
	if err := model.Create(); err != nil {
		log.Fatalf("creating the VPX model: %v", err)
	}
	defer model.Remove()

	cert, err := newServerCertificate(*certDir)
	if err != nil {
		log.Fatalf("certificate: %v", err)
	}
	defer cert.remove()

	gate := newControlGate()
	svc := model.Service
	svc.Listen = &url.URL{Host: *listen, User: url.UserPassword(*username, *password)}
	svc.TLS = cert.tlsConfig()
	svc.RegisterEndpoints = true
	// "POST /sdk" is more specific than the "/sdk" the engine registers, so every SOAP call passes the
	// gate first (hangs, delays) and the engine's own handler then serves it.
	svc.ServeMux = http.NewServeMux()
	for _, p := range []string{"/sdk", "/sdk/vimService"} {
		svc.ServeMux.Handle("POST "+p, gate.wrap(http.HandlerFunc(svc.ServeSDK)))
	}

	server := svc.NewServer()
	defer server.Close()

	// The inventory and the power changes "behind HCP's back" go through the vim25 API (property
	// collector, tasks) over the engine's in-process transport: vcsim's own view, with no HTTP gate.
	client, err := vim25.NewClient(context.Background(), svc)
	if err != nil {
		log.Fatalf("in-process client: %v", err)
	}
	if err := addInventory(context.Background(), client, vmFolders, pools); err != nil {
		log.Fatalf("extra inventory: %v", err)
	}

	control := &controlServer{svc: svc, gate: gate, client: client}
	controlListener, err := net.Listen("tcp", *controlListen)
	if err != nil {
		log.Fatalf("control listener: %v", err)
	}
	go func() { _ = http.Serve(controlListener, control.handler()) }()

	sdkURL := *server.URL
	sdkURL.User = nil
	fmt.Printf("VCSIM_URL=%s\n", sdkURL.String())
	fmt.Printf("VCSIM_CONTROL_URL=http://%s\n", controlListener.Addr().String())
	fmt.Printf("VCSIM_CA_FILE=%s\n", cert.pemFile)
	fmt.Printf("VCSIM_THUMBPRINT_SHA256=%s\n", cert.thumbprintSHA256)
	fmt.Printf("VCSIM_USERNAME=%s\n", *username)
	fmt.Printf("VCSIM_PASSWORD=%s\n", *password)
	fmt.Println("VCSIM_READY=1")

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	stdinClosed := make(chan struct{})
	if *watchStdin {
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stdinClosed) }()
	}
	select {
	case <-stop:
	case <-stdinClosed:
	}
	gate.clear() // releases hung calls so Close does not wait for them
}

// listFlag collects a repeated string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func parseMethodDelays(spec string) (map[string]int, error) {
	delays := map[string]int{}
	for _, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		method, ms, ok := strings.Cut(entry, ":")
		n, err := strconv.Atoi(ms)
		if !ok || method == "" || err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not METHOD:MILLISECONDS", entry)
		}
		delays[method] = n
	}
	return delays, nil
}
