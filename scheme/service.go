package scheme

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/kubernetes/pkg/apis/core"
)

// beginService does what the Service store's BeginCreate and BeginUpdate
// hooks (k8s.io/kubernetes/pkg/registry/core/service/storage, beginCreate
// and beginUpdate) do to a Service before its strategy, but for allocating
// cluster IPs and node ports, which depends on the cluster's ranges: on an
// update, the allocated values the object leaves out are the stored
// object's (patchAllocatedValues), then spec.clusterIPs follows
// spec.clusterIP when only the latter is given or changed
// (normalizeClusterIPs). Without it a headless Service ("clusterIP: None")
// or an update that leaves out its cluster IP is refused where
// kube-apiserver accepts it. The hooks are not exported: this is their
// behavior, checked by the tests against kube-apiserver's answers. old is
// nil on a create.
func beginService(obj, old runtime.Object) {
	svc, ok := obj.(*core.Service)
	if !ok {
		return
	}
	oldSvc, _ := old.(*core.Service)
	if oldSvc != nil {
		keepAllocated(svc, oldSvc)
	}
	syncClusterIPs(svc, oldSvc)
}

// keepAllocated gives svc the allocated values of oldSvc it leaves out
// (patchAllocatedValues).
func keepAllocated(svc, oldSvc *core.Service) {
	if needsClusterIP(oldSvc) && needsClusterIP(svc) {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = oldSvc.Spec.ClusterIP
		}
		if len(svc.Spec.ClusterIPs) == 0 && len(oldSvc.Spec.ClusterIPs) > 0 {
			svc.Spec.ClusterIPs = oldSvc.Spec.ClusterIPs
		}
	}
	if needsNodePort(oldSvc) && needsNodePort(svc) {
		// A node port of the old object goes to the new port of the same
		// name that has none, unless another port of both uses it.
		used := map[int32]bool{}
		inNew := map[int32]bool{}
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				inNew[p.NodePort] = true
			}
		}
		for _, p := range oldSvc.Spec.Ports {
			if p.NodePort != 0 && inNew[p.NodePort] {
				used[p.NodePort] = true
			}
		}
		byName := map[string]int32{}
		for _, p := range oldSvc.Spec.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort == 0 {
				if np := byName[p.Name]; !used[np] {
					p.NodePort = np
				}
			}
		}
	}
	if needsHealthCheckNodePort(oldSvc) && needsHealthCheckNodePort(svc) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = oldSvc.Spec.HealthCheckNodePort
	}
}

// syncClusterIPs keeps spec.clusterIPs with spec.clusterIP for clients
// that set only the latter (normalizeClusterIPs); oldSvc is nil on a
// create.
func syncClusterIPs(svc, oldSvc *core.Service) {
	if oldSvc == nil {
		if svc.Spec.ClusterIP != "" && len(svc.Spec.ClusterIPs) == 0 {
			svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		}
		return
	}
	if len(oldSvc.Spec.ClusterIPs) > 0 && len(svc.Spec.ClusterIPs) == 0 && oldSvc.Spec.ClusterIP == svc.Spec.ClusterIP {
		svc.Spec.ClusterIPs = oldSvc.Spec.ClusterIPs
	}
	if oldSvc.Spec.ClusterIP == svc.Spec.ClusterIP || !slices.Equal(oldSvc.Spec.ClusterIPs, svc.Spec.ClusterIPs) {
		return
	}
	if oldSvc.Spec.ClusterIP != "" && svc.Spec.ClusterIP == "" {
		svc.Spec.ClusterIPs = nil
	} else {
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
}

func needsClusterIP(svc *core.Service) bool {
	return svc.Spec.Type != core.ServiceTypeExternalName
}

func needsNodePort(svc *core.Service) bool {
	switch svc.Spec.Type {
	case core.ServiceTypeNodePort:
		return true
	case core.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

func needsHealthCheckNodePort(svc *core.Service) bool {
	return svc.Spec.Type == core.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == core.ServiceExternalTrafficPolicyLocal
}
