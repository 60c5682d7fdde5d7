package manifest

import (
	"encoding/json"
	"reflect"
	"testing"

	v1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/api/admissionregistration/v1alpha1"
	"k8s.io/api/admissionregistration/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"
)

// sameJSON asserts that in and out serialize identically apart from
// TypeMeta: the three versions share their JSON shape, so any field the
// conversion dropped or changed shows up as a difference.
func sameJSON(t *testing.T, in, out any) {
	t.Helper()
	var a, b map[string]any
	for _, x := range []struct {
		v   any
		dst *map[string]any
	}{{in, &a}, {out, &b}} {
		js, err := json.Marshal(x.v)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(js, x.dst); err != nil {
			t.Fatal(err)
		}
		delete(*x.dst, "apiVersion")
		delete(*x.dst, "kind")
	}
	if !reflect.DeepEqual(a, b) {
		ja, _ := json.MarshalIndent(a, "", " ")
		jb, _ := json.MarshalIndent(b, "", " ")
		t.Fatalf("conversion changed the object:\nin:  %s\nout: %s", ja, jb)
	}
}

// toV1 is convertToV1 of in into out, which it returns.
func toV1[O runtime.Object](in runtime.Object, out O, kind string) O {
	if err := convertToV1(in, out, kind); err != nil {
		panic(err)
	}
	return out
}

func TestConversionKeepsEveryField(t *testing.T) {
	f := randfill.NewWithSeed(1).NilChance(0.2).NumElements(1, 3)
	for i := 0; i < 200; i++ {
		var pb v1beta1.MutatingAdmissionPolicy
		f.Fill(&pb)
		pb.TypeMeta = metav1.TypeMeta{}
		pb.ManagedFields = nil // random FieldsV1 bytes are not JSON
		sameJSON(t, &pb, toV1(&pb, &v1.MutatingAdmissionPolicy{}, kindPolicy))

		var pa v1alpha1.MutatingAdmissionPolicy
		f.Fill(&pa)
		pa.TypeMeta = metav1.TypeMeta{}
		pa.ManagedFields = nil // random FieldsV1 bytes are not JSON
		sameJSON(t, &pa, toV1(&pa, &v1.MutatingAdmissionPolicy{}, kindPolicy))

		var bb v1beta1.MutatingAdmissionPolicyBinding
		f.Fill(&bb)
		bb.TypeMeta = metav1.TypeMeta{}
		bb.ManagedFields = nil // random FieldsV1 bytes are not JSON
		sameJSON(t, &bb, toV1(&bb, &v1.MutatingAdmissionPolicyBinding{}, kindBinding))

		var ba v1alpha1.MutatingAdmissionPolicyBinding
		f.Fill(&ba)
		ba.TypeMeta = metav1.TypeMeta{}
		ba.ManagedFields = nil // random FieldsV1 bytes are not JSON
		sameJSON(t, &ba, toV1(&ba, &v1.MutatingAdmissionPolicyBinding{}, kindBinding))
	}
}

func TestConversionDoesNotAlias(t *testing.T) {
	in := &v1beta1.MutatingAdmissionPolicy{Spec: v1beta1.MutatingAdmissionPolicySpec{
		MatchConstraints: &v1beta1.MatchResources{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
			ResourceRules: []v1beta1.NamedRuleWithOperations{{
				ResourceNames:      []string{"x"},
				RuleWithOperations: v1.RuleWithOperations{Operations: []v1.OperationType{v1.Create}},
			}},
		},
	}}
	out := toV1(in, &v1.MutatingAdmissionPolicy{}, kindPolicy)
	out.Spec.MatchConstraints.NamespaceSelector.MatchLabels["a"] = "changed"
	out.Spec.MatchConstraints.ResourceRules[0].ResourceNames[0] = "changed"
	out.Spec.MatchConstraints.ResourceRules[0].Operations[0] = v1.Update
	if in.Spec.MatchConstraints.NamespaceSelector.MatchLabels["a"] != "b" ||
		in.Spec.MatchConstraints.ResourceRules[0].ResourceNames[0] != "x" ||
		in.Spec.MatchConstraints.ResourceRules[0].Operations[0] != v1.Create {
		t.Fatal("converted object shares memory with its input")
	}
	if out.APIVersion != "admissionregistration.k8s.io/v1" || out.Kind != "MutatingAdmissionPolicy" {
		t.Fatalf("TypeMeta = %+v", out.TypeMeta)
	}
}
