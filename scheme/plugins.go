package scheme

import (
	"context"
	"fmt"
	"sync"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authentication/user"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/plugin/pkg/admission/defaulttolerationseconds"
	podpriority "k8s.io/kubernetes/plugin/pkg/admission/priority"
)

// pluginOrder are the admission plugins kube-apiserver 1.37 enables by
// default that mutate objects before MutatingAdmissionPolicy and depend
// on nothing but the request and the PriorityClasses, in the order of its
// chain (options.AllOrderedPlugins): Priority (a Pod's priority and
// preemptionPolicy), DefaultTolerationSeconds (a Pod's not-ready and
// unreachable tolerations).
//
// Left out (docs/fidelity.md): the plugins that need other cluster state
// or invent names (ServiceAccount, LimitRanger, RuntimeClass,
// DefaultStorageClass, DefaultIngressClass), and
// StorageObjectInUseProtection (the protection finalizers of
// PersistentVolumes and PersistentVolumeClaims), whose package brings in
// k8s.io/kubernetes's volume utilities and their dependencies.
var pluginOrder = []string{
	podpriority.PluginName,
	defaulttolerationseconds.PluginName,
}

// plugins is the chain of pluginOrder, built as kube-apiserver builds its
// admission chain (registration, initializer, chain handler), with an
// informer factory whose PriorityClass informer is never started: its
// store holds the PriorityClasses of the run.
type plugins struct {
	once            sync.Once
	chain           admission.MutationInterface
	err             error
	priorityClasses cache.Indexer
	factory         informers.SharedInformerFactory
}

func newPlugins() *plugins {
	f := informers.NewSharedInformerFactory(nil, 0)
	return &plugins{factory: f, priorityClasses: f.Scheduling().V1().PriorityClasses().Informer().GetIndexer()}
}

func (p *plugins) build() (admission.MutationInterface, error) {
	p.once.Do(func() {
		registry := admission.NewPlugins()
		podpriority.Register(registry)
		defaulttolerationseconds.Register(registry)
		// The Priority plugin requires a client but reads PriorityClasses
		// from its lister only: an empty Clientset, never called.
		init := initializer.New(&kubernetes.Clientset{}, nil, p.factory, nil, utilfeature.DefaultFeatureGate, nil, nil, nil)
		// As registry.NewFromPlugins, without configuration files and
		// without its log line.
		var handlers []admission.Interface
		for _, name := range pluginOrder {
			plugin, err := registry.InitPlugin(name, nil, init)
			if err != nil {
				p.err = fmt.Errorf("building kube-apiserver's admission plugins: %w", err)
				return
			}
			handlers = append(handlers, plugin)
		}
		p.chain = admission.NewChainHandler(handlers...)
	})
	return p.chain, p.err
}

// AddPriorityClass adds (or replaces) a scheduling.k8s.io/v1
// PriorityClass, which the Priority plugin resolves Pods' priorities from.
func (s *Scheme) AddPriorityClass(obj map[string]any) error {
	// As stored: defaulted (preemptionPolicy).
	obj, err := s.Default(obj, schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"))
	if err != nil {
		return err
	}
	pc := &schedulingv1.PriorityClass{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, pc); err != nil {
		return err
	}
	return s.plugins.priorityClasses.Update(pc)
}

// AdmitPlugins runs on obj, the decoded object of req (old: the stored
// object of an UPDATE), kube-apiserver's default mutating admission
// plugins that precede MutatingAdmissionPolicy (pluginOrder), on its
// internal form as the admission chain does, and returns the object as
// the MAP plugin receives it, in req's version. Their refusals (e.g. the
// Priority plugin's 403 for an unknown priorityClassName) are
// *apierrors.StatusError. Kinds without a Go type come back as they are.
func (s *Scheme) AdmitPlugins(ctx context.Context, req Request, obj, old map[string]any, u user.Info, dryRun bool) (map[string]any, error) {
	if obj == nil || !s.Recognizes(req.Kind) {
		return obj, nil
	}
	k, err := s.kube()
	if err != nil {
		return nil, err
	}
	chain, err := s.plugins.build()
	if err != nil {
		return nil, err
	}
	internal, err := k.internal(obj, req.Kind)
	if err != nil {
		return nil, err
	}
	var oldInternal runtime.Object
	if old != nil {
		if oldInternal, err = k.internal(old, req.Kind); err != nil {
			return nil, err
		}
	}
	attrs := admission.NewAttributesRecord(internal, oldInternal, req.Kind, req.Namespace, req.Name, req.Resource, req.Subresource, req.Operation, nil, dryRun, u)
	if chain.Handles(req.Operation) {
		if err := chain.Admit(ctx, attrs, admission.NewObjectInterfacesFromScheme(k.scheme)); err != nil {
			return nil, err
		}
	}
	versioned, err := k.scheme.ConvertToVersion(internal, req.Kind.GroupVersion())
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out, err := unstructuredOf(versioned, req.Kind)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return out, nil
}
