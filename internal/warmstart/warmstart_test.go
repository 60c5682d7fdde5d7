package warmstart

import (
	"fmt"
	"testing"

	"github.com/mutatis-dev/mutatis/compiler"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCommands: the commands that compile policies start the CEL
// warm-ups, the ones that decode objects the scheme's; the others (and
// flags, help, nothing) start nothing.
func TestCommands(t *testing.T) {
	for command, want := range map[string][2]bool{
		"apply": {true, true}, "test": {true, true}, "bench": {true, true},
		"audit": {true, true}, "serve": {true, true}, "migrate-check": {true, true},
		"lint": {true, false}, "cost": {true, false}, "review": {false, true},
		"version": {}, "certs": {}, "help": {}, "--version": {}, "-h": {}, "completion": {}, "": {},
	} {
		if got := [2]bool{CompilesCEL(command), DecodesObjects(command)}; got != want {
			t.Errorf("%q: CompilesCEL, DecodesObjects = %v, want %v", command, got, want)
		}
	}
}

// TestExpressions: the warm-up's expressions are ones kube-apiserver
// compiles in a mutation of a policy with params (a typo would warm the
// parser's error paths, not the shapes policies take), and warmParser
// parses them beside a compilation (under -race).
func TestExpressions(t *testing.T) {
	c, err := compiler.New()
	if err != nil {
		t.Fatal(err)
	}
	p := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "warm"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			ParamKind:          &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
	for i, src := range Expressions {
		switch src[0] {
		case '[':
			p.Spec.Mutations = append(p.Spec.Mutations, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{Expression: src}})
		case 'O':
			p.Spec.Mutations = append(p.Spec.Mutations, admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: src}})
		default:
			p.Spec.MatchConditions = append(p.Spec.MatchConditions, admissionregistrationv1.MatchCondition{Name: fmt.Sprint("c", i), Expression: src})
		}
	}
	done := make(chan struct{})
	go func() {
		warmParser()
		close(done)
	}()
	compiled, err := c.Compile(p)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if len(compiled.Expressions()) != len(Expressions) {
		t.Fatalf("%d expressions compiled, want %d", len(compiled.Expressions()), len(Expressions))
	}
	for _, e := range compiled.Expressions() {
		if e.Err != nil {
			t.Errorf("%s: %v", e.Source, e.Err)
		}
	}
}
