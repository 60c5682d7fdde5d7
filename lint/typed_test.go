package lint

import (
	"testing"

	"github.com/google/cel-go/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// The typed environment builds for every kind Kubernetes serves by
// default, and types a read and a type error as the checks expect: a
// kind whose declaration type failed to build would be silently unchecked.
func TestTypedEnvForEveryServedKind(t *testing.T) {
	c := NewChecker(nil, false)
	seen := map[string]bool{}
	n := 0
	for _, r := range c.table.Resources() {
		gvk := r.GroupVersionKind()
		if seen[gvk.String()] {
			continue
		}
		seen[gvk.String()] = true
		k := c.schemaOf(gvk)
		if k == nil {
			continue // no applyconfiguration schema (e.g. review kinds)
		}
		n++
		cc, err := typedEnv(k.rootType(), nil, false)
		if err != nil {
			t.Errorf("%s: %v", gvk, err)
			continue
		}
		env, err := cc.Env(environment.StoredExpressions)
		if err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
		if _, iss := env.Compile("object.metadata.name + 'x'"); iss.Err() != nil {
			t.Errorf("%s: a valid read does not compile: %v", gvk, iss.Err())
		}
		if _, iss := env.Compile("object.metadata.name + 1"); iss.Err() == nil {
			t.Errorf("%s: a type error compiles", gvk)
		}
		if _, iss := env.Compile("object.metadata.nam"); iss.Err() == nil {
			t.Errorf("%s: an undeclared field compiles", gvk)
		}
		if a, iss := env.Compile("Object{metadata: Object.metadata{labels: {'a': object.metadata.name}}}"); iss.Err() != nil || a.OutputType().String() != cel.ObjectType("Object").String() {
			t.Errorf("%s: an Object does not compile to Object: %v", gvk, iss.Err())
		}
	}
	if n < 50 {
		t.Fatalf("only %d kinds with a schema", n)
	}
	t.Logf("%d kinds", n)
}
