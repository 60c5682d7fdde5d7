package costs

import (
	"testing"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/mutatis-dev/mutatis/compiler"
)

// podSchema is the DeclType of a Pod-like kind whose spec.containers has at
// most maxItems elements, each with a name of at most 63 characters.
func podSchema(maxItems int64) *apiservercel.DeclType {
	name := apiservercel.NewSimpleTypeWithMinSize("string", cel.StringType, celtypes.String(""), apiservercel.MinStringSize)
	name.MaxElements = 63
	container := apiservercel.NewObjectType("container", map[string]*apiservercel.DeclField{
		"name": apiservercel.NewDeclField("name", name, true, nil, nil),
	})
	spec := apiservercel.NewObjectType("spec", map[string]*apiservercel.DeclField{
		"containers": apiservercel.NewDeclField("containers", apiservercel.NewListType(container, maxItems), false, nil, nil),
	})
	return apiservercel.NewObjectType("pod", map[string]*apiservercel.DeclField{
		"spec": apiservercel.NewDeclField("spec", spec, false, nil, nil),
	})
}

// conditionPolicy is a policy with one matchCondition, c, and an
// ApplyConfiguration mutation that changes nothing.
func conditionPolicy(condition string) *admissionregistrationv1.MutatingAdmissionPolicy {
	return &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "c", Expression: condition}},
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: "Object{}"}}},
		}}
}

// TestEstimateWithSchemaSizesDynamicListElements: "object" is dyn, so the
// cost checker names the iteration variable of a comprehension over one of
// its lists "@keys". The schema's list elements must size it, or every
// element access is unbounded (what mutatis lint reported).
func TestEstimateWithSchemaSizesDynamicListElements(t *testing.T) {
	c, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Compile(conditionPolicy(`object.spec.containers.all(c, c.name.contains("istio"))`))
	if err != nil {
		t.Fatal(err)
	}
	e := p.MatchConditions[0]
	if e.Err != nil {
		t.Fatal(e.Err)
	}
	if !e.Cost.Unbounded() {
		t.Fatalf("without a schema the estimate is %+v, want unbounded", e.Cost)
	}
	ten, twenty := EstimateWithSchema(e, podSchema(10), nil), EstimateWithSchema(e, podSchema(20), nil)
	t.Logf("maxItems 10: %+v; maxItems 20: %+v", ten, twenty)
	if ten.Unbounded() || !ten.Schema {
		t.Fatalf("with maxItems 10 and names of at most 63 characters the estimate is %+v, want bounded", ten)
	}
	// all() over at most n containers, each a contains() on a name of at
	// most 63 characters: the worst case grows with n.
	if twenty.Max <= ten.Max {
		t.Errorf("maxItems 20 estimates %d, maxItems 10 %d: the list bound is not used", twenty.Max, ten.Max)
	}
	if got := estimateForKind(e, podSchema(10), nil); got != ten {
		t.Errorf("EstimateForKind %+v, EstimateWithSchema %+v", got, ten)
	}
}
