package validating

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	admissionauthorizer "k8s.io/apiserver/pkg/admission/plugin/authorizer"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	upstream "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"
)

// expensive is a validation of a runtime cost of about 4e5 (under the
// per-call limit), quick to run: a search through the 4 MB annotation big
// of the test's object (a string's traversal costs a tenth of its length).
// n of them exhaust a budget when n × its cost passes it.
const expensive = `!object.metadata.annotations.big.contains('y')`

// bigAnnotation is the annotation expensive searches.
var bigAnnotation = strings.Repeat("x", 4<<20)

// expensiveSpec is n validations (and their messageExpressions when
// messages) and n auditAnnotations (when audits) of expensive's cost.
func expensiveSpec(n int, messages, audits bool) string {
	var b strings.Builder
	b.WriteString("validations:\n")
	for range n {
		fmt.Fprintf(&b, "- expression: %q\n", expensive)
		if messages {
			fmt.Fprintf(&b, "  messageExpression: %q\n", expensive+` ? "m" : "n"`)
		}
	}
	if audits {
		b.WriteString("auditAnnotations:\n")
		for i := range n {
			fmt.Fprintf(&b, "- key: k%d\n  valueExpression: %q\n", i, expensive+` ? "v" : null`)
		}
	}
	return b.String()
}

// TestValidateIsUpstreams holds Hook.validate, the policy compiled by
// mutatis' compiler, to upstream's Validator compiled as kube-apiserver's
// plugin compiles it (compilePolicy), on the same request: the same
// decisions (action, evaluation, message, reason) and audit annotations
// (key, action, value, error), over the paths of validator.go: messages,
// messageExpressions and their fallbacks, reasons, compile and runtime
// errors under both failure policies, the budgets of the validations, the
// messageExpressions and the auditAnnotations, matchConditions, variables,
// params, the authorizer and the namespace. want is a text one of the
// results must hold, so that each case shows the path it is for.
func TestValidateIsUpstreams(t *testing.T) {
	ctx := context.Background()
	env := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	comp := NewCompiler()
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	deployment := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "prod", "labels": map[string]any{"app": "web"}, "annotations": map[string]any{"big": bigAnnotation}},
		"spec": map[string]any{"replicas": int64(5), "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": "nginx:1.27"}, map[string]any{"name": "side", "image": "envoy"}}}}},
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{"env": "prod"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u"}},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}}}
	configMap := map[string]any{"metadata": map[string]any{"name": "limits", "namespace": "prod"}, "data": map[string]any{"max": "3"}}
	// Allowed: get on pods; everything else denied.
	authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetVerb() == "get" && a.GetResource() == "pods" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionDeny, "no", nil
	})
	paramKind := "paramKind: {apiVersion: v1, kind: ConfigMap}\n"
	for _, tc := range []struct {
		name, spec string
		op         admission.Operation
		params     map[string]any
		want       string
	}{
		{name: "passes", spec: "validations:\n- expression: object.spec.replicas > 1", want: ""},
		{name: "default message", spec: "validations:\n- expression: ' object.spec.replicas < 3 '", want: "failed expression: object.spec.replicas < 3"},
		{name: "message and reason", spec: "validations:\n- expression: object.spec.replicas < 3\n  message: ' too many '\n  reason: Forbidden", want: "too many"},
		{name: "messageExpression", spec: "variables:\n- {name: max, expression: '3'}\nvalidations:\n- expression: object.spec.replicas <= variables.max\n  messageExpression: \"'replicas ' + string(object.spec.replicas) + ' > ' + string(variables.max)\"", want: "replicas 5 > 3"},
		{name: "messageExpression multi-line falls back", spec: "validations:\n- expression: 'false'\n  message: fallback\n  messageExpression: \"'a\\\\nb'\"", want: "fallback"},
		{name: "messageExpression blank falls back to the expression", spec: "validations:\n- expression: 'false'\n  messageExpression: \"'  '\"", want: "failed expression: false"},
		{name: "messageExpression too long falls back", spec: "validations:\n- expression: 'false'\n  message: short\n  messageExpression: \"'x'.replace('x', 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx').replace('x', 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')\"", want: "short"},
		{name: "messageExpression error falls back", spec: "validations:\n- expression: 'false'\n  message: fallback\n  messageExpression: \"object.spec.nope\"", want: "fallback"},
		{name: "messageExpression of another type does not compile", spec: "validations:\n- expression: 'false'\n  message: fallback\n  messageExpression: '1'", want: "fallback"},
		{name: "messageExpression has no authorizer", spec: "validations:\n- expression: 'false'\n  message: fallback\n  messageExpression: \"authorizer.group('').resource('pods').check('get').allowed() ? 'a' : 'b'\"", want: "fallback"},
		{name: "a variable with the authorizer in a messageExpression", spec: "variables:\n- {name: allowed, expression: \"authorizer.group('').resource('pods').check('get').allowed()\"}\nvalidations:\n- expression: '!variables.allowed'\n  message: fallback\n  messageExpression: \"string(variables.allowed)\"", want: "fallback"},
		{name: "the authorizer in a validation", spec: "validations:\n- expression: \"authorizer.group('').resource('pods').check('get').allowed() && !authorizer.requestResource.check('create').allowed()\"\n  message: authorized", want: ""},
		{name: "validation error, Fail", spec: "validations:\n- expression: object.spec.missing.replicas > 1", want: "resulted in error"},
		{name: "validation error, Ignore", spec: "failurePolicy: Ignore\nvalidations:\n- expression: object.spec.missing.replicas > 1", want: "resulted in error"},
		{name: "validation not a bool", spec: "validations:\n- expression: '1'", want: "must evaluate to bool"},
		{name: "validation does not compile", spec: "validations:\n- expression: 'object.'", want: "compilation failed"},
		{name: "variable does not compile", spec: "variables:\n- {name: v, expression: 'object.'}\nvalidations:\n- expression: variables.v == 1", want: "compilation failed"},
		{name: "variable error", spec: "variables:\n- {name: v, expression: object.spec.nope}\nvalidations:\n- expression: variables.v == 1", want: "fails to evaluate"},
		{name: "validations out of budget", spec: expensiveSpec(30, false, false), want: "running out of cost budget"},
		{name: "messageExpressions out of budget", spec: expensiveSpec(15, true, false), want: "failed messageExpression"},
		{name: "messageExpressions out of budget, Ignore", spec: "failurePolicy: Ignore\n" + expensiveSpec(15, true, false), want: "failed messageExpression"},
		{name: "auditAnnotations out of budget", spec: expensiveSpec(30, false, true), want: "running out of cost budget"},
		// Twelve validations and their twelve messageExpressions of
		// expensive's cost: 23 fit the budget, 24 do not. The variable is
		// charged in the messageExpressions' activation again.
		{name: "the variables are charged in each filter", spec: "variables:\n- {name: big, expression: " + fmt.Sprintf("%q", expensive) + "}\n" + strings.Replace(expensiveSpec(11, true, false), "validations:\n", "validations:\n- expression: variables.big\n  messageExpression: \"variables.big ? 'm' : 'n'\"\n", 1), want: "failed messageExpression"},
		{name: "auditAnnotations", spec: "auditAnnotations:\n- {key: s, valueExpression: \"' v '\"}\n- {key: e, valueExpression: \"'  '\"}\n- {key: n, valueExpression: 'null'}\n- {key: x, valueExpression: 'string(object.spec.nope)'}\n- {key: t, valueExpression: '1'}", want: "must evaluate to one of"},
		{name: "auditAnnotations, Ignore", spec: "failurePolicy: Ignore\nauditAnnotations:\n- {key: x, valueExpression: 'string(object.spec.nope)'}\n- {key: s, valueExpression: \"'v'\"}", want: ""},
		{name: "auditAnnotation without the authorizer", spec: "auditAnnotations:\n- {key: a, valueExpression: \"authorizer.group('').resource('pods').check('get').allowed() ? 'y' : 'n'\"}", want: "no such attribute"},
		{name: "namespaceObject", spec: "validations:\n- expression: \"namespaceObject.metadata.labels.env == 'test'\"\n  messageExpression: \"string(namespaceObject.metadata)\"\nauditAnnotations:\n- {key: ns, valueExpression: 'string(namespaceObject.metadata)'}", want: "env"},
		{name: "request", spec: "validations:\n- expression: 'false'\n  messageExpression: \"request.operation + ' ' + request.resource.resource + ' ' + request.kind.kind + ' ' + request.userInfo.username + ' ' + string(request.dryRun)\"", want: "CREATE deployments Deployment alice false"},
		{name: "matchConditions true", spec: "matchConditions:\n- {name: a, expression: 'true'}\nvalidations:\n- expression: 'false'", want: "failed expression"},
		{name: "matchConditions false", spec: "matchConditions:\n- {name: a, expression: 'true'}\n- {name: b, expression: 'false'}\nvalidations:\n- expression: 'false'", want: ""},
		{name: "matchConditions error, Fail", spec: "matchConditions:\n- {name: a, expression: object.spec.nope == 1}\n- {name: b, expression: object.spec.nope2 == 1}\nvalidations:\n- expression: 'false'", want: "resulted in error"},
		{name: "matchConditions error, Ignore", spec: "failurePolicy: Ignore\nmatchConditions:\n- {name: a, expression: object.spec.nope == 1}\nvalidations:\n- expression: 'false'", want: ""},
		{name: "matchConditions error then false", spec: "matchConditions:\n- {name: a, expression: object.spec.nope == 1}\n- {name: b, expression: 'false'}\nvalidations:\n- expression: 'false'", want: ""},
		{name: "matchConditions see no namespaceObject", spec: "matchConditions:\n- {name: a, expression: namespaceObject == null}\nvalidations:\n- expression: 'false'", want: "failed expression"},
		{name: "matchConditions with the authorizer and variables", spec: "variables:\n- {name: ok, expression: \"authorizer.group('').resource('pods').check('get').allowed()\"}\nmatchConditions:\n- {name: a, expression: variables.ok}\nvalidations:\n- expression: 'false'", want: "failed expression"},
		{name: "matchConditions out of budget", spec: "matchConditions:\n" + strings.Repeat("- {name: c, expression: "+fmt.Sprintf("%q", expensive)+"}\n", 8) + "validations:\n- expression: 'false'", want: "running out of cost budget"},
		{name: "params", spec: paramKind + "validations:\n- expression: object.spec.replicas <= int(params.data.max)\n  messageExpression: \"params.apiVersion + '/' + params.kind + ' ' + params.metadata.name\"", params: configMap, want: "v1/ConfigMap limits"},
		// A custom resource's integral float is an int in CEL: upstream
		// converts the param through its JSON encoding.
		{name: "a custom resource param", spec: "paramKind: {apiVersion: example.com/v1, kind: Limit}\nvalidations:\n- expression: 'false'\n  messageExpression: \"(type(params.spec.max) == int ? 'int' : 'not int') + ' ' + (type(params.spec.ratio) == double ? 'double' : 'not double') + ' ' + params.kind\"",
			params: map[string]any{"apiVersion": "example.com/v1", "kind": "Limit", "metadata": map[string]any{"name": "l"}, "spec": map[string]any{"max": float64(3), "ratio": 0.5}}, want: "int double Limit"},
		{name: "params null", spec: paramKind + "validations:\n- expression: params != null\n  messageExpression: \"string(params == null)\"", want: "true"},
		{name: "DELETE", spec: "validations:\n- expression: object != null\n  messageExpression: \"'deleting ' + oldObject.metadata.name\"", op: admission.Delete, want: "deleting web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
			if err := yaml.UnmarshalStrict([]byte(tc.spec), &p.Spec); err != nil {
				t.Fatal(err)
			}
			op := tc.op
			if op == "" {
				op = admission.Create
			}
			var obj, old map[string]any
			var objRT, oldRT runtime.Object
			var options runtime.Object = &metav1.CreateOptions{}
			if op == admission.Delete {
				old, oldRT, options = deployment, &unstructured.Unstructured{Object: deployment}, &metav1.DeleteOptions{}
			} else {
				obj, objRT = deployment, &unstructured.Unstructured{Object: deployment}
			}
			attrs := admission.NewAttributesRecord(objRT, oldRT, gvk, "prod", "web", gvr, "", op, options, false, &user.DefaultInfo{Name: "alice", Groups: []string{"dev"}})
			h := &Hook{Policy: p}
			h.compiled, h.compileErr = comp.compile(p)
			in := &input{
				object: obj, oldObject: old,
				request:           plugincel.CreateAdmissionRequest(attrs, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(gvk)),
				conditionsRequest: plugincel.CreateAdmissionRequest(attrs, metav1.GroupVersionResource(attrs.GetResource()), metav1.GroupVersionKind(gvk)),
				namespace:         ns, namespaceObject: plugincel.CreateNamespaceObject(ns),
				authz: admissionauthorizer.NewCachingAuthorizer(authz), attrs: attrs,
			}
			if tc.params != nil {
				in.params, in.paramsValue = paramOf(tc.params, p.Spec.ParamKind)
			}
			ours := comparable(h.validate(ctx, in, nil, &scratch{}))

			va := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk}
			if objRT != nil {
				va.VersionedObject = admission.NewLazyObject(&unstructured.Unstructured{Object: obj})
			}
			if oldRT != nil {
				va.VersionedOldObject = admission.NewLazyObject(&unstructured.Unstructured{Object: old})
			}
			theirs := comparable(compilePolicy(env, p, nil).Validate(ctx, gvr, va, upstreamParam(tc.params, p.Spec.ParamKind), ns, celconfig.RuntimeCELCostBudget, admissionauthorizer.NewCachingAuthorizer(authz)))
			if !reflect.DeepEqual(ours, theirs) {
				t.Fatalf("mutatis\n%s\nupstream\n%s", ours, theirs)
			}
			if !strings.Contains(ours.String(), tc.want) {
				t.Errorf("no result holds %q:\n%s", tc.want, ours)
			}
		})
	}
}

// result is a ValidateResult without its durations.
type result struct {
	Decisions   []upstream.PolicyDecision
	Annotations []upstream.PolicyAuditAnnotation
}

func comparable(r upstream.ValidateResult) result {
	var out result
	for _, d := range r.Decisions {
		d.Elapsed = 0
		out.Decisions = append(out.Decisions, d)
	}
	for _, a := range r.AuditAnnotations {
		a.Elapsed = 0
		out.Annotations = append(out.Annotations, a)
	}
	return out
}

func (r result) String() string {
	var b strings.Builder
	for _, d := range r.Decisions {
		fmt.Fprintf(&b, "decision %s %s %s: %s\n", d.Action, d.Evaluation, d.Reason, d.Message)
	}
	for _, a := range r.Annotations {
		fmt.Fprintf(&b, "annotation %s %s %q %s\n", a.Key, a.Action, a.Value, a.Error)
	}
	return b.String()
}
