package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/types"
)

// controlServer is the tests' side door (plain HTTP, loopback only):
//
//	POST   /control/faults  {method, fault, times?, message?}  the next `times` calls (0/absent: every call
//	                                                          until cleared) of `method` answer that SOAP fault
//	POST   /control/hangs   {method, times?}                  those calls get no answer until cleared
//	POST   /control/delays  {method, ms}                      those calls are served `ms` later
//	DELETE /control                                           clears all three; held calls are then served
//	GET    /control/calls                                     SOAP calls received per method
//	GET    /control/inventory                                 every VM as vcsim sees it (inventory.go)
//	POST   /control/vms/power {name, state}                   poweredOn|poweredOff|suspended, behind the client's back
//	POST   /control/vms/destroy {name}                        the VM disappears behind the client's back
type controlServer struct {
	svc    *simulator.Service
	gate   *controlGate
	client *vim25.Client
}

func (c *controlServer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /control/faults", c.addFault)
	mux.HandleFunc("POST /control/hangs", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
			Times  int    `json:"times"`
		}
		if !decode(w, r, &req) || !need(w, req.Method != "", "method is required") {
			return
		}
		c.gate.hang(req.Method, req.Times)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /control/delays", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
			Ms     int    `json:"ms"`
		}
		if !decode(w, r, &req) || !need(w, req.Method != "", "method is required") {
			return
		}
		c.gate.setDelay(req.Method, req.Ms)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /control", func(w http.ResponseWriter, r *http.Request) {
		c.svc.ClearFaultRules()
		c.gate.clear()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /control/calls", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, c.gate.callCounts())
	})
	mux.HandleFunc("GET /control/inventory", func(w http.ResponseWriter, r *http.Request) {
		vms, err := readInventory(r.Context(), c.client)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"vms": vms})
	})
	mux.HandleFunc("POST /control/vms/power", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Name  string `json:"name"`
			State string `json:"state"`
		}
		if !decode(w, r, &req) || !need(w, req.Name != "", "name is required") {
			return
		}
		if err := setPowerState(r.Context(), c.client, req.Name, req.State); err != nil {
			writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /control/vms/destroy", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Name string `json:"name"`
		}
		if !decode(w, r, &req) || !need(w, req.Name != "", "name is required") {
			return
		}
		if err := destroyVM(r.Context(), c.client, req.Name); err != nil {
			writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

func (c *controlServer) addFault(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Method  string `json:"method"`
		Fault   string `json:"fault"`
		Times   int    `json:"times"`
		Message string `json:"message"`
	}
	if !decode(w, r, &req) || !need(w, req.Method != "" && req.Fault != "", "method and fault are required") {
		return
	}
	rule := &simulator.FaultInjectionRule{
		MethodName:  req.Method,
		ObjectType:  "*",
		ObjectName:  "*",
		Probability: 1,
		MaxCount:    req.Times,
		Message:     req.Message,
		Enabled:     true,
	}
	// The engine fills the fields of these three from the call (object, privilege); any other vim25
	// fault type is sent as named, with its fields empty.
	switch strings.TrimSuffix(req.Fault, "Fault") {
	case "NotAuthenticated":
		rule.FaultType = simulator.FaultTypeNotAuthenticated
	case "NoPermission":
		rule.FaultType = simulator.FaultTypeNoPermission
	case "InvalidState":
		rule.FaultType = simulator.FaultTypeInvalidState
	default:
		fault, err := methodFault(req.Fault)
		if !need(w, err == nil, fmt.Sprint(err)) {
			return
		}
		rule.FaultType = simulator.FaultTypeCustom
		rule.Fault = fault
	}
	c.svc.AddFaultRule(rule)
	w.WriteHeader(http.StatusNoContent)
}

var vimType = types.TypeFunc()

// methodFault makes an empty vim25 fault from its type name ("DuplicateName", "InvalidLogin",
// "TaskInProgress", "InsufficientResourcesFault", ...).
func methodFault(name string) (types.BaseMethodFault, error) {
	for _, candidate := range []string{name, strings.TrimSuffix(name, "Fault"), name + "Fault"} {
		t, ok := vimType(candidate)
		if !ok || t.Kind() != reflect.Struct {
			continue
		}
		if f, ok := reflect.New(t).Interface().(types.BaseMethodFault); ok {
			return f, nil
		}
	}
	return nil, fmt.Errorf("%q is not a vim25 fault type", name)
}

func decode(w http.ResponseWriter, r *http.Request, into any) bool {
	if err := json.NewDecoder(r.Body).Decode(into); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return false
	}
	return true
}

func need(w http.ResponseWriter, ok bool, message string) bool {
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": message})
	}
	return ok
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
