package engine

import (
	"fmt"
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
)

// passObjectRequests are requests for real kinds whose objects are not in
// normalized form (quantities and integers as written, empty fields,
// defaults missing), so that requestObject changes them.
func passObjectRequests() []*matching.Attributes {
	pod := func(cpu any, replicas any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{"app": "web"}, "annotations": map[string]any{}},
			"spec": map[string]any{
				"containers": []any{map[string]any{"name": "app", "image": "nginx", "ports": []any{map[string]any{"containerPort": replicas}},
					"resources": map[string]any{"requests": map[string]any{"cpu": cpu, "memory": "0.5Gi"}}}},
				"terminationGracePeriodSeconds": replicas,
			}}
	}
	deployment := func(replicas any) map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "shop"},
			"spec": map[string]any{"replicas": replicas,
				"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27", "env": []any{}}}}}}}
	}
	req := func(obj map[string]any, gvk schema.GroupVersionKind, resource string) *matching.Attributes {
		return &matching.Attributes{Operation: admission.Create, Kind: gvk,
			Resource: schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resource}, Name: "web", Namespace: "shop",
			Object: &unstructured.Unstructured{Object: obj}, UserInfo: &user.DefaultInfo{Name: "admin"}}
	}
	podKind := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	deploymentKind := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	out := []*matching.Attributes{createConfigMap()}
	for _, cpu := range []any{"0.5", "500m", int64(1), 2.0} {
		for _, n := range []any{int64(30), 30.0} {
			out = append(out, req(pod(cpu, n), podKind, "pods"))
		}
	}
	for _, n := range []any{int64(3), 3.0, nil} {
		out = append(out, req(deployment(n), deploymentKind, "deployments"))
	}
	return out
}

// passObjectPolicies are policy sets over pods, deployments and
// configmaps: reinvocable and not, changing the object or not, failing
// under Ignore.
func passObjectPolicies() [][]*admissionregistrationv1.MutatingAdmissionPolicy {
	ifNeeded, never := admissionregistrationv1.IfNeededReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	all := func(p *admissionregistrationv1.MutatingAdmissionPolicy) *admissionregistrationv1.MutatingAdmissionPolicy {
		r := &p.Spec.MatchConstraints.ResourceRules[0].Rule
		r.APIGroups, r.APIVersions, r.Resources = []string{"", "apps"}, []string{"v1"}, []string{"pods", "deployments", "configmaps"}
		return p
	}
	label := func(name string, reinvoke admissionregistrationv1.ReinvocationPolicyType) *admissionregistrationv1.MutatingAdmissionPolicy {
		return all(mapPolicy(name, reinvoke, fail, fmt.Sprintf(`Object{metadata: Object.metadata{labels: {%q: "yes"}}}`, name)))
	}
	same := all(mapPolicy("same", ifNeeded, fail, `Object{metadata: Object.metadata{name: object.metadata.name}}`))
	failing := all(mapPolicy("failing", ifNeeded, ignore, `Object{metadata: Object.metadata{labels: {"x": string(1/0)}}}`))
	counting := all(mapPolicy("counting", ifNeeded, fail, counter))
	return [][]*admissionregistrationv1.MutatingAdmissionPolicy{
		{label("a", ifNeeded)},
		{label("a", never), label("b", never)},
		{label("a", ifNeeded), same, label("b", never)},
		{same},
		{failing, label("a", ifNeeded)},
		{counting, label("a", ifNeeded), counting.DeepCopy()},
	}
}

// TestReinvocationObjectNormalized proves passObject's shortcut: in the
// reinvocation round the policies' own output, when no stage changed it,
// is presented as it is, and that gives the result presenting it through
// requestObject gives (the object and every record), on real kinds with
// objects not written in normalized form. The output is a fixed point of
// requestObject.
func TestReinvocationObjectNormalized(t *testing.T) {
	reinvoked := 0
	defer func() {
		if reinvoked == 0 {
			t.Error("no request was reinvoked: the shortcut was not exercised")
		}
	}()
	for i, policies := range passObjectPolicies() {
		for j, a := range passObjectRequests() {
			t.Run(fmt.Sprintf("policies-%d/request-%d", i, j), func(t *testing.T) {
				hooks := testHooks(t, dedupe(policies)...)
				fast := NewEvaluator(testConfig(), hooks)
				reference := NewEvaluator(testConfig(), hooks)
				reference.alwaysNormalize = true
				got, gotErr := admitFrozen(t, fast, a)
				want, wantErr := admitFrozen(t, reference, a)
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Fatalf("error %v, want %v", gotErr, wantErr)
				}
				if !reflect.DeepEqual(got.Object, want.Object) {
					t.Fatalf("object\n%v\nwant\n%v", got.Object, want.Object)
				}
				if fmt.Sprint(got.Denied) != fmt.Sprint(want.Denied) || got.Reinvoked != want.Reinvoked || got.Reinvoke != want.Reinvoke {
					t.Fatalf("result %+v, want %+v", got, want)
				}
				if g, w := records(got), records(want); g != w {
					t.Fatalf("records\n%s\nwant\n%s", g, w)
				}
				if got.Reinvoked {
					reinvoked++
				}
				if got.Object != nil {
					again, err := fast.requestObject(&matching.Attributes{Kind: a.Kind, Object: &unstructured.Unstructured{Object: got.Object}})
					if err != nil || !reflect.DeepEqual(again, got.Object) {
						t.Fatalf("the output is not a fixed point of requestObject: %v\n%v\nwant\n%v", err, again, got.Object)
					}
				}
			})
		}
	}
}

// dedupe renames policies that share a name (a copy of one policy).
func dedupe(policies []*admissionregistrationv1.MutatingAdmissionPolicy) []*admissionregistrationv1.MutatingAdmissionPolicy {
	seen := map[string]int{}
	out := make([]*admissionregistrationv1.MutatingAdmissionPolicy, len(policies))
	for i, p := range policies {
		if n := seen[p.Name]; n > 0 {
			p = p.DeepCopy()
			p.Name = fmt.Sprintf("%s-%d", p.Name, n)
		}
		seen[policies[i].Name]++
		out[i] = p
	}
	return out
}

// records is the trace of res, every field that is not a duration.
func records(res chain.Result) string {
	s := ""
	for _, inv := range res.Invocations {
		s += fmt.Sprintf("%d %s %s %s skip=%q cond=%q err=%v;", inv.Round, inv.Configuration, inv.Hook, inv.Param, inv.Skip, inv.Condition, inv.Err)
		for _, m := range inv.Mutations {
			s += fmt.Sprintf(" [cost=%d skipped=%v err=%v]", m.Cost, m.Skipped, m.Err)
		}
		s += "\n"
	}
	for _, ig := range res.Ignored {
		s += fmt.Sprintf("ignored %d %s %s %d %s\n", ig.Round, ig.Configuration, ig.Hook, ig.Mutation, ig.Message)
	}
	return s
}
