package upstream

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// ValidatingPolicies is k8s.io/apiserver's ValidatingAdmissionPolicy plugin
// (validating.NewPlugin) wired as kube-apiserver wires it: policies,
// bindings, namespaces and params served by informers over a fake
// clientset holding objects (params of the kinds in paramResources, whose
// informers start with the others), kinds resolved by mapper, the review
// resources excluded, authz behind the CEL authorizer. The plugin's own
// policy source compiles the policies (its unexported compilePolicy). It
// is ready when returned; the informers stop with ctx.
func ValidatingPolicies(ctx context.Context, objects []runtime.Object, paramResources []schema.GroupVersionResource, mapper meta.RESTMapper, authz authorizer.Authorizer) (*validating.Plugin, error) {
	p, err := validating.NewPlugin(nil)
	if err != nil {
		return nil, err
	}
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	for _, gvr := range paramResources {
		if _, err := factory.ForResource(gvr); err != nil {
			return nil, err
		}
	}
	p.SetExcludedAdmissionResources(append([]schema.GroupResource(nil), reviewResources...))
	p.SetExternalKubeClientSet(client)
	p.SetExternalKubeInformerFactory(factory)
	p.SetRESTMapper(mapper)
	p.SetDynamicClient(dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()))
	p.SetDrainedNotification(ctx.Done())
	p.SetUnconditionalAuthorizer(authz)
	if err := p.ValidateInitialization(); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	deadline := time.Now().Add(10 * time.Second)
	for !p.WaitForReady() {
		if time.Now().After(deadline) {
			return nil, errors.New("the ValidatingAdmissionPolicy plugin is not ready")
		}
	}
	return p, nil
}

// AnnotatedAttributes are admission attributes that keep the audit
// annotations the plugins add (kube-apiserver's audit event gets them).
type AnnotatedAttributes struct {
	admission.Attributes
	Annotations map[string]string
}

// AddAnnotation keeps key unless it already has another value (the error
// kube-apiserver's attributes record answers).
func (a *AnnotatedAttributes) AddAnnotation(key, value string) error {
	return a.AddAnnotationWithLevel(key, value, auditinternal.LevelMetadata)
}

// AddAnnotationWithLevel is AddAnnotation.
func (a *AnnotatedAttributes) AddAnnotationWithLevel(key, value string, _ auditinternal.Level) error {
	if a.Annotations == nil {
		a.Annotations = map[string]string{}
	}
	if v, ok := a.Annotations[key]; ok && v != value {
		return errors.New("admission annotations are not allowed to be overwritten")
	}
	a.Annotations[key] = value
	return nil
}
