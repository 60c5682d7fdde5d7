package compiler

import (
	"sync"
	"testing"

	"github.com/google/cel-go/cel"

	"k8s.io/apiserver/pkg/cel/environment"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWarm: Warm leaves the base environments built, with a plan check
// and an environment without variables for each of them in both modes,
// and it may run beside compilations (under -race).
func TestWarm(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Go(Warm)
		wg.Go(func() {
			c, err := New()
			if err != nil {
				t.Error(err)
				return
			}
			p := &admissionregistrationv1.MutatingAdmissionPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: "warm"},
				Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
					MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "has(object.metadata.labels)"}},
				},
			}
			if errs, err := c.Validate(p); err != nil || len(errs) > 0 {
				t.Errorf("Validate: %v %v", err, errs)
			}
		})
	}
	wg.Wait()
	b, err := loadBaseEnvs()
	if err != nil {
		t.Fatal(err)
	}
	b.checks.mu.Lock()
	defer b.checks.mu.Unlock()
	for k, set := range b.envs {
		for _, mode := range []environment.Type{environment.NewExpressions, environment.StoredExpressions} {
			env, err := set.Env(mode)
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := b.checks.checks[env]; !ok || c == nil {
				t.Errorf("%+v %v: no plan check after Warm", k, mode)
			}
			if _, ok := b.unvaried.Load(envSig{envKey: k, mode: mode}); !ok {
				t.Errorf("%+v %v: no environment without variables after Warm", k, mode)
			}
		}
	}
}

// TestUnvariedEnvironmentsAreShared: Compilers share the environments in
// which no variable is in scope, and a policy's variables still compile in
// environments of their own.
func TestUnvariedEnvironmentsAreShared(t *testing.T) {
	var envs []*cel.Env
	for range 2 {
		c, err := New()
		if err != nil {
			t.Fatal(err)
		}
		p := policySpec{ac: []string{`Object{}`}, variables: [][2]string{{"a", "1"}}}.build()
		compiled, err := c.Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		if errs := compiled.Errors(); len(errs) > 0 {
			t.Fatal(errs)
		}
		envs = append(envs, compiled.Variables[0].env, compiled.Mutations[0].env)
	}
	if envs[0] != envs[2] {
		t.Error("two Compilers built the environment without variables twice")
	}
	if envs[1] == envs[3] || envs[0] == envs[1] {
		t.Error("the mutation, which sees a variable, compiled in the environment without variables")
	}
}
