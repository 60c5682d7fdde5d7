package upstream

import (
	"context"
	"fmt"
	"net/url"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	webhookmutating "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	webhookvalidating "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// MutatingWebhooks is k8s.io/apiserver's MutatingAdmissionWebhook plugin
// wired as kube-apiserver wires it: configurations and namespaces served
// by informers (over a fake clientset holding objects), services resolved
// through Services (namespace/name:port → https://host:port; a service
// not in the map resolves as kube-apiserver's default resolver does, to
// name.namespace.svc), no client credentials. Call Admit once per round
// of the admission chain; the informers stop with ctx.
func MutatingWebhooks(ctx context.Context, objects []runtime.Object, services map[string]*url.URL, authz authorizer.Authorizer) (admission.MutationInterface, error) {
	wh, err := webhookmutating.NewMutatingWebhook(nil)
	if err != nil {
		return nil, err
	}
	if err := wire(ctx, wh.Webhook, objects, services, authz); err != nil {
		return nil, err
	}
	return wh, nil
}

// ValidatingWebhooks is MutatingWebhooks for k8s.io/apiserver's
// ValidatingAdmissionWebhook plugin: call Validate once per request.
func ValidatingWebhooks(ctx context.Context, objects []runtime.Object, services map[string]*url.URL, authz authorizer.Authorizer) (admission.ValidationInterface, error) {
	wh, err := webhookvalidating.NewValidatingAdmissionWebhook(nil)
	if err != nil {
		return nil, err
	}
	if err := wire(ctx, wh.Webhook, objects, services, authz); err != nil {
		return nil, err
	}
	return wh, nil
}

// wire initializes a webhook plugin as kube-apiserver does and starts its
// informers.
func wire(ctx context.Context, wh *generic.Webhook, objects []runtime.Object, services map[string]*url.URL, authz authorizer.Authorizer) error {
	client := fake.NewSimpleClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	// kube-apiserver's initializers: the feature gates, and the
	// non-persisted review resources no webhook may intercept
	// (pkg/kubeapiserver/admission/exclusion, which only scheme may
	// import; Exempt lists them for policies).
	wh.InspectFeatureGates(utilfeature.DefaultFeatureGate)
	wh.SetExcludedAdmissionResources(append([]schema.GroupResource(nil), reviewResources...))
	wh.SetAuthenticationInfoResolverWrapper(func(webhookutil.AuthenticationInfoResolver) webhookutil.AuthenticationInfoResolver {
		return noCredentials{}
	})
	wh.SetServiceResolver(serviceResolver(services))
	wh.SetExternalKubeClientSet(client)
	wh.SetExternalKubeInformerFactory(factory)
	if authz != nil {
		wh.SetUnconditionalAuthorizer(authz)
	}
	if err := wh.ValidateInitialization(); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return nil
}

// reviewResources are kube-apiserver's excluded admission resources
// (exclusion.Excluded), the review resources of Exempt.
var reviewResources = []schema.GroupResource{
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"},
	{Group: "authentication.k8s.io", Resource: "tokenreviews"},
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"},
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
}

// noCredentials is kube-apiserver's authentication info resolver without a
// kubeconfig: no client certificate or token for any webhook.
type noCredentials struct{}

func (noCredentials) ClientConfigFor(string) (*rest.Config, error) { return &rest.Config{}, nil }
func (noCredentials) ClientConfigForService(string, string, int) (*rest.Config, error) {
	return &rest.Config{}, nil
}

// serviceResolver maps "namespace/name:port" to a URL.
type serviceResolver map[string]*url.URL

func (r serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	if u, ok := r[ServiceKey(namespace, name, port)]; ok {
		return u, nil
	}
	return webhookutil.NewDefaultServiceResolver().ResolveEndpoint(namespace, name, port)
}

// ServiceKey is the key of a service in MutatingWebhooks' services map.
func ServiceKey(namespace, name string, port int32) string {
	return fmt.Sprintf("%s/%s:%d", namespace, name, port)
}
