package matching

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// namespaces of the test cluster.
var testNamespaces = []*corev1.Namespace{
	{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"env": "prod", "kubernetes.io/metadata.name": "default"}}},
	{ObjectMeta: metav1.ObjectMeta{Name: "dev", Labels: map[string]string{"env": "dev", "kubernetes.io/metadata.name": "dev"}}},
	{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", Labels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}}},
}

type namespaceMap map[string]*corev1.Namespace

func (m namespaceMap) Namespace(_ context.Context, name string) (*corev1.Namespace, error) {
	if ns, ok := m[name]; ok {
		return ns, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
}

func testNamespaceGetter() namespaceMap {
	m := namespaceMap{}
	for _, ns := range testNamespaces {
		m[ns.Name] = ns
	}
	return m
}

var widgetsCRD = &apiextensionsv1.CustomResourceDefinition{
	ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
	Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "example.com",
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
		Scope: apiextensionsv1.NamespaceScoped,
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
			{Name: "v1", Served: true, Storage: true, Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}},
			{Name: "v1beta1", Served: true, Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}},
		},
	},
}

func testTable(t testing.TB) *Table {
	t.Helper()
	tb := DefaultTable()
	if err := tb.AddCRD(widgetsCRD); err != nil {
		t.Fatal(err)
	}
	return tb
}

func objToU(t testing.TB, obj runtime.Object, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u
}

var (
	podGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	podGVK        = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	namespaceGVK  = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	deployGVR     = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	deployGVK     = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	scaleGVK      = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	hpaV1GVR      = schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}
	hpaV1GVK      = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler"}
	hpaV2GVR      = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	hpaV2GVK      = schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}
	eventGVR      = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	eventGVK      = schema.GroupVersionKind{Version: "v1", Kind: "Event"}
	eventsV1GVR   = schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
	eventsV1GVK   = schema.GroupVersionKind{Group: "events.k8s.io", Version: "v1", Kind: "Event"}
	nodeGVR       = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	nodeGVK       = schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	widgetV1GVR   = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widgetV1GVK   = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	widgetBetaGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}
	widgetBetaGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1beta1", Kind: "Widget"}
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

func pod(t testing.TB, name, ns string, labels map[string]string) *unstructured.Unstructured {
	return objToU(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}, podGVK)
}

func namespaceObj(t testing.TB, name string, labels map[string]string) *unstructured.Unstructured {
	return objToU(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, namespaceGVK)
}

func deployment(t testing.TB, name, ns string, labels map[string]string) *unstructured.Unstructured {
	replicas := int32(2)
	return objToU(t, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			},
		},
	}, deployGVK)
}

func scale(t testing.TB, name, ns string, replicas int32) *unstructured.Unstructured {
	return objToU(t, &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
	}, scaleGVK)
}

func hpa(t testing.TB, name, ns string) *unstructured.Unstructured {
	minReplicas := int32(1)
	return objToU(t, &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"}},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MinReplicas:    &minReplicas,
			MaxReplicas:    5,
		},
	}, hpaV1GVK)
}

func event(t testing.TB, name, ns string) *unstructured.Unstructured {
	return objToU(t, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", Namespace: ns},
		Reason:         "Started",
	}, eventGVK)
}

func node(t testing.TB, name string, labels map[string]string) *unstructured.Unstructured {
	return objToU(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, nodeGVK)
}

func widget(name, ns string, gvk schema.GroupVersionKind, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(3)}}}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	u.SetNamespace(ns)
	u.SetLabels(labels)
	return u
}

func execOptions(t testing.TB) *unstructured.Unstructured {
	return objToU(t, &corev1.PodExecOptions{Command: []string{"sh"}, Stdin: true}, schema.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"})
}

// requests of the test cluster.
type requests struct {
	podCreate, podCreateDev, podCreateGhost, podGenerateName, podUpdate, podDelete, podStatus, podExec *Attributes
	deployCreate, deployScale, deployCreateV1beta1                                                     *Attributes
	nsCreate, nsUpdate, nsDelete, nsStatus                                                             *Attributes
	nodeCreate, hpaV1Create, hpaV1Status, eventCreate, eventsV1Create                                  *Attributes
	widgetBetaCreate, widgetV1Create                                                                   *Attributes
}

func testRequests(t testing.TB) requests {
	web := map[string]string{"app": "web"}
	return requests{
		podCreate: &Attributes{Operation: admission.Create, Kind: podGVK, Resource: podGVR, Name: "web", Namespace: "default",
			Object: pod(t, "web", "default", web)},
		podCreateDev: &Attributes{Operation: admission.Create, Kind: podGVK, Resource: podGVR, Name: "web", Namespace: "dev",
			Object: pod(t, "web", "dev", web)},
		podCreateGhost: &Attributes{Operation: admission.Create, Kind: podGVK, Resource: podGVR, Name: "web", Namespace: "ghost",
			Object: pod(t, "web", "ghost", web)},
		podGenerateName: &Attributes{Operation: admission.Create, Kind: podGVK, Resource: podGVR, Namespace: "default",
			Object: pod(t, "", "default", web)},
		podUpdate: &Attributes{Operation: admission.Update, Kind: podGVK, Resource: podGVR, Name: "web", Namespace: "default",
			Object: pod(t, "web", "default", map[string]string{"app": "web", "tier": "front"}), OldObject: pod(t, "web", "default", map[string]string{"app": "old"})},
		podDelete: &Attributes{Operation: admission.Delete, Kind: podGVK, Resource: podGVR, Name: "web", Namespace: "default",
			OldObject: pod(t, "web", "default", web)},
		podStatus: &Attributes{Operation: admission.Update, Kind: podGVK, Resource: podGVR, Subresource: "status", Name: "web", Namespace: "default",
			Object: pod(t, "web", "default", web), OldObject: pod(t, "web", "default", web)},
		podExec: &Attributes{Operation: admission.Connect, Kind: schema.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}, Resource: podGVR, Subresource: "exec", Name: "web", Namespace: "default",
			Object: execOptions(t)},
		deployCreate: &Attributes{Operation: admission.Create, Kind: deployGVK, Resource: deployGVR, Name: "web", Namespace: "dev",
			Object: deployment(t, "web", "dev", web)},
		deployCreateV1beta1: &Attributes{Operation: admission.Create, Kind: schema.GroupVersionKind{Group: "apps", Version: "v1beta1", Kind: "Deployment"},
			Resource: schema.GroupVersionResource{Group: "apps", Version: "v1beta1", Resource: "deployments"}, Name: "web", Namespace: "dev",
			Object: deployment(t, "web", "dev", web)},
		deployScale: &Attributes{Operation: admission.Update, Kind: scaleGVK, Resource: deployGVR, Subresource: "scale", Name: "web", Namespace: "dev",
			Object: scale(t, "web", "dev", 3), OldObject: scale(t, "web", "dev", 2)},
		nsCreate: &Attributes{Operation: admission.Create, Kind: namespaceGVK, Resource: namespacesGVR, Name: "team-a",
			Object: namespaceObj(t, "team-a", map[string]string{"team": "a", "env": "prod"})},
		nsUpdate: &Attributes{Operation: admission.Update, Kind: namespaceGVK, Resource: namespacesGVR, Name: "dev", Namespace: "dev",
			Object: namespaceObj(t, "dev", map[string]string{"env": "prod"}), OldObject: namespaceObj(t, "dev", map[string]string{"env": "dev"})},
		nsDelete: &Attributes{Operation: admission.Delete, Kind: namespaceGVK, Resource: namespacesGVR, Name: "dev", Namespace: "dev",
			OldObject: namespaceObj(t, "dev", map[string]string{"env": "dev"})},
		nsStatus: &Attributes{Operation: admission.Update, Kind: namespaceGVK, Resource: namespacesGVR, Subresource: "status", Name: "default", Namespace: "default",
			Object: namespaceObj(t, "default", nil), OldObject: namespaceObj(t, "default", nil)},
		nodeCreate: &Attributes{Operation: admission.Create, Kind: nodeGVK, Resource: nodeGVR, Name: "node-1",
			Object: node(t, "node-1", map[string]string{"app": "web"})},
		hpaV1Create: &Attributes{Operation: admission.Create, Kind: hpaV1GVK, Resource: hpaV1GVR, Name: "web", Namespace: "default",
			Object: hpa(t, "web", "default")},
		hpaV1Status: &Attributes{Operation: admission.Update, Kind: hpaV1GVK, Resource: hpaV1GVR, Subresource: "status", Name: "web", Namespace: "default",
			Object: hpa(t, "web", "default"), OldObject: hpa(t, "web", "default")},
		eventCreate: &Attributes{Operation: admission.Create, Kind: eventGVK, Resource: eventGVR, Name: "web.1", Namespace: "default",
			Object: event(t, "web.1", "default")},
		eventsV1Create: &Attributes{Operation: admission.Create, Kind: eventsV1GVK, Resource: eventsV1GVR, Name: "web.1", Namespace: "default",
			Object: event(t, "web.1", "default")},
		widgetBetaCreate: &Attributes{Operation: admission.Create, Kind: widgetBetaGVK, Resource: widgetBetaGVR, Name: "w", Namespace: "default",
			Object: widget("w", "default", widgetBetaGVK, map[string]string{"app": "web"})},
		widgetV1Create: &Attributes{Operation: admission.Create, Kind: widgetV1GVK, Resource: widgetV1GVR, Name: "w", Namespace: "dev",
			Object: widget("w", "dev", widgetV1GVK, nil)},
	}
}

func rule(ops []admissionregistrationv1.OperationType, groups, versions, resources []string, scope admissionregistrationv1.ScopeType) admissionregistrationv1.RuleWithOperations {
	r := admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources},
	}
	if scope != "" {
		r.Scope = &scope
	}
	return r
}

func ops(o ...admissionregistrationv1.OperationType) []admissionregistrationv1.OperationType {
	return o
}
func strs(s ...string) []string { return s }

var (
	opCreate  = admissionregistrationv1.Create
	opUpdate  = admissionregistrationv1.Update
	opDelete  = admissionregistrationv1.Delete
	opConnect = admissionregistrationv1.Connect
	opAll     = admissionregistrationv1.OperationAll
)

func policyType(p admissionregistrationv1.MatchPolicyType) *admissionregistrationv1.MatchPolicyType {
	return &p
}

func selector(s string) *metav1.LabelSelector {
	sel, err := metav1.ParseToLabelSelector(s)
	if err != nil {
		panic(err)
	}
	return sel
}
