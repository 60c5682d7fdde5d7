package controller

import (
	"context"
	"fmt"
	"sort"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/mutatis-dev/mutatis/matching"
	"github.com/mutatis-dev/mutatis/params"
)

// paramInformers runs one dynamic informer per param resource in use and
// serves params.Source from them. A kind without a synced informer is read
// from the API server, so lookups are never stale.
type paramInformers struct {
	client dynamic.Interface
	table  *matching.Table

	mu      sync.RWMutex
	running map[schema.GroupVersionResource]*paramInformer
}

type paramInformer struct {
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
	done     chan struct{}
}

var _ params.Source = (*paramInformers)(nil)

func newParamInformers(client dynamic.Interface, table *matching.Table) *paramInformers {
	return &paramInformers{client: client, table: table, running: map[schema.GroupVersionResource]*paramInformer{}}
}

// resource returns the resource serving kind gvk.
func (p *paramInformers) resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool) {
	rs := p.table.ResourcesForKind(gvk)
	if len(rs) == 0 {
		return schema.GroupVersionResource{}, false
	}
	return rs[0].GroupVersionResource(), true
}

// ensure makes the informers of exactly want run: new ones are started under
// ctx, unused ones are stopped. It returns the HasSynced functions of the
// informers it started.
func (p *paramInformers) ensure(ctx context.Context, want map[schema.GroupVersionResource]bool) []cache.InformerSynced {
	p.mu.Lock()
	defer p.mu.Unlock()
	var started []cache.InformerSynced
	for gvr := range want {
		if _, ok := p.running[gvr]; ok {
			continue
		}
		inf := dynamicinformer.NewFilteredDynamicInformer(p.client, gvr, metav1.NamespaceAll, 0,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
		ictx, cancel := context.WithCancel(ctx)
		pi := &paramInformer{informer: inf, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(pi.done)
			inf.RunWithContext(ictx)
		}()
		p.running[gvr] = pi
		started = append(started, inf.HasSynced)
	}
	for gvr, pi := range p.running {
		if !want[gvr] {
			pi.cancel()
			<-pi.done
			delete(p.running, gvr)
		}
	}
	return started
}

// stopAll stops every informer.
func (p *paramInformers) stopAll() { p.ensure(context.Background(), nil) }

// resources returns the resources whose informers run, sorted.
func (p *paramInformers) resources() []schema.GroupVersionResource {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]schema.GroupVersionResource, 0, len(p.running))
	for gvr := range p.running {
		out = append(out, gvr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// synced returns the informer of gvr if it runs and has synced.
func (p *paramInformers) synced(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if pi, ok := p.running[gvr]; ok && pi.informer.HasSynced() {
		return pi.informer
	}
	return nil
}

// Get implements params.Source.
func (p *paramInformers) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	gvr, ok := p.resource(gvk)
	if !ok {
		return nil, fmt.Errorf("no resource serves kind %v", gvk)
	}
	inf := p.synced(gvr)
	if inf == nil {
		return p.client.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, exists, err := inf.GetIndexer().GetByKey(key)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("param informer for %v holds %T", gvr, obj)
	}
	return u, nil
}

// List implements params.Source.
func (p *paramInformers) List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]*unstructured.Unstructured, error) {
	gvr, ok := p.resource(gvk)
	if !ok {
		return nil, fmt.Errorf("no resource serves kind %v", gvk)
	}
	inf := p.synced(gvr)
	if inf == nil {
		list, err := p.client.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return nil, err
		}
		out := make([]*unstructured.Unstructured, len(list.Items))
		for i := range list.Items {
			out[i] = &list.Items[i]
		}
		return out, nil
	}
	var objs []any
	if namespace == "" {
		objs = inf.GetIndexer().List()
	} else {
		var err error
		if objs, err = inf.GetIndexer().ByIndex(cache.NamespaceIndex, namespace); err != nil {
			return nil, err
		}
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if ok && selector.Matches(labels.Set(u.GetLabels())) {
			out = append(out, u)
		}
	}
	return out, nil
}
