package compiler

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestActivationBindsLazily checks that every variable an expression can
// resolve is bound to its input when first resolved, in any order and more
// than once, with a context that can be cancelled (cel-go's ContextEval) and
// one that cannot (Eval), and that binding allocates nothing up front.
func TestActivationBindsLazily(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	conditions := [][2]string{
		{"object", `object.metadata.name == "web"`},
		{"old-object", `oldObject.metadata.name == "old"`},
		{"params", `params.data.team == "shop"`},
		{"request", `request.userInfo.username == "alice" && request.namespace == "shop"`},
		{"namespace", `namespaceObject.metadata.labels.team == "shop"`},
		{"variables", `variables.team == "shop" && variables.team == "shop"`},
		{"object-again", `object.metadata.name == "web" && request.name == "web"`},
		{"no-authorizer", `!has(object.spec)`},
	}
	p, err := c.Compile(policySpec{params: true, variables: [][2]string{{"team", `params.data.team`}},
		conditions: conditions, ac: []string{`Object{}`}}.build())
	if err != nil {
		t.Fatal(err)
	}
	in := Input{
		Object:    map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "shop"}},
		OldObject: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "old", "namespace": "shop"}},
		Params:    map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"team": "shop"}},
		Request: &admissionv1.AdmissionRequest{Name: "web", Namespace: "shop", Operation: admissionv1.Update,
			UserInfo: authenticationv1.UserInfo{Username: "alice"}},
		Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "shop"}}},
	}
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ctx := range []context.Context{context.Background(), cancellable} {
		act := p.NewActivation(ctx, in)
		for i, mc := range p.MatchConditions {
			res, _, err := act.Eval(mc, MatchConditionsBudget)
			if err != nil || res.Err != nil {
				t.Fatalf("%s: %v %v", conditions[i][0], err, res.Err)
			}
			if res.Value.Value() != true {
				t.Errorf("%s (cancellable context %v): got %v, want true", conditions[i][0], ctx != context.Background(), res.Value)
			}
		}
	}
	if _, ok := p.NewActivation(context.Background(), in).ResolveName(AuthorizerVar); ok {
		t.Error("authorizer bound without an Authorizer")
	}
	if n := testing.AllocsPerRun(100, func() { p.NewActivation(context.Background(), in) }); n > 1 {
		t.Errorf("NewActivation allocates %v times, want at most 1 (binding is lazy)", n)
	}
}
