package rbac

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestAuthorize(t *testing.T) {
	clusterRoles := []rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Labels: map[string]string{"aggregate-to-view": "true"}},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "view"}, AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"aggregate-to-view": "true"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "scaler"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"update"}, APIGroups: []string{"apps"}, Resources: []string{"*/scale"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "one-configmap"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"settings"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "healthz"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/metrics/*"}}}},
	}
	roles := []rbacv1.Role{{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: "shop"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}}}}}
	crbs := []rbacv1.ClusterRoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "viewers"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: "Group", Name: "viewers"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "health"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "healthz"}, Subjects: []rbacv1.Subject{{Kind: "Group", Name: "system:authenticated"}}},
	}
	rbs := []rbacv1.RoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "deployers", Namespace: "shop"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "deployer"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "scalers", Namespace: "shop"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "scaler"}, Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "autoscaler"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "shop"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "one-configmap"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}},
	}
	a, err := New(clusterRoles, roles, crbs, rbs)
	if err != nil {
		t.Fatal(err)
	}
	res := func(u user.Info, verb, group, resource, sub, ns, name string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name, ResourceRequest: true}
	}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	viewer := &user.DefaultInfo{Name: "vic", Groups: []string{"viewers"}}
	sa := &user.DefaultInfo{Name: "system:serviceaccount:shop:autoscaler"}
	bob := &user.DefaultInfo{Name: "bob"}
	admin := &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}
	cases := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"system:masters may do anything", res(admin, "delete", "", "nodes", "", "", "n1"), true},
		{"a role binding allows its verb in its namespace", res(alice, "create", "apps", "deployments", "", "shop", ""), true},
		{"but not in another namespace", res(alice, "create", "apps", "deployments", "", "ops", ""), false},
		{"nor another verb", res(alice, "delete", "apps", "deployments", "", "shop", ""), false},
		{"an aggregated cluster role carries the aggregated rules", res(viewer, "list", "", "pods", "", "ops", ""), true},
		{"a subresource named in the rule", res(viewer, "get", "", "pods", "log", "ops", "p"), true},
		{"a subresource not named in the rule", res(viewer, "get", "", "pods", "exec", "ops", "p"), false},
		{"*/scale matches any resource's scale", res(sa, "update", "apps", "deployments", "scale", "shop", "web"), true},
		{"*/scale does not match the resource itself", res(sa, "update", "apps", "deployments", "", "shop", "web"), false},
		{"resourceNames restrict names", res(bob, "update", "", "configmaps", "", "shop", "settings"), true},
		{"other names are refused", res(bob, "update", "", "configmaps", "", "shop", "other"), false},
		{"non-resource URL exact", authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/healthz"}, true},
		{"non-resource URL prefix", authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/metrics/cadvisor"}, true},
		{"non-resource URL not granted", authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/debug"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, _, err := a.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if (d == authorizer.DecisionAllow) != tc.allow {
				t.Fatalf("decision %v, want allow=%v", d, tc.allow)
			}
		})
	}
}
