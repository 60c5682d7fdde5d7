package audit

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/manifest"
)

// runValidatingAudit audits testdata/cluster.yaml and testdata/podsecurity.yaml
// with the ValidatingAdmissionPolicies of testdata/validating.yaml alone.
func runValidatingAudit(t *testing.T) *Report {
	t.Helper()
	set, err := manifest.Load(context.Background(), []string{"testdata/validating.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	vp, vb := set.ValidatingAPIObjects()
	a, err := New(context.Background(), Options{
		Lister:             &Lister{Client: fakeCluster(t, "testdata/cluster.yaml", "testdata/podsecurity.yaml"), PageSize: 2},
		ValidatingPolicies: vp, ValidatingBindings: vb, Workers: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// The validating stage over live objects: a Deny binding refuses (the
// refusal kube-apiserver answers), PodSecurity enforce refuses a Pod and
// warns about a Deployment, and the validations of Warn and Audit bindings
// that fail are listed with their actions on objects that are otherwise
// admitted — what switching them to Deny would refuse.
func TestAuditValidatingPolicies(t *testing.T) {
	t.Run("from files", func(t *testing.T) { checkValidatingAudit(t, runValidatingAudit(t)) })
	// The same policies deployed in the cluster, read with
	// ClusterValidatingPolicies.
	t.Run("from the cluster", func(t *testing.T) {
		a, err := New(context.Background(), Options{
			Lister:                    &Lister{Client: fakeCluster(t, "testdata/cluster.yaml", "testdata/podsecurity.yaml", "testdata/validating.yaml"), PageSize: 2},
			ClusterValidatingPolicies: true, Workers: 2,
		})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := a.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		checkValidatingAudit(t, rep)
	})
}

func checkValidatingAudit(t *testing.T, rep *Report) {
	type got struct {
		Outcome     Outcome
		RefusedBy   string
		Message     string
		Validations []string
		Warnings    []string
		Count       int64
	}
	findings := map[string]got{}
	for _, f := range rep.Findings {
		g := got{Outcome: f.Outcome, RefusedBy: f.RefusedBy, Message: f.Message, Warnings: f.Warnings, Count: f.Count}
		for _, v := range f.Validations {
			g.Validations = append(g.Validations, v.String())
		}
		findings[f.Resource+" "+f.Object()] = g
	}
	const (
		podSecurity   = `violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
		limits        = "pods-need-limits/pods-need-limits-audit [Audit]: every container needs resource limits"
		registry      = "images-from-registry/images-from-registry [Warn]: images come from registry.example.com"
		registryWarns = "Validation failed for ValidatingAdmissionPolicy 'images-from-registry' with binding 'images-from-registry': images come from registry.example.com"
	)
	want := map[string]got{
		"deployments.apps team-a/web": {Outcome: OutcomeDeny, RefusedBy: "ValidatingAdmissionPolicy", Count: 1,
			Message:     `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'at-most-two-replicas' with binding 'at-most-two-replicas' denied request: replicas must be at most 2, not 3`,
			Validations: []string{"at-most-two-replicas/at-most-two-replicas [Deny]: replicas must be at most 2, not 3"}},
		"pods locked/root": {Outcome: OutcomeDeny, RefusedBy: "PodSecurity", Count: 1, Message: `pods "root" is forbidden: ` + podSecurity},
		"deployments.apps locked/api": {Outcome: OutcomeUnchanged, Count: 1,
			Warnings: []string{`would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "api" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "api" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "api" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "api" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`}},
		"pods team-a/ReplicaSet/web-7d9c5 (3 pods)": {Outcome: OutcomeUnchanged, Count: 3, Validations: []string{registry, limits}, Warnings: []string{registryWarns}},
		"pods team-a/lonely":                        {Outcome: OutcomeUnchanged, Count: 1, Validations: []string{registry, limits}, Warnings: []string{registryWarns}},
	}
	if !reflect.DeepEqual(findings, want) {
		t.Errorf("findings\n%+v\nwant\n%+v", findings, want)
	}
	stats := map[string][3]int64{}
	for _, s := range rep.ValidatingPolicies {
		stats[s.PolicyBinding.String()+" "+strings.Join(s.Actions, ",")] = [3]int64{s.Considered, s.Evaluated, s.Failed}
	}
	wantStats := map[string][3]int64{
		// Considered, evaluated, failed, in objects: the four Pods of team-a
		// (locked/root was refused by PodSecurity, which runs first).
		"at-most-two-replicas/at-most-two-replicas Deny": {2, 2, 1},
		"images-from-registry/images-from-registry Warn": {4, 4, 4},
		"pods-need-limits/pods-need-limits-audit Audit":  {4, 4, 4},
	}
	if !reflect.DeepEqual(stats, wantStats) {
		t.Errorf("stats %v, want %v", stats, wantStats)
	}
	s := rep.Summary
	if s.ValidatingPolicies != 3 || s.ValidatingBindings != 3 || s.WithValidationFailures != 5 || s.WithWarnings != 5 || s.Outcomes[OutcomeDeny] != 2 {
		t.Errorf("summary %+v", s)
	}
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	// The HTML report has the bindings' table, the failures, and a filter
	// for the objects admitted with them.
	for _, w := range []string{`<table id="validating">`, `value="unchanged" checked`, "<pre>validation failed: " + limits + "</pre>", "<pre>refused by: PodSecurity</pre>"} {
		if !strings.Contains(page.String(), w) {
			t.Errorf("the HTML report lacks %q", w)
		}
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"ValidatingAdmissionPolicies: 3, bindings: 3; objects a validation fails on: 5; objects warned about: 5\n",
		"VALIDATING POLICY     BINDING                 ACTIONS  CONSIDERED  EVALUATED  FAILED\n",
		"pods-need-limits      pods-need-limits-audit  Audit    4           4          4\n",
		"deny       pods              locked/root                                     PodSecurity: pods \"root\" is forbidden: violates PodSecurity",
	} {
		if !strings.Contains(table.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, table.String())
		}
	}
}

// PodSecurity: every Namespace audited as if labelled enforce=restricted,
// without a policy: the Pods and the kinds with a pod template of
// testdata/cluster.yaml, the Pods refused, the Deployment warned about.
func TestAuditPodSecurityLevel(t *testing.T) {
	level, err := ParsePodSecurity("restricted:v1.37")
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(context.Background(), Options{
		Lister:      &Lister{Client: fakeCluster(t, "testdata/cluster.yaml"), PageSize: 2},
		PodSecurity: level, Workers: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, r := range a.Targets() {
		targets = append(targets, resourceName(r))
	}
	if want := "pods,podtemplates,replicationcontrollers,daemonsets.apps,deployments.apps,replicasets.apps,statefulsets.apps,cronjobs.batch,jobs.batch"; strings.Join(targets, ",") != want {
		t.Errorf("targets %s, want %s", strings.Join(targets, ","), want)
	}
	rep, err := a.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range rep.Findings {
		key := f.Resource + " " + f.Object()
		if f.Owner != "" {
			key = f.Resource + " " + f.Name
		}
		got[key] = string(f.Outcome) + " " + f.RefusedBy + " " + f.Message + strings.Join(f.Warnings, "; ")
	}
	violations := func(c string) string {
		return `"restricted:v1.37": allowPrivilegeEscalation != false (container "` + c + `" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "` + c + `" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "` + c + `" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "` + c + `" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
	}
	want := map[string]string{
		"deployments.apps team-a/web": "unchanged  would violate PodSecurity " + violations("web"),
		"pods team-a/lonely":          `deny PodSecurity pods "lonely" is forbidden: violates PodSecurity ` + violations("app"),
	}
	// The refusals name their Pod: the Pods of web-7d9c5 are one finding
	// each.
	for _, pod := range []string{"web-7d9c5-pod1", "web-7d9c5-pod2", "web-7d9c5-pod3"} {
		want["pods "+pod] = `deny PodSecurity pods "` + pod + `" is forbidden: violates PodSecurity ` + violations("web")
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s:\n got %q\nwant %q", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("findings %v", got)
	}
	if _, err := ParsePodSecurity("strict"); err == nil || err.Error() != `--pod-security must be privileged, baseline or restricted (LEVEL[:VERSION]), not "strict"` {
		t.Errorf("ParsePodSecurity(strict): %v", err)
	}
}

// --object explains the validating stage: the plugin that refused the
// object, and for every ValidatingAdmissionPolicy binding whether it
// evaluated the object, and what failed.
func TestExplainObjectValidating(t *testing.T) {
	set, err := manifest.Load(context.Background(), []string{"testdata/validating.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	vp, vb := set.ValidatingAPIObjects()
	a, err := New(context.Background(), Options{
		Lister:             &Lister{Client: fakeCluster(t, "testdata/cluster.yaml", "testdata/podsecurity.yaml"), PageSize: 2},
		ValidatingPolicies: vp, ValidatingBindings: vb,
	})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, o := range []struct{ kind, ns, name string }{{"deployment", "team-a", "web"}, {"pod", "team-a", "lonely"}, {"pod", "locked", "root"}} {
		res, err := Kind{Name: o.kind}.Resolve(a.Cluster().Table)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := a.Get(context.Background(), res, o.ns, o.name)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Explain(context.Background(), res, obj).WriteText(&b); err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "explain-validating.txt", b.String())
}
