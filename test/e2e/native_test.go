//go:build linux

package e2e

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNativeMAP checks the harness end to end: kube-apiserver v1.37.1 with
// the MutatingAdmissionPolicy plugin enabled mutates a ConfigMap through a
// policy and binding created with the typed client.
func TestNativeMAP(t *testing.T) {
	c := StartCluster(t, NativeMAP)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns = "e2e-native"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fail, never := admissionregistrationv1.Fail, admissionregistrationv1.NeverReinvocationPolicy
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "add-team-label"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
					},
				}},
			},
			FailurePolicy:      &fail,
			ReinvocationPolicy: never,
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
					Expression: `Object{metadata: Object.metadata{labels: {"team": "platform"}}}`,
				},
			}},
		},
	}
	if _, err := c.Client.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "add-team-label"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: "add-team-label",
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			},
		},
	}
	if _, err := c.Client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The plugin picks policies up asynchronously: wait until a dry run
	// shows the label, then create for real.
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}}
	err := poll(ctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		got, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return got.Labels["team"] == "platform", nil
	})
	if err != nil {
		t.Fatalf("the policy never took effect: %v", err)
	}

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns, Labels: map[string]string{"app": "web"}},
		Data:       map[string]string{"k": "v"},
	}
	if plugins := mutatingPlugins(t, c); !slices.Contains(plugins, "MutatingAdmissionPolicy") {
		t.Fatalf("mutating admission plugins = %v, want MutatingAdmissionPolicy among them", plugins)
	}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stored, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Labels["team"] != "platform" || stored.Labels["app"] != "web" || stored.Data["k"] != "v" {
		t.Fatalf("stored ConfigMap = labels %v data %v, want the team=platform label added and the rest kept", stored.Labels, stored.Data)
	}

	// Outside the binding's namespace nothing changes.
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e-other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other, err := c.Client.CoreV1().ConfigMaps("e2e-other").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := other.Labels["team"]; ok {
		t.Fatalf("ConfigMap outside the bound namespace was mutated: %v", other.Labels)
	}
}

// mutatingPlugins returns the mutating admission plugins kube-apiserver
// logged at startup ("Loaded N mutating admission controller(s)
// successfully in the following order: A,B,C.").
func mutatingPlugins(t *testing.T, c *Cluster) []string {
	t.Helper()
	data, err := os.ReadFile(c.APIServerLog)
	if err != nil {
		t.Fatal(err)
	}
	const marker = "mutating admission controller(s) successfully in the following order: "
	for _, line := range strings.Split(string(data), "\n") {
		if _, list, ok := strings.Cut(line, marker); ok {
			return strings.Split(strings.TrimSuffix(strings.TrimSpace(list), "."), ",")
		}
	}
	t.Fatalf("kube-apiserver did not log its mutating admission plugins in %s", c.APIServerLog)
	return nil
}

// TestMAPPluginDisabled checks the second mode: the API serves
// MutatingAdmissionPolicies (what mutatis polyfills) but the admission
// plugin is not loaded, as kube-apiserver reports at startup. (An absence
// of effect cannot be observed without a timed wait; the loaded plugin
// list is deterministic.)
func TestMAPPluginDisabled(t *testing.T) {
	c := StartCluster(t, NoMAP)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	plugins := mutatingPlugins(t, c)
	if slices.Contains(plugins, "MutatingAdmissionPolicy") || !slices.Contains(plugins, "MutatingAdmissionWebhook") {
		t.Fatalf("mutating admission plugins = %v, want MutatingAdmissionWebhook without MutatingAdmissionPolicy", plugins)
	}
	if _, err := c.Client.AdmissionregistrationV1().MutatingAdmissionPolicies().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the MutatingAdmissionPolicy API is not served: %v", err)
	}
}
