package differential

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"
	"sigs.k8s.io/yaml"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/test/upstream"
)

// vapDeployment is a ValidatingAdmissionPolicy on Deployments with spec,
// and its binding with bindingSpec.
func vapDeployment(name, spec, bindingSpec string) string {
	return `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: ` + name + `}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE, DELETE], resources: [deployments]}
` + spec + `
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: ` + name + `-binding}
spec:
  policyName: ` + name + `
` + bindingSpec + "\n---\n"
}

const vapObjects = `apiVersion: v1
kind: Namespace
metadata: {name: prod, labels: {env: prod}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: limits, namespace: prod, labels: {policy: replicas}}
data: {maxReplicas: "3"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: limits-strict, namespace: prod, labels: {policy: replicas}}
data: {maxReplicas: "2"}
`

const vapDeploymentObject = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: prod, labels: {app: web}}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "nginx:1.27"}
`

// outcome is what kube-apiserver answers of a validating admission: the
// refusal's code, reason and message, the warnings, the audit annotations.
type outcome struct {
	Code        int32
	Reason      string
	Message     string
	Warnings    []string
	Annotations map[string]string
}

// TestValidatingAdmissionPoliciesAreUpstreams runs the same policies and
// requests through mutatis' validating stage and k8s.io/apiserver's own
// ValidatingAdmissionPolicy plugin (its policy source, compilation,
// dispatcher and validator over informers): the refusal (status code,
// reason, message), the warnings and the audit annotations must be equal.
// Each case has at most one denying decision (upstream's policy order is
// its informer's).
func TestValidatingAdmissionPoliciesAreUpstreams(t *testing.T) {
	limits := "  validationActions: [Deny]"
	for _, tc := range []struct {
		name, policies, object, oldObject string
		op                                admission.Operation
		// paramOrderFree: a selector finds several params, whose order
		// upstream does not fix (inParamOrder).
		paramOrderFree bool
	}{
		{name: "Deny, default reason", policies: vapDeployment("max", "  validations:\n  - expression: object.spec.replicas <= 3", limits)},
		{name: "Deny, reason Forbidden and message", policies: vapDeployment("max", "  validations:\n  - expression: object.spec.replicas <= 3\n    message: ' too many '\n    reason: Forbidden", limits)},
		{name: "messageExpression, variables", policies: vapDeployment("max", "  variables:\n  - {name: max, expression: '3'}\n  validations:\n  - expression: object.spec.replicas <= variables.max\n    messageExpression: \"'replicas ' + string(object.spec.replicas)\"", limits)},
		{name: "messageExpression not a usable string falls back", policies: vapDeployment("max", "  validations:\n  - expression: object.spec.replicas <= 3\n    message: fallback\n    messageExpression: \"'a\\\\nb'\"", limits)},
		{name: "Warn and Audit", policies: vapDeployment("max", "  validations:\n  - expression: object.spec.replicas <= 3\n    message: too many\n  - expression: object.spec.replicas <= 4", "  validationActions: [Warn, Audit]")},
		{name: "auditAnnotations, two params, distinct values", paramOrderFree: true, policies: vapDeployment("max", "  paramKind: {apiVersion: v1, kind: ConfigMap}\n  validations:\n  - expression: object.spec.replicas <= int(params.data.maxReplicas)\n    messageExpression: \"params.apiVersion + '/' + params.kind + ' ' + params.metadata.name\"\n  auditAnnotations:\n  - {key: max, valueExpression: \"'max ' + params.data.maxReplicas\"}", "  validationActions: [Warn, Audit]\n  paramRef: {selector: {matchLabels: {policy: replicas}}, parameterNotFoundAction: Deny}")},
		{name: "param by name", policies: vapDeployment("max", "  paramKind: {apiVersion: v1, kind: ConfigMap}\n  validations:\n  - expression: object.spec.replicas <= int(params.data.maxReplicas)", "  validationActions: [Deny]\n  paramRef: {name: limits, parameterNotFoundAction: Deny}")},
		{name: "parameterNotFoundAction Deny", policies: vapDeployment("max", "  paramKind: {apiVersion: v1, kind: ConfigMap}\n  validations:\n  - expression: 'true'", "  validationActions: [Deny]\n  paramRef: {name: missing, parameterNotFoundAction: Deny}")},
		{name: "parameterNotFoundAction Allow", policies: vapDeployment("max", "  paramKind: {apiVersion: v1, kind: ConfigMap}\n  validations:\n  - expression: 'false'", "  validationActions: [Deny]\n  paramRef: {name: missing, parameterNotFoundAction: Allow}")},
		{name: "a paramKind not served", policies: vapDeployment("max", "  paramKind: {apiVersion: example.com/v1, kind: Limit}\n  validations:\n  - expression: 'true'", "  validationActions: [Deny]\n  paramRef: {name: x, parameterNotFoundAction: Deny}")},
		{name: "matchConditions false and error", policies: vapDeployment("a", "  matchConditions:\n  - {name: big, expression: object.spec.replicas > 10}\n  validations:\n  - expression: 'false'", limits) + vapDeployment("b", "  failurePolicy: Ignore\n  matchConditions:\n  - {name: bad, expression: object.spec.nope == 1}\n  validations:\n  - expression: 'false'", limits)},
		{name: "expression error, Fail", policies: vapDeployment("max", "  validations:\n  - expression: object.spec.missing.replicas > 1", limits)},
		{name: "expression error, Ignore", policies: vapDeployment("max", "  failurePolicy: Ignore\n  validations:\n  - expression: object.spec.missing.replicas > 1", limits)},
		{name: "auditAnnotation error, Fail", policies: vapDeployment("max", "  auditAnnotations:\n  - {key: k, valueExpression: string(object.spec.missing)}", "  validationActions: [Audit]")},
		{name: "cost budget", policies: vapDeployment("max", "  validations:\n  - expression: \"[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, [1,2,3,4,5,6,7,8,9,10].all(g, true)))))))\"", limits)},
		{name: "UPDATE with oldObject", policies: vapDeployment("down", "  validations:\n  - expression: object.spec.replicas >= oldObject.spec.replicas\n    messageExpression: \"string(oldObject.spec.replicas) + ' to ' + string(object.spec.replicas)\"", limits),
			object: strings.Replace(vapDeploymentObject, "replicas: 5", "replicas: 2", 1), oldObject: vapDeploymentObject},
		{name: "DELETE with the old object, namespaceObject", policies: vapDeployment("del", "  validations:\n  - expression: object == null && oldObject.metadata.name != 'web'\n    messageExpression: \"request.operation + ' ' + oldObject.metadata.name + ' in ' + namespaceObject.metadata.labels.env\"", limits),
			oldObject: vapDeploymentObject, op: admission.Delete},
		{name: "the authorizer", policies: vapDeployment("authz", "  validations:\n  - expression: authorizer.group('apps').resource('deployments').namespace('prod').check('delete').allowed() && authorizer.requestResource.check('create').allowed()\n    message: not allowed", limits)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.object == "" && tc.op != admission.Delete {
				tc.object = vapDeploymentObject
			}
			ours, theirs := compareValidating(t, tc.policies, tc.object, tc.oldObject, tc.op)
			if tc.paramOrderFree {
				ours, theirs = inParamOrder(t, ours), inParamOrder(t, theirs)
			}
			if !reflect.DeepEqual(ours, theirs) {
				t.Errorf("mutatis  %+v\nupstream %+v", ours, theirs)
			}
		})
	}
}

// inParamOrder is o with what the order of a binding's params decides
// put in one order: kube-apiserver evaluates the params a selector finds
// in the order its informer's lister lists them (a map's: it varies from
// one request to the next), mutatis by namespace and name
// (docs/fidelity.md). The warnings, the values of an audit annotation that
// several params gave (joined by ", ") and the validation failures are
// sorted.
func inParamOrder(t *testing.T, o outcome) outcome {
	t.Helper()
	o.Warnings = slices.Sorted(slices.Values(o.Warnings))
	annotations := make(map[string]string, len(o.Annotations))
	for k, v := range o.Annotations {
		switch k {
		case "validation.policy.admission.k8s.io/validation_failure":
			var failures []map[string]any
			if err := json.Unmarshal([]byte(v), &failures); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			slices.SortFunc(failures, func(a, b map[string]any) int {
				return strings.Compare(fmt.Sprint(a["message"]), fmt.Sprint(b["message"]))
			})
			js, err := json.Marshal(failures)
			if err != nil {
				t.Fatal(err)
			}
			v = string(js)
		default:
			parts := strings.Split(v, ", ")
			slices.Sort(parts)
			v = strings.Join(parts, ", ")
		}
		annotations[k] = v
	}
	o.Annotations = annotations
	return o
}

// compareValidating runs the request through both and returns the two
// outcomes.
func compareValidating(t *testing.T, policyYAML, objectYAML, oldYAML string, op admission.Operation) (ours, theirs outcome) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	set, err := manifest.Parse("policies.yaml", []byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := manifest.Parse("objects.yaml", []byte(vapObjects))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := cluster.New(rs.Objects, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	policies, bindings := set.ValidatingAPIObjects()
	ev, err := sim.ValidatingPolicies(nil, policies, bindings)
	if err != nil {
		t.Fatal(err)
	}
	d, err := sim.DecodeSteps(cluster.Request{Object: yamlObject(t, objectYAML), OldObject: yamlObject(t, oldYAML), Operation: op})
	if err != nil {
		t.Fatal(err)
	}
	a := *d.Attributes // Admit's objects, before the chain
	adm, err := sim.Admit(ctx, cluster.Chain{ValidatingPolicies: ev}, d)
	if err != nil {
		t.Fatal(err)
	}
	if adm.Invalid != nil {
		t.Fatal(adm.Invalid)
	}
	ours = outcomeOf(adm.Validation.Denied, adm.Validation.Warnings, adm.Validation.AuditAnnotations)

	// Upstream: the same objects, typed in their internal version as the
	// registry hands them to validating admission.
	k := kubeScheme()
	var objs []runtime.Object
	for _, p := range policies {
		objs = append(objs, p)
	}
	for _, b := range bindings {
		objs = append(objs, b)
	}
	for _, o := range rs.Objects {
		objs = append(objs, typedObject(t, k, o.Object.Object, o.Object.GroupVersionKind(), false))
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	plugin, err := upstream.ValidatingPolicies(ctx, objs, []schema.GroupVersionResource{{Version: "v1", Resource: "configmaps"}}, mapper, sim.Authorizer)
	if err != nil {
		t.Fatal(err)
	}
	var obj, old runtime.Object
	if op != admission.Delete {
		stored := adm.Stored
		if stored == nil {
			t.Fatal("nothing stored")
		}
		obj = typedObject(t, k, stored, a.Kind, true)
	}
	if a.OldObject != nil {
		old = typedObject(t, k, a.OldObject.Object, a.Kind, true)
	}
	attrs := &upstream.AnnotatedAttributes{Attributes: admission.NewAttributesRecord(obj, old, a.Kind, a.Namespace, a.Name, a.Resource, a.Subresource, a.Operation, nil, a.DryRun, a.UserInfo)}
	rec := &warnings{}
	err = plugin.Validate(warning.WithWarningRecorder(ctx, rec), attrs, admission.NewObjectInterfacesFromScheme(k))
	var status *apierrors.StatusError
	if err != nil && !errors.As(err, &status) {
		t.Fatalf("upstream: %v", err)
	}
	theirs = outcomeOf(status, rec.list, attrs.Annotations)
	return ours, theirs
}

func outcomeOf(status *apierrors.StatusError, warnings []string, annotations map[string]string) outcome {
	o := outcome{Warnings: warnings, Annotations: annotations}
	if len(o.Annotations) == 0 {
		o.Annotations = nil
	}
	if status != nil {
		o.Code, o.Reason, o.Message = status.ErrStatus.Code, string(status.ErrStatus.Reason), status.ErrStatus.Message
	}
	return o
}

// typedObject is obj, of kind gvk, as kube-apiserver's Go type of that
// kind, in its internal version when internal is set.
func typedObject(t *testing.T, k *runtime.Scheme, obj map[string]any, gvk schema.GroupVersionKind, internal bool) runtime.Object {
	t.Helper()
	typed, err := k.New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, typed); err != nil {
		t.Fatal(err)
	}
	typed.GetObjectKind().SetGroupVersionKind(gvk)
	if !internal {
		return typed
	}
	out, err := k.ConvertToVersion(typed, schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func yamlObject(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	if y == "" {
		return nil
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// warnings is a warning.Recorder keeping one of each text, as
// kube-apiserver's recorder does.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, x := range w.list {
		if x == text {
			return
		}
	}
	w.list = append(w.list, text)
}
