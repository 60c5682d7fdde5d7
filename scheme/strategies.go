package scheme

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"

	regmutatingadmissionpolicy "k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingadmissionpolicy"
	regmutatingadmissionpolicybinding "k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingadmissionpolicybinding"
	regmutatingwebhookconfiguration "k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingwebhookconfiguration"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/resolver"
	regvalidatingadmissionpolicy "k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicy"
	regvalidatingadmissionpolicybinding "k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicybinding"
	regvalidatingwebhookconfiguration "k8s.io/kubernetes/pkg/registry/admissionregistration/validatingwebhookconfiguration"
	regstorageversion "k8s.io/kubernetes/pkg/registry/apiserverinternal/storageversion"
	regcontrollerrevision "k8s.io/kubernetes/pkg/registry/apps/controllerrevision"
	regdaemonset "k8s.io/kubernetes/pkg/registry/apps/daemonset"
	regdeployment "k8s.io/kubernetes/pkg/registry/apps/deployment"
	regreplicaset "k8s.io/kubernetes/pkg/registry/apps/replicaset"
	regstatefulset "k8s.io/kubernetes/pkg/registry/apps/statefulset"
	reghorizontalpodautoscaler "k8s.io/kubernetes/pkg/registry/autoscaling/horizontalpodautoscaler"
	regcronjob "k8s.io/kubernetes/pkg/registry/batch/cronjob"
	regjob "k8s.io/kubernetes/pkg/registry/batch/job"
	regcertificates "k8s.io/kubernetes/pkg/registry/certificates/certificates"
	regclustertrustbundle "k8s.io/kubernetes/pkg/registry/certificates/clustertrustbundle"
	regpodcertificaterequest "k8s.io/kubernetes/pkg/registry/certificates/podcertificaterequest"
	reglease "k8s.io/kubernetes/pkg/registry/coordination/lease"
	regleasecandidate "k8s.io/kubernetes/pkg/registry/coordination/leasecandidate"
	regconfigmap "k8s.io/kubernetes/pkg/registry/core/configmap"
	regendpoint "k8s.io/kubernetes/pkg/registry/core/endpoint"
	regevent "k8s.io/kubernetes/pkg/registry/core/event"
	reglimitrange "k8s.io/kubernetes/pkg/registry/core/limitrange"
	regnamespace "k8s.io/kubernetes/pkg/registry/core/namespace"
	regnode "k8s.io/kubernetes/pkg/registry/core/node"
	regpersistentvolume "k8s.io/kubernetes/pkg/registry/core/persistentvolume"
	regpersistentvolumeclaim "k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	regpod "k8s.io/kubernetes/pkg/registry/core/pod"
	regpodtemplate "k8s.io/kubernetes/pkg/registry/core/podtemplate"
	regreplicationcontroller "k8s.io/kubernetes/pkg/registry/core/replicationcontroller"
	regresourcequota "k8s.io/kubernetes/pkg/registry/core/resourcequota"
	regsecret "k8s.io/kubernetes/pkg/registry/core/secret"
	regservice "k8s.io/kubernetes/pkg/registry/core/service"
	regserviceaccount "k8s.io/kubernetes/pkg/registry/core/serviceaccount"
	regendpointslice "k8s.io/kubernetes/pkg/registry/discovery/endpointslice"
	regflowschema "k8s.io/kubernetes/pkg/registry/flowcontrol/flowschema"
	regprioritylevelconfiguration "k8s.io/kubernetes/pkg/registry/flowcontrol/prioritylevelconfiguration"
	regingress "k8s.io/kubernetes/pkg/registry/networking/ingress"
	regingressclass "k8s.io/kubernetes/pkg/registry/networking/ingressclass"
	regipaddress "k8s.io/kubernetes/pkg/registry/networking/ipaddress"
	regnetworkpolicy "k8s.io/kubernetes/pkg/registry/networking/networkpolicy"
	regservicecidr "k8s.io/kubernetes/pkg/registry/networking/servicecidr"
	regruntimeclass "k8s.io/kubernetes/pkg/registry/node/runtimeclass"
	regpoddisruptionbudget "k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
	regclusterrole "k8s.io/kubernetes/pkg/registry/rbac/clusterrole"
	regclusterrolebinding "k8s.io/kubernetes/pkg/registry/rbac/clusterrolebinding"
	regrole "k8s.io/kubernetes/pkg/registry/rbac/role"
	regrolebinding "k8s.io/kubernetes/pkg/registry/rbac/rolebinding"
	regdeviceclass "k8s.io/kubernetes/pkg/registry/resource/deviceclass"
	regdevicetaintrule "k8s.io/kubernetes/pkg/registry/resource/devicetaintrule"
	regresourceslice "k8s.io/kubernetes/pkg/registry/resource/resourceslice"
	regpriorityclass "k8s.io/kubernetes/pkg/registry/scheduling/priorityclass"
	regworkload "k8s.io/kubernetes/pkg/registry/scheduling/workload"
	regcsidriver "k8s.io/kubernetes/pkg/registry/storage/csidriver"
	regcsinode "k8s.io/kubernetes/pkg/registry/storage/csinode"
	regcsistoragecapacity "k8s.io/kubernetes/pkg/registry/storage/csistoragecapacity"
	regstorageclass "k8s.io/kubernetes/pkg/registry/storage/storageclass"
	regvolumeattachment "k8s.io/kubernetes/pkg/registry/storage/volumeattachment"
	regvolumeattributesclass "k8s.io/kubernetes/pkg/registry/storage/volumeattributesclass"
	regstoragemigration "k8s.io/kubernetes/pkg/registry/storagemigration/storagemigration"
)

// strategy is what the registry of a built-in resource does to an object
// before storing it: PrepareForCreate/Update, Validate/ValidateUpdate,
// warnings and Canonicalize (rest.BeforeCreate, rest.BeforeUpdate).
type strategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
}

// registryStrategy is the strategy of the main resource of one kind.
type registryStrategy struct {
	kind     schema.GroupKind
	strategy strategy
}

// strategies are the registry strategies of kube-apiserver 1.37's built-in
// resources (k8s.io/kubernetes/pkg/registry/<group>/<resource>), for their
// main resource, by the kind of the request (Event has two groups and one
// registry).
//
// The admission policies and their bindings are given no authorizer, as
// kube-apiserver's is the only one that could answer: the check that the
// requester may read a policy's paramKind or a binding's paramRef is
// skipped (upstream skips it for a nil authorizer), so their
// resource resolver and policy getter are never reached.
//
// Left out: ResourceClaim and ResourceClaimTemplate, whose strategies read
// the request's Namespace through a client (adminAccess); the scheme holds
// no cluster state (docs/fidelity.md).
func strategies() []registryStrategy {
	vap := regvalidatingadmissionpolicy.NewStrategy(nil, unreachedResolver)
	return []registryStrategy{
		{schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}, regmutatingadmissionpolicy.NewStrategy(nil, unreachedResolver)},
		{schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}, regmutatingadmissionpolicybinding.NewStrategy(nil, nil, unreachedResolver)},
		{schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}, regmutatingwebhookconfiguration.Strategy},
		{schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}, vap},
		{schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}, regvalidatingadmissionpolicybinding.NewStrategy(nil, nil, unreachedResolver)},
		{schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}, regvalidatingwebhookconfiguration.Strategy},
		{schema.GroupKind{Group: "internal.apiserver.k8s.io", Kind: "StorageVersion"}, regstorageversion.Strategy},
		{schema.GroupKind{Group: "apps", Kind: "ControllerRevision"}, regcontrollerrevision.Strategy},
		{schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, regdaemonset.Strategy},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, regdeployment.Strategy},
		{schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, regreplicaset.Strategy},
		{schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, regstatefulset.Strategy},
		{schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}, reghorizontalpodautoscaler.Strategy},
		{schema.GroupKind{Group: "batch", Kind: "CronJob"}, regcronjob.Strategy},
		{schema.GroupKind{Group: "batch", Kind: "Job"}, regjob.Strategy},
		{schema.GroupKind{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}, regcertificates.Strategy},
		{schema.GroupKind{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}, regclustertrustbundle.Strategy},
		{schema.GroupKind{Group: "certificates.k8s.io", Kind: "PodCertificateRequest"}, regpodcertificaterequest.NewStrategy()},
		{schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"}, reglease.Strategy},
		{schema.GroupKind{Group: "coordination.k8s.io", Kind: "LeaseCandidate"}, regleasecandidate.Strategy},
		{schema.GroupKind{Group: "", Kind: "ConfigMap"}, regconfigmap.Strategy},
		{schema.GroupKind{Group: "", Kind: "Endpoints"}, regendpoint.Strategy},
		{schema.GroupKind{Group: "discovery.k8s.io", Kind: "EndpointSlice"}, regendpointslice.Strategy},
		{schema.GroupKind{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}, regflowschema.Strategy},
		{schema.GroupKind{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}, regprioritylevelconfiguration.Strategy},
		{schema.GroupKind{Group: "", Kind: "Event"}, regevent.Strategy},
		{schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, regevent.Strategy},
		{schema.GroupKind{Group: "", Kind: "LimitRange"}, reglimitrange.Strategy},
		{schema.GroupKind{Group: "", Kind: "Namespace"}, regnamespace.Strategy},
		{schema.GroupKind{Group: "", Kind: "Node"}, regnode.Strategy},
		{schema.GroupKind{Group: "", Kind: "PersistentVolume"}, regpersistentvolume.Strategy},
		{schema.GroupKind{Group: "", Kind: "PersistentVolumeClaim"}, regpersistentvolumeclaim.Strategy},
		{schema.GroupKind{Group: "", Kind: "Pod"}, regpod.Strategy},
		{schema.GroupKind{Group: "", Kind: "PodTemplate"}, regpodtemplate.Strategy},
		{schema.GroupKind{Group: "", Kind: "ReplicationController"}, regreplicationcontroller.Strategy},
		{schema.GroupKind{Group: "", Kind: "ResourceQuota"}, regresourcequota.Strategy},
		{schema.GroupKind{Group: "", Kind: "Secret"}, regsecret.Strategy},
		{schema.GroupKind{Group: "", Kind: "Service"}, regservice.Strategy},
		{schema.GroupKind{Group: "", Kind: "ServiceAccount"}, regserviceaccount.Strategy},
		{schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}, regingress.Strategy},
		{schema.GroupKind{Group: "networking.k8s.io", Kind: "IngressClass"}, regingressclass.Strategy},
		{schema.GroupKind{Group: "networking.k8s.io", Kind: "IPAddress"}, regipaddress.Strategy},
		{schema.GroupKind{Group: "networking.k8s.io", Kind: "NetworkPolicy"}, regnetworkpolicy.Strategy},
		{schema.GroupKind{Group: "networking.k8s.io", Kind: "ServiceCIDR"}, regservicecidr.Strategy},
		{schema.GroupKind{Group: "node.k8s.io", Kind: "RuntimeClass"}, regruntimeclass.Strategy},
		{schema.GroupKind{Group: "policy", Kind: "PodDisruptionBudget"}, regpoddisruptionbudget.Strategy},
		{schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}, regclusterrole.Strategy},
		{schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}, regclusterrolebinding.Strategy},
		{schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "Role"}, regrole.Strategy},
		{schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}, regrolebinding.Strategy},
		{schema.GroupKind{Group: "resource.k8s.io", Kind: "DeviceClass"}, regdeviceclass.Strategy},
		{schema.GroupKind{Group: "resource.k8s.io", Kind: "DeviceTaintRule"}, regdevicetaintrule.Strategy},
		{schema.GroupKind{Group: "resource.k8s.io", Kind: "ResourceSlice"}, regresourceslice.Strategy},
		{schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PriorityClass"}, regpriorityclass.Strategy},
		{schema.GroupKind{Group: "scheduling.k8s.io", Kind: "Workload"}, regworkload.Strategy},
		{schema.GroupKind{Group: "storage.k8s.io", Kind: "CSIDriver"}, regcsidriver.Strategy},
		{schema.GroupKind{Group: "storage.k8s.io", Kind: "CSINode"}, regcsinode.Strategy},
		{schema.GroupKind{Group: "storage.k8s.io", Kind: "CSIStorageCapacity"}, regcsistoragecapacity.Strategy},
		{schema.GroupKind{Group: "storage.k8s.io", Kind: "StorageClass"}, regstorageclass.Strategy},
		{schema.GroupKind{Group: "storage.k8s.io", Kind: "VolumeAttachment"}, regvolumeattachment.Strategy},
		{schema.GroupKind{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}, regvolumeattributesclass.Strategy},
		{schema.GroupKind{Group: "storagemigration.k8s.io", Kind: "StorageVersionMigration"}, regstoragemigration.Strategy},
	}
}

// subresourceStrategy is the update strategy of a subresource that
// carries its resource's own kind (the store of `pods/status` is the pods
// store with UpdateStrategy replaced, and no begin hooks).
type subresourceStrategy struct {
	kind        schema.GroupKind
	subresource string
	strategy    strategy
}

// subresourceStrategies are the update strategies of the subresources of
// the resources in strategies() that carry the resource's kind, as
// k8s.io/kubernetes/pkg/registry/<group>/<resource>/storage wires them:
// every status subresource, pods/ephemeralcontainers and pods/resize
// (which keep only their own part of the object), namespaces/finalize and
// certificatesigningrequests/approval. Scale, eviction and binding carry
// another kind and have no strategy of this form.
func subresourceStrategies() []subresourceStrategy {
	return []subresourceStrategy{
		{schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}, "status", regvalidatingadmissionpolicy.NewStatusStrategy(regvalidatingadmissionpolicy.NewStrategy(nil, unreachedResolver))},
		{schema.GroupKind{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}, "status", regflowschema.StatusStrategy},
		{schema.GroupKind{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}, "status", regprioritylevelconfiguration.StatusStrategy},
		{schema.GroupKind{Group: "internal.apiserver.k8s.io", Kind: "StorageVersion"}, "status", regstorageversion.StatusStrategy},
		{schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, "status", regdaemonset.StatusStrategy},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, "status", regdeployment.StatusStrategy},
		{schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, "status", regreplicaset.StatusStrategy},
		{schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "status", regstatefulset.StatusStrategy},
		{schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}, "status", reghorizontalpodautoscaler.StatusStrategy},
		{schema.GroupKind{Group: "batch", Kind: "CronJob"}, "status", regcronjob.StatusStrategy},
		{schema.GroupKind{Group: "batch", Kind: "Job"}, "status", regjob.StatusStrategy},
		{schema.GroupKind{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}, "status", regcertificates.StatusStrategy},
		{schema.GroupKind{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}, "approval", regcertificates.ApprovalStrategy},
		{schema.GroupKind{Group: "", Kind: "Namespace"}, "status", regnamespace.StatusStrategy},
		{schema.GroupKind{Group: "", Kind: "Namespace"}, "finalize", regnamespace.FinalizeStrategy},
		{schema.GroupKind{Group: "", Kind: "Node"}, "status", regnode.StatusStrategy},
		{schema.GroupKind{Group: "", Kind: "PersistentVolume"}, "status", regpersistentvolume.StatusStrategy},
		{schema.GroupKind{Group: "", Kind: "PersistentVolumeClaim"}, "status", regpersistentvolumeclaim.StatusStrategy},
		{schema.GroupKind{Group: "", Kind: "Pod"}, "status", regpod.StatusStrategy},
		{schema.GroupKind{Group: "", Kind: "Pod"}, "ephemeralcontainers", regpod.EphemeralContainersStrategy},
		{schema.GroupKind{Group: "", Kind: "Pod"}, "resize", regpod.ResizeStrategy},
		{schema.GroupKind{Group: "", Kind: "ReplicationController"}, "status", regreplicationcontroller.StatusStrategy},
		{schema.GroupKind{Group: "", Kind: "ResourceQuota"}, "status", regresourcequota.StatusStrategy},
		{schema.GroupKind{Group: "", Kind: "Service"}, "status", regservice.StatusStrategy},
		{schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}, "status", regingress.StatusStrategy},
		{schema.GroupKind{Group: "networking.k8s.io", Kind: "ServiceCIDR"}, "status", regservicecidr.StatusStrategy},
		{schema.GroupKind{Group: "policy", Kind: "PodDisruptionBudget"}, "status", regpoddisruptionbudget.StatusStrategy},
		{schema.GroupKind{Group: "resource.k8s.io", Kind: "DeviceTaintRule"}, "status", regdevicetaintrule.StatusStrategy},
		{schema.GroupKind{Group: "storage.k8s.io", Kind: "CSINode"}, "status", regcsinode.StatusStrategy},
		{schema.GroupKind{Group: "storage.k8s.io", Kind: "VolumeAttachment"}, "status", regvolumeattachment.StatusStrategy},
		{schema.GroupKind{Group: "storagemigration.k8s.io", Kind: "StorageVersionMigration"}, "status", regstoragemigration.StatusStrategy},
	}
}

// unreachedResolver is the resource resolver of the admission policy
// strategies: upstream resolves a paramKind only for its authorization
// check, which a nil authorizer skips; a binding's strategy refuses a nil
// resolver before that check.
var unreachedResolver = resolver.ResourceResolverFunc(func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	return schema.GroupVersionResource{}, fmt.Errorf("no resource resolver for %s: authorization is not checked", gvk)
})
