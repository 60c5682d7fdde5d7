package policytest_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mutatis-dev/mutatis/policytest"
)

func pod(name string, labels map[string]string, images ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	for i, img := range images {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i), Image: img})
	}
	return p
}

func TestHarnessPasses(t *testing.T) {
	h := policytest.New(t).Policies("../examples")
	h.Create(pod("web", map[string]string{"inject-logging": "true"}, "docker.io/library/nginx:1.27")).In("shop").Admit().
		ExpectApplied("inject-logging-sidecar", "rewrite-docker-hub-images/rewrite-docker-hub-images", "pod-security-defaults").
		ExpectContains(`spec:
  containers:
  - {name: log-shipper, image: registry.example.com/log-shipper:1.4.2}
  - {name: c0, image: mirror.example.com/library/nginx:1.27}
  securityContext: {runAsNonRoot: true}`).
		ExpectLabel("inject-logging", "true")

	h.Create(pod("debug", map[string]string{"security.example.com/exempt": "true"}, "busybox:1.36")).Admit().
		ExpectUnchanged().
		ExpectNotApplied("pod-security-defaults", "inject-logging-sidecar")

	var final corev1.Pod
	h.Create(pod("web", nil, "docker.io/library/redis:7")).Admit().
		ExpectPatch(`[{op: replace, path: /spec/containers/0/image, value: mirror.example.com/library/redis:7},
		  {op: add, path: /spec/securityContext, value: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}}]`).
		Into(&final)
	if final.Namespace != "default" || final.Spec.SecurityContext == nil {
		t.Errorf("Into gave %+v", final)
	}

	// Params and inline resources.
	policytest.New(t).Policies("../examples/default-resources/policy.yaml").
		With(`{apiVersion: v1, kind: ConfigMap, metadata: {name: container-defaults, namespace: team-a}, data: {cpu: "1"}}`).
		Create(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: team-a},
		  spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: app, image: x}]}}}}`).
		Admit().
		ExpectContains(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "app", "resources": map[string]any{"requests": map[string]any{"cpu": "1", "memory": "128Mi"}}}}}}}})

	policytest.New(t).Policies("../examples/default-resources/policy.yaml").
		With(`{apiVersion: v1, kind: ConfigMap, metadata: {name: container-defaults, namespace: team-b}}`).
		Create(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: team-b},
		  spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: app, image: x}]}}}}`).
		Admit().
		ExpectDenied("no such key: data").
		ExpectApplied("default-container-resources")
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Error(args ...any) { r.errors = append(r.errors, fmt.Sprint(args...)) }
func (r *recorder) Helper()           {}

func TestHarnessFailuresShowTheDiff(t *testing.T) {
	cases := []struct {
		name   string
		expect func(*policytest.Admission)
		want   []string
	}{
		{"a wrong label", func(a *policytest.Admission) { a.ExpectLabel("team", "a") },
			[]string{"objectContains: the final object does not contain the expected fields", "-    team: a", "explain: pass 1: policy \"pod-security-defaults\""}},
		{"unchanged", func(a *policytest.Admission) { a.ExpectUnchanged() },
			[]string{"unchanged: the policies changed the object", "+  securityContext:"}},
		{"denied", func(a *policytest.Admission) { a.ExpectDenied("nope") },
			[]string{"denied: the request was admitted"}},
		{"not applied", func(a *policytest.Admission) { a.ExpectNotApplied("pod-security-defaults") },
			[]string{"notApplied: pod-security-defaults applied"}},
		{"a wrong patch", func(a *policytest.Admission) { a.ExpectPatch(`[]`) },
			[]string{"patch: the final object is not the input with the expected patch applied", `actual patch: [{"op":"add","path":"/spec/securityContext/runAsNonRoot"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			a := policytest.New(r).Policies("../examples/security-context-defaults").Create(pod("web", nil, "nginx")).Admit()
			tc.expect(a)
			if len(r.errors) != 1 {
				t.Fatalf("%d errors, want 1: %q", len(r.errors), r.errors)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.errors[0], w) {
					t.Errorf("failure lacks %q:\n%s", w, r.errors[0])
				}
			}
		})
	}
}
