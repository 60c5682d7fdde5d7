package scheme

import (
	"context"
	"fmt"
	"net"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/core/service/ipallocator"
	"k8s.io/kubernetes/pkg/registry/core/service/portallocator"
	servicestorage "k8s.io/kubernetes/pkg/registry/core/service/storage"
)

// defaultServiceIPCIDR and defaultServiceNodePortRange are kube-apiserver's
// defaults (k8s.io/kubernetes/pkg/kubeapiserver/options
// DefaultServiceIPCIDR, DefaultServiceNodePortRange; TestServiceDefaults
// holds them equal). That package is not imported: its own imports
// register API groups and admission plugins at init, which every run would
// pay for.
var (
	defaultServiceIPCIDR        = net.IPNet{IP: net.ParseIP("10.0.0.0"), Mask: net.CIDRMask(24, 32)}
	defaultServiceNodePortRange = utilnet.PortRange{Base: 30000, Size: 2768}
)

// serviceKind is the kind whose registry has create and update hooks
// before its strategy.
var serviceKind = schema.GroupKind{Kind: "Service"}

// serviceStore is the Service registry of a kube-apiserver with its
// default flags (--service-cluster-ip-range 10.0.0.0/24, single-stack IPv4;
// --service-node-port-range 30000-32767), built with
// servicestorage.NewREST over in-memory allocators and no storage: only
// its BeginCreate and BeginUpdate hooks are used, always as dry runs, so
// that no request allocates anything for the next. They initialize the IP
// family fields (ipFamilies, ipFamilyPolicy), keep clusterIP and
// clusterIPs in sync and allocate cluster IPs and node ports: a headless
// Service's stored form is kube-apiserver's; an allocated IP is a free one
// of the range and a node port the dry run's dummy (32769), not the ones a
// cluster would pick (docs/fidelity.md).
var serviceStore = sync.OnceValues(func() (*genericregistry.Store, error) {
	return newServiceStore(api.IPv4Protocol, map[api.IPFamily]net.IPNet{api.IPv4Protocol: defaultServiceIPCIDR})
})

// newServiceStore is the Service registry with IP ranges cidrs, primary
// family primary.
func newServiceStore(primary api.IPFamily, cidrs map[api.IPFamily]net.IPNet) (*genericregistry.Store, error) {
	allocs := map[api.IPFamily]ipallocator.Interface{}
	for family, cidr := range cidrs {
		ips, err := ipallocator.NewInMemory(&cidr)
		if err != nil {
			return nil, err
		}
		allocs[family] = ips
	}
	ports, err := portallocator.NewInMemory(defaultServiceNodePortRange)
	if err != nil {
		return nil, err
	}
	rest, _, _, err := servicestorage.NewREST(noStorage{}, primary, allocs, ports, nil, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("building the Service registry: %w", err)
	}
	return rest.Store, nil
}

// serviceStoreFor is the registry for a Service: the default one, or, when
// the Service (or its stored form) names cluster IPs, one whose ranges hold
// them. A cluster's service range is its own choice: an IP a manifest names
// is taken to be in it, as it is in the cluster the manifest came from
// (kube-apiserver refuses an IP outside its range; mutatis cannot know the
// range).
func serviceStoreFor(objs ...runtime.Object) (*genericregistry.Store, error) {
	var named []net.IP
	for _, o := range objs {
		svc, ok := o.(*api.Service)
		if !ok || svc == nil {
			continue
		}
		for _, s := range append([]string{svc.Spec.ClusterIP}, svc.Spec.ClusterIPs...) {
			if ip := net.ParseIP(s); ip != nil {
				named = append(named, ip)
			}
		}
	}
	if len(named) == 0 {
		return serviceStore()
	}
	cidrs := map[api.IPFamily]net.IPNet{}
	primary := api.IPFamily("")
	for _, ip := range named {
		family, bits, maskBits := api.IPv4Protocol, 32, 24
		if ip.To4() == nil {
			family, bits, maskBits = api.IPv6Protocol, 128, 112
		}
		if primary == "" {
			primary = family
		}
		if _, ok := cidrs[family]; !ok {
			mask := net.CIDRMask(maskBits, bits)
			cidrs[family] = net.IPNet{IP: ip.Mask(mask), Mask: mask}
		}
	}
	if primary == api.IPv4Protocol && len(cidrs) == 1 {
		if d := defaultServiceIPCIDR; d.Contains(named[0]) {
			return serviceStore()
		}
	}
	return newServiceStore(primary, cidrs)
}

// noStorage gives a registry no storage.
type noStorage struct{}

func (noStorage) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions{
		StorageConfig:  &storagebackend.ConfigForResource{GroupResource: resource},
		ResourcePrefix: "/" + resource.Resource,
		Decorator: func(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error), func() runtime.Object, func() runtime.Object, storage.AttrFunc, storage.IndexerFuncs, *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
			return nil, func() {}, nil
		},
	}, nil
}

// beginCreate runs the registry's BeginCreate hook of kind gk on internal,
// if it has one, as a dry run.
func beginCreate(ctx context.Context, gk schema.GroupKind, internal runtime.Object) error {
	if gk != serviceKind {
		return nil
	}
	st, err := serviceStoreFor(internal)
	if err != nil {
		return err
	}
	finish, err := st.BeginCreate(ctx, internal, &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return err
	}
	finish(ctx, false)
	return nil
}

// beginUpdate is beginCreate for an update's BeginUpdate hook.
func beginUpdate(ctx context.Context, gk schema.GroupKind, internal, oldInternal runtime.Object) error {
	if gk != serviceKind {
		return nil
	}
	st, err := serviceStoreFor(internal, oldInternal)
	if err != nil {
		return err
	}
	finish, err := st.BeginUpdate(ctx, internal, oldInternal, &metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return err
	}
	finish(ctx, false)
	return nil
}

// decorate is what the store of a resource does to the object it returns
// (genericregistry.Store's Decorator, after Create and Update): for a
// Service, servicestorage's defaultOnRead, which keeps clusterIP and
// clusterIPs in sync, fills the IP families of a Service stored without
// them and drops the internalTrafficPolicy that decoding defaulted before
// a mutation made the Service an ExternalName one. internal is not
// modified: a decorated object is a copy. The stores of subresources have
// no decorator (the Service status store is a copy made before it is set).
func decorate(gk schema.GroupKind, internal runtime.Object) (runtime.Object, error) {
	if gk != serviceKind {
		return internal, nil
	}
	st, err := serviceStoreFor(internal)
	if err != nil {
		return nil, err
	}
	if st.Decorator == nil {
		return internal, nil
	}
	out := internal.DeepCopyObject()
	st.Decorator(out)
	return out, nil
}
