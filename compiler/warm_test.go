package compiler

import (
	"sync"
	"testing"

	"k8s.io/apiserver/pkg/cel/environment"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWarm: Warm leaves the base environments built and a plan check for
// each of them in both modes, and it may run beside compilations (under
// -race).
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
		}
	}
}
