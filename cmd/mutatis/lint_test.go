package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// checkCLI requires exit code wantCode and that the output (stdout and
// stderr) holds every string of want and none of reject.
func checkCLI(t *testing.T, code int, out, errOut string, wantCode int, want, reject []string) {
	t.Helper()
	all := out + errOut
	if code != wantCode {
		t.Fatalf("exit %d, want %d\n%s", code, wantCode, all)
	}
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("output lacks %q:\n%s", w, all)
		}
	}
	for _, r := range reject {
		if strings.Contains(all, r) {
			t.Errorf("output has %q:\n%s", r, all)
		}
	}
}

func TestLint(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		want     []string
	}{
		{
			name:     "a broken policy is reported with file, field path and caret",
			args:     []string{"lint", "testdata/lint/bad.yaml"},
			wantCode: exitProblem,
			want: []string{
				`testdata/lint/bad.yaml#0: MutatingAdmissionPolicy "broken": spec.reinvocationPolicy: Required value`,
				`Unsupported value: "DELETE"`,
				`testdata/lint/bad.yaml#0: MutatingAdmissionPolicy "broken": spec.mutations[0].applyConfiguration.expression: Invalid value: "Object{metadata: Object.metadata{labels: {\"a\": }}}": compilation failed: ERROR: <input>:1:`,
				" | Object{metadata: Object.metadata{labels: {\"a\": }}}\n | ",
				`spec.mutations[1].jsonPatch.expression: Invalid value: "\"not a patch\"": must evaluate to list(JSONPatch) but got string`,
			},
		},
		{
			name:     "valid examples pass and show their cost",
			args:     []string{"lint", "../../examples"},
			wantCode: exitOK,
			want:     []string{"inject-logging-sidecar", "0 problems"},
		},
		{
			name:     "--policies is taken as PATH arguments are",
			args:     []string{"lint", "--policies", "../../examples"},
			wantCode: exitOK,
			want:     []string{"inject-logging-sidecar", "0 problems"},
		},
		{
			name:     "no PATH and no --policies is bad input",
			args:     []string{"lint"},
			wantCode: exitUsage,
			want:     []string{"no policies: give PATH arguments or --policies"},
		},
		{
			name:     "cost takes --policies and --resources split on commas",
			args:     []string{"cost", "--policies", "testdata/lint/crd.yaml", "--resources", "testdata/lint/crd.yaml,../../examples/namespace-labels"},
			wantCode: exitOK,
			want:     []string{"widget-tags"},
		},
		{
			name:     "a CRD with maxItems bounds the estimate",
			args:     []string{"lint", "testdata/lint/crd.yaml"},
			wantCode: exitOK,
			want:     []string{"widget-tags", "yes", "0 problems"},
		},
		{
			name:     "stdin is read with -",
			args:     []string{"lint", "-"},
			stdin:    "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicyBinding\nmetadata:\n  name: b\nspec:\n  policyName: p\n",
			wantCode: exitOK,
			want:     []string{"0 policies, 1 bindings, 0 problems"},
		},
		{
			name:     "a bounded estimate over the per-call limit is a warning, not a problem",
			args:     []string{"lint", "testdata/lint/expensive.yaml"},
			wantCode: exitOK,
			want: []string{
				"warning: testdata/lint/expensive.yaml#0: MutatingAdmissionPolicy \"expensive\": spec.matchConditions[0].expression: estimated cost 16555551 exceeds the per-call limit 1000000 (16.6x): evaluations on inputs of the estimated sizes fail with \"operation cancelled: actual cost limit exceeded\"\n",
				"expensive  spec.matchConditions[0].expression (nested)      41..16555551    1655.6% (over)     -\n",
				"\n1 policies, 0 bindings, 0 problems, 1 warnings\n",
			},
		},
		{
			name:     "the warning does not depend on the cost table",
			args:     []string{"lint", "--no-cost", "testdata/lint/expensive.yaml"},
			wantCode: exitOK,
			want:     []string{"spec.matchConditions[0].expression: estimated cost 16555551 exceeds the per-call limit 1000000", "0 problems, 1 warnings"},
		},
		{
			name:     "ValidatingAdmissionPolicies: kube-apiserver's create-time refusals are problems, the type checker's warnings are warnings",
			args:     []string{"lint", "--no-cost", "testdata/lint/vap.yaml"},
			wantCode: exitProblem,
			want: []string{
				`testdata/lint/vap.yaml#2: ValidatingAdmissionPolicy "refused": spec.validations[0].expression: Invalid value: "object.spec.containers.all(c,\n  c.image.startsWith(\"registry.example.com/\") &&)\n": compilation failed: ERROR: <input>:2:49: Syntax error: mismatched input ')'`,
				" |   c.image.startsWith(\"registry.example.com/\") &&)\n | ................................................^\n",
				`testdata/lint/vap.yaml#2: ValidatingAdmissionPolicy "refused": spec.auditAnnotations[0].valueExpression: Invalid value: "size(object.spec.containers)": must evaluate to one of [string null_type] but got int`,
				"warning: testdata/lint/vap.yaml#0 (line 14:17): ValidatingAdmissionPolicy \"replica-limit\": spec.validations[0].expression: kube-controller-manager's type checking warns (status.typeChecking.expressionWarnings): apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicaz'\n | object.spec.replicaz <= 5\n | ...........^\n",
				"warning: testdata/lint/vap.yaml#0 (line 16:24): ValidatingAdmissionPolicy \"replica-limit\": spec.validations[1].messageExpression: kube-controller-manager's type checking warns (status.typeChecking.expressionWarnings): apps/v1, Kind=Deployment: ERROR: <input>:1:23: found no matching overload for '_+_' applied to '(string, int)'",
				// string() of a dyn value: the estimate MAPs get too.
				"warning: testdata/lint/vap.yaml#0: ValidatingAdmissionPolicy \"replica-limit\": spec.auditAnnotations[0].valueExpression: estimated cost 1844674407370955265 exceeds the per-call limit 1000000",
				"\n1 policies, 1 bindings, 2 problems, 4 warnings\n",
			},
		},
		{
			name:     "ValidatingAdmissionPolicies in the cost table",
			args:     []string{"lint", "testdata/cost/vap.yaml"},
			wantCode: exitOK,
			want: []string{
				"pod-images     spec.matchConditions[0].expression (not-system)  4..4                    0.00%                 -\n",
				"expensive      spec.validations[0].expression                   41..16555551            1655.6% (over)        -\n",
				"warning: testdata/cost/vap.yaml#4: ValidatingAdmissionPolicy \"expensive\": spec.validations[0].expression: estimated cost 16555551 exceeds the per-call limit 1000000 (16.6x)",
			},
		},
		{
			name:     "ValidatingAdmissionPolicies in JSON: the type checker's warnings with their positions",
			args:     []string{"lint", "-o", "json", "testdata/lint/vap.yaml"},
			wantCode: exitProblem,
			want:     []string{`"check": "type-checking",`, `"line": 14,`, `"column": 17,`, `"celLine": 1,`, `"celColumn": 12`, `"policies": 1,`},
		},
		{
			name:     "a missing file is bad input",
			args:     []string{"lint", "testdata/lint/nope.yaml"},
			wantCode: exitProblem,
			want:     []string{"nope.yaml"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.stdin, tc.args...)
			checkCLI(t, code, out, errOut, tc.wantCode, tc.want, nil)
		})
	}
}

// TestLintUnboundedIsNoWarning: an unbounded estimate (an input without a
// size limit) is shown in the table only; lint still exits 0.
func TestLintUnboundedIsNoWarning(t *testing.T) {
	code, out, errOut := runCLI(t, "", "lint", "testdata/lint/unbounded.yaml")
	checkCLI(t, code, out, errOut, exitOK,
		[]string{"122..unbounded  unbounded", "1 policies, 0 bindings, 0 problems, 0 warnings"},
		[]string{"warning:", "exceeds the per-call limit"})
}

func TestApply(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    []string
		wantStderr []string
	}{
		{name: "the example policies mutate a pod (patch output)",
			args:     []string{"apply", "-f", "testdata/apply/pod.yaml", "--policies", "../../examples", "-o", "patch"},
			wantCode: exitOK,
			wantOut:  []string{`{"op":"replace","path":"/spec/containers/0/image","value":"mirror.example.com/library/nginx:1.27"}`, `"name":"log-shipper"`, `{"op":"add","path":"/spec/securityContext/seccompProfile","value":{"type":"RuntimeDefault"}}`}},
		{name: "params from --resources give default requests",
			args:     []string{"apply", "-f", "testdata/apply/deployment.yaml", "--policies", "../../examples/default-resources/policy.yaml", "--resources", "../../examples/default-resources/resources.yaml"},
			wantCode: exitOK,
			wantOut:  []string{"cpu: 250m", "memory: 256Mi"}},
		{name: "a denial prints kube-apiserver's message and exits 1",
			args:       []string{"apply", "-f", "testdata/apply/pod.yaml", "--policies", "testdata/apply/deny.yaml"},
			wantCode:   exitProblem,
			wantStderr: []string{`notice: namespace "shop" is not in --resources`, `policy 'needs-team' with binding 'needs-team' denied request: expression 'Object{metadata: Object.metadata{labels: {"team": object.metadata.labels.team}}}' resulted in error: no such key: team`}},
		{name: "--explain prints the trace",
			args:       []string{"apply", "-f", "testdata/apply/pod.yaml", "--policies", "../../examples", "--explain", "-o", "json"},
			wantCode:   exitOK,
			wantStderr: []string{`explain: pass 2: policy "inject-logging-sidecar" binding "inject-logging-sidecar": skipped: matchCondition not-already-injected is false`}},
		{name: "RBAC objects in --resources back the CEL authorizer (allowed)",
			args:     []string{"apply", "-f", "testdata/apply/configmap.yaml", "--policies", "testdata/apply/rbac/policy.yaml", "--resources", "testdata/apply/rbac/resources.yaml", "--user", "carol", "--groups", "ops"},
			wantCode: exitOK,
			wantOut:  []string{`can-delete-nodes: "true"`}},
		{name: "RBAC objects in --resources back the CEL authorizer (not allowed)",
			args:     []string{"apply", "-f", "testdata/apply/configmap.yaml", "--policies", "testdata/apply/rbac/policy.yaml", "--resources", "testdata/apply/rbac/resources.yaml", "--user", "carol", "--groups", "dev"},
			wantCode: exitOK,
			wantOut:  []string{`can-delete-nodes: "false"`}},
		{name: "the injected sidecar comes out with the fields kube-apiserver defaults",
			args:     []string{"apply", "-f", "../../examples/sidecar-injection/testdata/labelled-pod.yaml", "--policies", "../../examples/sidecar-injection/policy.yaml"},
			wantCode: exitOK,
			wantOut: []string{"  - env:\n    - name: LOG_SOURCE\n      value: /var/log/app\n    image: registry.example.com/log-shipper:1.4.2\n    imagePullPolicy: IfNotPresent\n    name: log-shipper\n    resources: {}\n    terminationMessagePath: /dev/termination-log\n    terminationMessagePolicy: File\n",
				"dnsPolicy: ClusterFirst", "enableServiceLinks: true"}},
		{name: "--no-defaults evaluates the object exactly as written",
			args:     []string{"apply", "-f", "../../examples/sidecar-injection/testdata/labelled-pod.yaml", "--policies", "../../examples/sidecar-injection/policy.yaml", "--no-defaults", "-o", "json"},
			wantCode: exitOK,
			wantOut:  []string{`"image": "registry.example.com/log-shipper:1.4.2",` + "\n" + `        "name": "log-shipper",` + "\n" + `        "resources": {},` + "\n" + `        "volumeMounts"`}},
		{name: "an admitted object kube-apiserver would refuse to store exits 1 with its 422 message",
			args:       []string{"apply", "-f", "testdata/apply/pod.yaml", "--policies", "testdata/apply/long-label.yaml"},
			wantCode:   exitProblem,
			wantStderr: []string{`Pod "web" is invalid: metadata.labels: Invalid value: "` + strings.Repeat("a", 70) + `": must be no more than 63 bytes`}},
		{name: "--explain shows the validation stage",
			args:       []string{"apply", "-f", "testdata/apply/pod.yaml", "--policies", "testdata/apply/long-label.yaml", "--explain"},
			wantCode:   exitProblem,
			wantStderr: []string{`explain: validation: refused (422 Invalid): Pod "web" is invalid: metadata.labels: Invalid value:`}},
		{name: "--no-validate admits the invalid object",
			args:     []string{"apply", "-f", "testdata/apply/pod.yaml", "--policies", "testdata/apply/long-label.yaml", "--no-validate"},
			wantCode: exitOK,
			wantOut:  []string{"note: " + strings.Repeat("a", 70)}},
		{name: "a body kube-apiserver refuses to decode exits 1 with its 400 message",
			args:       []string{"apply", "-f", "testdata/apply/pod-priority-overflow.yaml", "--policies", "../../examples"},
			wantCode:   exitProblem,
			wantStderr: []string{`Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number 3000000000 into Go struct field PodSpec.spec.priority of type int32`}},
		{name: "unknown fields are warnings, as under fieldValidation Warn",
			args:       []string{"apply", "-f", "testdata/apply/pod-unknown-field.yaml", "--policies", "../../examples"},
			wantCode:   exitOK,
			wantStderr: []string{`Warning: unknown field "spec.containers[0].imagePullPolicyy"`}},
		{name: "an unknown output format is bad input",
			args:     []string{"apply", "-f", "testdata/apply/pod.yaml", "--policies", "../../examples", "-o", "xml"},
			wantCode: exitUsage},
		{name: "a missing object file is bad input",
			args:     []string{"apply", "-f", "testdata/apply/none.yaml", "--policies", "../../examples"},
			wantCode: exitUsage},
		{name: "PATCH is not an operation",
			args:     []string{"apply", "-f", "testdata/apply/pod.yaml", "--policies", "../../examples", "--operation", "PATCH"},
			wantCode: exitUsage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.wantStderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}
