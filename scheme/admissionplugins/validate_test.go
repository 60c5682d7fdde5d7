package admissionplugins

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"

	"github.com/mutatis-dev/mutatis/scheme"
)

// validateCase is one request through the admission plugins before MAP
// and then the validating plugins before ValidatingAdmissionPolicy.
type validateCase struct {
	pluginCase
	user user.Info
	// denied is the refusal's message; by the plugin that refused.
	denied, by string
	// code is the refusal's HTTP code; 0: 403.
	code     int32
	warnings []string
	// annotations are audit annotations that must be among the result's.
	annotations map[string]string
	// admitted is the object after the plugins before MAP.
	admitted map[string]any
}

const (
	restrictedNS         = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"locked","labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`
	pinnedNS             = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"pinned","labels":{"pod-security.kubernetes.io/enforce":"restricted","pod-security.kubernetes.io/enforce-version":"v1.21"}}}`
	baselineNS           = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"base","labels":{"pod-security.kubernetes.io/enforce":"baseline","pod-security.kubernetes.io/warn":"restricted","pod-security.kubernetes.io/audit":"restricted"}}}`
	maxLimitRange        = `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"max","namespace":"limited"},"spec":{"limits":[{"type":"Container","max":{"cpu":"1"},"maxLimitRequestRatio":{"memory":"2"}}]}}`
	plainContainer       = `"containers":[{"name":"c","image":"nginx"}]`
	restrictedSpec       = `"securityContext":{"runAsNonRoot":true,"seccompProfile":{"type":"RuntimeDefault"}},"containers":[{"name":"c","image":"nginx","securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}]`
	restrictedViolations = `allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
)

func deployment(ns, spec string) string {
	return `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"` + ns + `"},"spec":{"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{` + spec + `}}}}`
}

func validateCases() []validateCase {
	podIn := func(ns, spec string) pluginCase {
		return pluginCase{resource: "pods", object: pod(ns, spec)}
	}
	with := func(c pluginCase, objects ...string) pluginCase {
		c.objects = objects
		return c
	}
	configured := func(c pluginCase, file string) pluginCase {
		c.flags.ConfigFile = "testdata/" + file
		return c
	}
	bot := &user.DefaultInfo{Name: "ci-bot", Groups: []string{user.AllAuthenticated}}
	named := func(name string, c validateCase) validateCase {
		c.name = name
		return c
	}
	return []validateCase{
		named("restricted refuses a Pod that sets nothing, naming every check it fails", validateCase{
			pluginCase: with(podIn("locked", plainContainer), restrictedNS), by: "PodSecurity",
			denied:      `pods "p" is forbidden: violates PodSecurity "restricted:latest": ` + restrictedViolations,
			annotations: map[string]string{"pod-security.kubernetes.io/enforce-policy": "restricted:latest"},
		}),
		named("restricted admits a Pod that sets what it asks", validateCase{
			pluginCase:  with(podIn("locked", restrictedSpec), restrictedNS),
			annotations: map[string]string{"pod-security.kubernetes.io/enforce-policy": "restricted:latest"},
		}),
		named("restricted only warns about a Deployment's template", validateCase{
			pluginCase: with(pluginCase{resource: "deployments", object: deployment("locked", plainContainer)}, restrictedNS),
			warnings:   []string{`would violate PodSecurity "restricted:latest": ` + restrictedViolations},
		}),
		named("an enforce-version pins the checks of that release: restricted v1.21 asks nothing of capabilities", validateCase{
			pluginCase: with(podIn("pinned", plainContainer), pinnedNS), by: "PodSecurity",
			denied: `pods "p" is forbidden: violates PodSecurity "restricted:v1.21": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`,
		}),
		named("baseline refuses a privileged Pod", validateCase{
			pluginCase: with(podIn("base", `"containers":[{"name":"c","image":"nginx","securityContext":{"privileged":true}}]`), baselineNS), by: "PodSecurity",
			denied: `pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`,
		}),
		named("baseline admits a plain Pod, warning and auditing under its restricted labels", validateCase{
			pluginCase: with(podIn("base", plainContainer), baselineNS),
			warnings:   []string{`would violate PodSecurity "restricted:latest": ` + restrictedViolations},
			annotations: map[string]string{
				"pod-security.kubernetes.io/enforce-policy":   "baseline:latest",
				"pod-security.kubernetes.io/audit-violations": `would violate PodSecurity "restricted:latest": ` + restrictedViolations,
			},
		}),
		named("baseline warns about a Deployment with hostNetwork", validateCase{
			pluginCase: with(pluginCase{resource: "deployments", object: deployment("base", `"hostNetwork":true,`+restrictedSpec)}, baselineNS),
			warnings:   []string{`would violate PodSecurity "restricted:latest": host namespaces (hostNetwork=true)`},
		}),
		named("the configuration's defaults hold in a namespace without labels", validateCase{
			pluginCase: configured(podIn("ns", plainContainer), "podsecurity.yaml"), by: "PodSecurity",
			denied: `pods "p" is forbidden: violates PodSecurity "restricted:latest": ` + restrictedViolations,
		}),
		named("a default by path, relative to the configuration file", validateCase{
			pluginCase: configured(podIn("ns", `"hostPID":true,`+plainContainer), "podsecurity-path.yaml"), by: "PodSecurity",
			denied: `pods "p" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostPID=true)`,
		}),
		named("an exempt user", validateCase{
			pluginCase: configured(podIn("ns", plainContainer), "podsecurity.yaml"), user: bot,
			annotations: map[string]string{"pod-security.kubernetes.io/exempt": "user"},
		}),
		named("an exempt namespace", validateCase{
			pluginCase:  configured(podIn("kube-tools", plainContainer), "podsecurity.yaml"),
			annotations: map[string]string{"pod-security.kubernetes.io/exempt": "namespace"},
		}),
		named("an exempt runtime class", validateCase{
			pluginCase:  configured(with(podIn("ns", `"runtimeClassName":"kata",`+plainContainer), kataRC), "podsecurity.yaml"),
			annotations: map[string]string{"pod-security.kubernetes.io/exempt": "runtimeClass"},
		}),
		named("PodSecurity refuses a Namespace labelled with an unknown level", validateCase{
			pluginCase: pluginCase{resource: "namespaces", object: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"strict","labels":{"pod-security.kubernetes.io/enforce":"strict"}}}`}, by: "PodSecurity",
			code: 422, denied: `Namespace "strict" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`,
		}),
		named("LimitRanger refuses a container over the maximum", validateCase{
			pluginCase: with(podIn("limited", `"containers":[{"name":"c","image":"nginx","resources":{"requests":{"memory":"100Mi"},"limits":{"cpu":"2","memory":"100Mi"}}}]`), maxLimitRange), by: "LimitRanger",
			denied: `pods "p" is forbidden: maximum cpu usage per Container is 1, but limit is 2`,
		}),
		named("LimitRanger refuses a limit too far above its request", validateCase{
			pluginCase: with(podIn("limited", `"containers":[{"name":"c","image":"nginx","resources":{"requests":{"memory":"100Mi"},"limits":{"cpu":"1","memory":"300Mi"}}}]`), maxLimitRange), by: "LimitRanger",
			denied: `pods "p" is forbidden: memory max limit to request ratio per Container is 2, but provided ratio is 3.000000`,
		}),
		named("Priority refuses a second default PriorityClass", validateCase{
			pluginCase: pluginCase{resource: "priorityclasses", object: `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"second"},"value":10,"globalDefault":true}`,
				objects: []string{`{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"first"},"value":5,"globalDefault":true}`}}, by: "Priority",
			denied: `priorityclasses.scheduling.k8s.io "second" is forbidden: PriorityClass first is already marked as default. Only one default can exist`,
		}),
		named("DenyServiceExternalIPs refuses a Service's external IPs when enabled", validateCase{
			pluginCase: pluginCase{flags: Flags{Enable: []string{"DenyServiceExternalIPs"}}, resource: "services", object: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"ns"},"spec":{"ports":[{"port":80}],"externalIPs":["1.2.3.4"]}}`}, by: "DenyServiceExternalIPs",
			denied: `services "s" is forbidden: Use of external IPs is denied by admission control`,
		}),
	}
}

// TestValidatePlugins: kube-apiserver's validating plugins before
// ValidatingAdmissionPolicy on objects the plugins before MAP admitted;
// TestValidatePluginsDifferential holds the same cases to kube-apiserver's
// own chain.
func TestValidatePlugins(t *testing.T) {
	for _, c := range validateCases() {
		c := &c
		t.Run(c.name, func(t *testing.T) {
			p, req, _, u := validateRequest(t, c)
			v, err := p.Validate(context.Background(), BeforePolicies, req, c.admitted, nil, u, false)
			checkValidation(t, c, v, err)
		})
	}
}

// validateRequest is c's chain, request, decoded object and user, with
// c.admitted the object the plugins before MAP admitted.
func validateRequest(t *testing.T, c *validateCase) (*Chain, scheme.Request, map[string]any, user.Info) {
	t.Helper()
	p := pluginChain(t, c.pluginCase)
	req, decoded := pluginRequest(t, p.stores.scheme, c.pluginCase)
	u := c.user
	if u == nil {
		u = pluginUser
	}
	admitted, err := p.Admit(context.Background(), req, runtime.DeepCopyJSON(decoded), nil, u, false)
	if err != nil {
		t.Fatal(err)
	}
	c.admitted = admitted
	return p, req, decoded, u
}

func checkValidation(t *testing.T, c *validateCase, v Validation, err error) {
	t.Helper()
	if c.denied != "" {
		var status *apierrors.StatusError
		code := c.code
		if code == 0 {
			code = 403
		}
		if !errors.As(err, &status) || status.ErrStatus.Code != code || status.ErrStatus.Message != c.denied {
			t.Errorf("got %v, want the %d\n%s", err, code, c.denied)
		}
		if len(v.Steps) == 0 || v.Steps[len(v.Steps)-1].Plugin != c.by || v.Steps[len(v.Steps)-1].Err != err {
			t.Errorf("steps %+v: want the last to be %s's refusal", v.Steps, c.by)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v.Warnings, c.warnings) {
		t.Errorf("warnings\n%q\nwant\n%q", v.Warnings, c.warnings)
	}
	for k, want := range c.annotations {
		if got, ok := v.AuditAnnotations[k]; !ok || got != want {
			t.Errorf("audit annotation %s = %q, want %q (all: %v)", k, got, want, v.AuditAnnotations)
		}
	}
}

// TestValidatePluginsDifferential runs every case of TestValidatePlugins
// through kube-apiserver's own admission chain (oracleChain: its options,
// its configuration file, its plugins over started informers): Admit,
// then Validate on the same attributes. Refusal, warnings and audit
// annotations must be mutatis'.
func TestValidatePluginsDifferential(t *testing.T) {
	for _, c := range validateCases() {
		c := &c
		t.Run(c.name, func(t *testing.T) {
			validateDifferential(t, c, BeforePolicies)
		})
	}
}

// validateDifferential runs c through the validating plugins of the
// phases up to at (their warnings and audit annotations together, until a
// refusal) and through kube-apiserver's own admission chain (oracleChain: Admit,
// then Validate on the same attributes, every validating plugin of the
// chain): refusal, warnings and audit annotations must be equal.
func validateDifferential(t *testing.T, c *validateCase, at Phase) {
	t.Helper()
	p, req, decoded, u := validateRequest(t, c)
	s := p.stores.scheme
	var got Validation
	var gotErr error
	for phase := BeforePolicies; phase <= at && gotErr == nil; phase++ {
		var v Validation
		v, gotErr = p.Validate(context.Background(), phase, req, c.admitted, nil, u, false)
		got.Warnings = append(got.Warnings, v.Warnings...)
		for k, a := range v.AuditAnnotations {
			if got.AuditAnnotations == nil {
				got.AuditAnnotations = map[string]string{}
			}
			got.AuditAnnotations[k] = a
		}
	}

	k, err := scheme.Kube()
	if err != nil {
		t.Fatal(err)
	}
	chain := oracleChain(t, s, c.pluginCase, req.Namespace)
	attrs := admission.NewAttributesRecord(internalOf(t, k, decoded, req.Kind), nil, req.Kind, req.Namespace, req.Name, req.Resource, req.Subresource, req.Operation, &metav1.CreateOptions{}, false, u)
	o := admission.NewObjectInterfacesFromScheme(k)
	if err := chain.Admit(context.Background(), attrs, o); err != nil {
		t.Fatal(err)
	}
	rec := &warnings{}
	ctx := audit.WithAuditContext(warning.WithWarningRecorder(context.Background(), rec))
	wantErr := chain.(admission.ValidationInterface).Validate(ctx, attrs, o)
	if wantErr != nil || gotErr != nil {
		var ws, gs *apierrors.StatusError
		if !errors.As(wantErr, &ws) || !errors.As(gotErr, &gs) || !reflect.DeepEqual(ws.ErrStatus, gs.ErrStatus) {
			t.Fatalf("mutatis: %v\nkube-apiserver: %v", gotErr, wantErr)
		}
	}
	if !reflect.DeepEqual(got.Warnings, rec.list) {
		t.Errorf("warnings\n%q\nkube-apiserver's\n%q", got.Warnings, rec.list)
	}
	if want := audit.AuditContextFrom(ctx).GetEventAnnotations(); !reflect.DeepEqual(got.AuditAnnotations, want) {
		t.Errorf("audit annotations\n%v\nkube-apiserver's\n%v", got.AuditAnnotations, want)
	}
}

// TestAdmissionConfigurationErrors: a configuration file kube-apiserver
// refuses at start is New's error, naming the file.
func TestAdmissionConfigurationErrors(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"testdata/missing.yaml", `failed to read plugin config: unable to read admission control configuration from "testdata/missing.yaml"`},
		{"testdata/podsecurity-bad.yaml", `testdata/podsecurity-bad.yaml: building kube-apiserver's admission plugin PodSecurity: `},
	} {
		_, err := New(NewStores(scheme.New()), Flags{ConfigFile: c.file})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s…", c.file, err, c.want)
		}
	}
}
