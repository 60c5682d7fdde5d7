package policytest

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

func runText(t *testing.T, opts Options, paths ...string) (*Report, string) {
	t.Helper()
	rep, err := RunFiles(context.Background(), paths, opts)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteText(&b, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	return rep, b.String()
}

func TestRunnerAcceptance(t *testing.T) {
	cases := []struct {
		name                string
		path                string
		opts                Options
		passed, failed, bad int
		want                []string
	}{
		{name: "a broken copy of an example fails with a readable diff", path: "testdata/broken",
			passed: 1, failed: 1,
			want: []string{
				"--- FAIL: broken-sidecar/the sidecar is injected",
				"    objectContains: the final object does not contain the expected fields\n",
				"    --- expected\n    +++ actual\n",
				"    -  - image: registry.example.com/log-shipper:1.4.2\n    +  - image: registry.example.com/log-shipper:1.5.0\n",
				"    -    - mountPath: /var/log/app\n",
				"    +    - mountPath: /var/log\n",
				`    explain: pass 1: policy "inject-logging-sidecar" binding "inject-logging-sidecar": applied`,
				"FAIL broken-sidecar\ttestdata/broken/broken.mutatis-test.yaml\t1 of 2 cases failed\n",
				"FAIL: 1 of 2 cases failed in 1 suites",
			}},
		{name: "order-dependent policies pass without --shuffle", path: "testdata/order", passed: 2,
			want: []string{"PASS: 2 cases in 1 suites"}},
		{name: "--shuffle finds order-dependent policies and prints the seed", path: "testdata/order",
			opts:   Options{Shuffle: true, Seed: 42},
			passed: 1, failed: 1,
			want: []string{
				"--- FAIL: order/the last policy wins",
				"shuffle: the result depends on the order of the policies (--shuffle=42):\n    the final object differs\n    in the order tier-b, tier-a than in the order tier-a, tier-b\n",
				"    -    tier: b\n    +    tier: a\n",
				"shuffle seed: 42\n",
			}},
		{name: "a non-idempotent policy passes without --idempotence", path: "testdata/idempotence", passed: 1},
		{name: "--idempotence names the policy that changes its own output", path: "testdata/idempotence",
			opts:   Options{Idempotence: true},
			failed: 1,
			want: []string{
				`idempotence: policy "append-trace-env" binding "append-trace-env" changes the final object again when it is re-admitted`,
				"    --- final\n    +++ re-admitted\n",
				"    +    - name: TRACE\n    +      value: \"on\"\n",
			}},
		{name: "--idempotence names a policy whose reinvocationPolicy is Never with the requests that run it again", path: "testdata/idempotence",
			opts:   Options{Idempotence: true},
			failed: 1,
			want: []string{
				`with reinvocationPolicy Never kube-apiserver does not reinvoke it within the request, but every later request that carries this object (the same CREATE again, an apply of the stored object) changes it again`,
			}},
		{name: "a suite turns the idempotence check on, a case off", path: "testdata/idempotence-switch",
			passed: 1, failed: 1,
			want: []string{
				"--- FAIL: idempotence-switch/checked by the suite's default",
				`idempotence: policy "append-trace-env" binding "append-trace-env" changes the final object again`,
				"FAIL idempotence-switch\ttestdata/idempotence-switch/idempotence-switch.mutatis-test.yaml\t1 of 2 cases failed\n",
			}},
		{name: "a case's idempotence: false wins over --idempotence", path: "testdata/idempotence-switch",
			opts:   Options{Idempotence: true, Run: regexp.MustCompile("switched off")},
			passed: 1},
		{name: "skipIdempotence leaves a policy out of the check", path: "testdata/skip-idempotence",
			opts:   Options{Idempotence: true},
			passed: 1},
		{name: "bindings: auto binds every policy no binding names", path: "testdata/auto-bindings", passed: 1},
		{name: "a suite without policies tests those of --policies", path: "testdata/no-policies",
			opts:   Options{Policies: []string{"testdata/idempotence/policies.yaml"}},
			passed: 1},
		{name: "a suite without policies is bad input without --policies", path: "testdata/no-policies",
			bad:  1,
			want: []string{"testdata/no-policies/no-policies.mutatis-test.yaml: policies: Required value: at least one file or directory of policies (or mutatis test --policies)"}},
		{name: "--run selects cases by suite/case", path: "../examples",
			opts:   Options{Run: regexp.MustCompile(`^sidecar-injection/a pod `)},
			passed: 3,
			want:   []string{"ok   sidecar-injection\t../examples/sidecar-injection/sidecar-injection.mutatis-test.yaml\t3 cases\n", "PASS: 3 cases in 1 suites"}},
		{name: "an invalid suite is bad input naming file and field", path: "testdata/invalid", bad: 1,
			want: []string{"BAD  testdata/invalid/invalid.mutatis-test.yaml\n", `testdata/invalid/invalid.mutatis-test.yaml: cases[1].operation: Unsupported value: "PATCH"`}},
		{name: "the admitted object is validated as kube-apiserver's registry would", path: "testdata/stored",
			passed: 3, failed: 2,
			want: []string{
				"--- FAIL: stored/an unexpected refusal by validation fails",
				`    valid: kube-apiserver would refuse the admitted object: Pod "long" is invalid: metadata.labels: Invalid value: "` + strings.Repeat("a", 70) + `": must be no more than 63 bytes`,
				"--- FAIL: stored/an expected refusal that does not come fails",
				`    invalid: the admitted object is valid, want a refusal matching "is invalid"`,
			}},
		{name: "--no-validate skips the validation of admitted objects", path: "testdata/stored",
			opts: Options{NoValidate: true}, passed: 2, failed: 3,
			want: []string{`--- FAIL: stored/an expected refusal by validation passes`, `invalid: the admitted object is valid, want a refusal matching`}},
		{name: "ValidatingAdmissionPolicies run on what the registry would store: denied.by, warnings, validationFailures, auditAnnotations, applied", path: "testdata/validating",
			passed: 4, failed: 1,
			want: []string{
				"--- FAIL: validating/a wrong expectation of the refusing plugin fails",
				`    denied.by: the request was refused by ValidatingAdmissionPolicy, want PodSecurity: pods "web" is forbidden: ValidatingAdmissionPolicy 'memory-limits' with binding 'memory-limits-strict' denied request: container app has no memory limit`,
			}},
		{name: "a suite's admissionPlugins.configFile configures PodSecurity (defaults and exemptions)", path: "testdata/podsecurity-config", passed: 2},
		{name: "the examples pass with both checks", path: "../examples", opts: Options{Shuffle: true, Seed: 1, Idempotence: true},
			passed: 41, want: []string{"PASS: 41 cases in 7 suites"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, out := runText(t, tc.opts, tc.path)
			passed, failed, errored, bad := rep.Counts()
			if passed != tc.passed || failed+errored != tc.failed || bad != tc.bad {
				t.Errorf("passed %d, failed %d, bad suites %d; want %d, %d, %d", passed, failed+errored, bad, tc.passed, tc.failed, tc.bad)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if t.Failed() {
				t.Log(out)
			}
		})
	}
}

func TestSuiteLoadErrorsNameFileAndField(t *testing.T) {
	dir := t.TempDir()
	policies, _ := filepath.Abs("testdata/order/policies.yaml")
	invalid, _ := filepath.Abs("../cmd/mutatis/testdata/apply/invalid-variable.yaml")
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	head := "apiVersion: mutatis.dev/v1alpha1\nkind: PolicyTest\npolicies: [" + policies + "]\n"
	cases := []struct {
		name, suite string
		want        []string
	}{
		{"a missing object file", head + "cases:\n- name: a\n  object: nope.yaml\n",
			[]string{"s.mutatis-test.yaml: cases[0].object: Invalid value: \"nope.yaml\"", "no such file"}},
		{"a missing policy file", "apiVersion: mutatis.dev/v1alpha1\nkind: PolicyTest\npolicies: [nope.yaml]\ncases:\n- name: a\n  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
			[]string{"s.mutatis-test.yaml: policies[0]: Invalid value: \"nope.yaml\""}},
		{"an objectRef to nothing", head + "cases:\n- name: a\n  objectRef: {kind: ConfigMap, name: missing}\n",
			[]string{"cases[0].objectRef: Invalid value: \"ConfigMap missing\": no ConfigMap missing in the resources"}},
		{"a kind no API serves", head + "cases:\n- name: a\n  object: {apiVersion: example.com/v1, kind: Gadget, metadata: {name: a}}\n",
			[]string{"cases[0].object: kind example.com/v1, Kind=Gadget is not served"}},
		{"a policy the API server would refuse to create", "apiVersion: mutatis.dev/v1alpha1\nkind: PolicyTest\npolicies: [" + invalid + "]\ncases:\n- name: a\n  object: {apiVersion: v1, kind: Pod, metadata: {name: a}}\n",
			[]string{"s.mutatis-test.yaml: policies[0]: Invalid value:", `spec.variables[0].expression`, "undeclared reference to 'Object.spec.initContainers'"}},
		{"a policy among the resources", head + "resources: [" + policies + "]\ncases:\n- name: a\n  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
			[]string{"resources[0]: Invalid value:", "list them under policies"}},
		{"an admission plugin kube-apiserver does not know", head + "admissionPlugins: {disable: [ServiceAcount]}\ncases:\n- name: a\n  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
			[]string{"s.mutatis-test.yaml: admissionPlugins: disable-admission-plugins plugin \"ServiceAcount\" is unknown"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := write("s.mutatis-test.yaml", tc.suite)
			_, err := LoadSuite(context.Background(), file)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestSuiteLoadErrorsPrecedence: the policies' API validation runs beside
// the rest of the suite's loading, yet a suite is refused as if it ran
// first: its errors come in the policies' order, with the load errors of
// other policy files, webhooks and resources after them, and nothing the
// suite checks only for valid policies (the cluster's resources, admission
// plugins, cases) is reported beside them.
func TestSuiteLoadErrorsPrecedence(t *testing.T) {
	dir := t.TempDir()
	invalid, _ := filepath.Abs("../cmd/mutatis/testdata/apply/invalid-variable.yaml")
	policies, _ := filepath.Abs("testdata/order/policies.yaml")
	file := filepath.Join(dir, "s.mutatis-test.yaml")
	const validation = "policies[0]: Invalid value: \"" // the invalid policy's file
	for _, tc := range []struct {
		name, rest   string
		want, reject []string
	}{
		{"a missing policy file and a missing resources file after it", "policies: [" + invalid + ", nope.yaml]\nresources: [gone.yaml]\n",
			[]string{validation, "undeclared reference to 'Object.spec.initContainers'", "policies[1]: Invalid value: \"nope.yaml\"", "resources[0]: Invalid value: \"gone.yaml\""}, nil},
		{"a missing object", "policies: [" + invalid + "]\ncases:\n- name: a\n  object: nope.yaml\n",
			[]string{validation}, []string{"cases[0]"}},
		{"an unknown admission plugin", "policies: [" + invalid + "]\nadmissionPlugins: {disable: [ServiceAcount]}\n",
			[]string{validation}, []string{"admissionPlugins"}},
		{"an objectRef to nothing", "policies: [" + invalid + "]\ncases:\n- name: a\n  objectRef: {kind: ConfigMap, name: missing}\n",
			[]string{validation}, []string{"objectRef"}},
		{"a valid policy file before the invalid one", "policies: [" + policies + ", " + invalid + "]\ncases:\n- name: a\n  object: nope.yaml\n",
			[]string{"policies[1]: Invalid value: \"", "undeclared reference"}, []string{"policies[0]", "cases[0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			suite := "apiVersion: mutatis.dev/v1alpha1\nkind: PolicyTest\n" + tc.rest
			if !strings.Contains(suite, "cases:") {
				suite += "cases:\n- name: a\n  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"
			}
			if err := os.WriteFile(file, []byte(suite), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadSuite(context.Background(), file)
			if err == nil {
				t.Fatal("no error")
			}
			last := -1
			for _, w := range tc.want {
				at := strings.Index(err.Error(), w)
				if at < 0 {
					t.Errorf("error lacks %q:\n%v", w, err)
				} else if at < last {
					t.Errorf("%q is out of order:\n%v", w, err)
				} else {
					last = at
				}
			}
			for _, r := range tc.reject {
				if strings.Contains(err.Error(), r) {
					t.Errorf("error has %q:\n%v", r, err)
				}
			}
		})
	}
}

func TestObserveSeesEveryCase(t *testing.T) {
	var n atomic.Int64
	rep, err := RunFiles(context.Background(), []string{"../examples"}, Options{Observe: func(chain.Result) { n.Add(1) }, Shuffle: true, Idempotence: true})
	if err != nil {
		t.Fatal(err)
	}
	passed, failed, errored, _ := rep.Counts()
	if got, want := n.Load(), int64(passed+failed+errored); got != want {
		t.Errorf("Observe called %d times for %d cases", got, want)
	}
}

// TestLoadedSeesEverySuiteBeforeItsCases: Options.Loaded is handed each
// suite that loads, in the order of the files, before any of its cases has
// run; a suite that fails to load is not handed over.
func TestLoadedSeesEverySuiteBeforeItsCases(t *testing.T) {
	var mu sync.Mutex
	var loaded []string
	names := map[string]bool{} // the names of the suites loaded so far
	cases := 0
	opts := Options{
		Loaded: func(l *Loaded) {
			mu.Lock()
			defer mu.Unlock()
			loaded = append(loaded, l.File)
			names[l.Name] = true
		},
		Done: func(c *CaseResult) {
			mu.Lock()
			defer mu.Unlock()
			cases++
			if !names[c.Suite] {
				t.Errorf("case %s ran before its suite was handed to Loaded", c.FullName())
			}
		},
	}
	files := []string{"testdata/order/order.mutatis-test.yaml", "testdata/invalid", "testdata/ignored/ignored.mutatis-test.yml", "testdata/auto-bindings/auto-bindings.mutatis-test.yaml"}
	rep, err := RunFiles(context.Background(), files, opts)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range rep.Suites {
		if s.Err == nil {
			want = append(want, s.Loaded.File)
		}
	}
	if len(want) != 3 || !slices.Equal(loaded, want) {
		t.Errorf("Loaded saw %q, want the loaded suites %q in order", loaded, want)
	}
	if cases == 0 {
		t.Error("no case ran")
	}
}

func TestDiscoverSkipsTestdataUnlessNamed(t *testing.T) {
	all, err := Discover([]string{"."})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 0 {
		t.Errorf("found %v under ., want nothing (suites here are in testdata)", all)
	}
	found, err := Discover([]string{"testdata", "testdata/order/order.mutatis-test.yaml", "testdata/stored/stored.mutatis-test.yaml", "testdata/validating/validating.mutatis-test.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	// The peers' examples of ValidatingAdmissionPolicies are counted by
	// their own tests.
	var named []string
	for _, f := range found {
		if !strings.HasPrefix(f, "testdata/kat/validating/") && !strings.HasPrefix(f, "testdata/kaptest/vap-") && !strings.HasPrefix(f, "testdata/kyverno/vap-") {
			named = append(named, f)
		}
	}
	want := []string{"testdata/auto-bindings/auto-bindings.mutatis-test.yaml", "testdata/broken/broken.mutatis-test.yaml", "testdata/idempotence-switch/idempotence-switch.mutatis-test.yaml", "testdata/idempotence/idempotence.mutatis-test.yaml", "testdata/ignored/ignored.mutatis-test.yml", "testdata/invalid/invalid.mutatis-test.yaml", "testdata/kaptest/label-policy.test/kaptest.yaml", "testdata/kat/add-default-labels/tests", "testdata/kat/mutating-with-binding/tests", "testdata/kat/namespace-selector-binding-mutating/tests", "testdata/kat/sidecar-injection/tests", "testdata/kyverno/check-user-info/kyverno-test.yaml", "testdata/kyverno/mutate-namespace/kyverno-test.yaml", "testdata/kyverno/specify-namespace-selector/kyverno-test.yaml", "testdata/kyverno/specify-object-selector/kyverno-test.yaml", "testdata/kyverno/specify-resource-name/kyverno-test.yaml", "testdata/kyverno/with-apply-configuration/kyverno-test.yaml", "testdata/kyverno/with-binding-exclude-resources/kyverno-test.yaml", "testdata/kyverno/with-binding-match-resources/kyverno-test.yaml", "testdata/kyverno/with-binding-namespace-selector/kyverno-test.yaml", "testdata/kyverno/with-binding-object-selector/kyverno-test.yaml", "testdata/kyverno/with-json-patch/kyverno-test.yaml", "testdata/kyverno/with-match-conditions/kyverno-test.yaml", "testdata/kyverno/with-params/kyverno-test.yaml", "testdata/kyverno/with-two-params/kyverno-test.yaml", "testdata/no-policies/no-policies.mutatis-test.yaml", "testdata/order/order.mutatis-test.yaml", "testdata/podsecurity-config/podsecurity-config.mutatis-test.yaml", "testdata/skip-idempotence/skip-idempotence.mutatis-test.yaml", "testdata/stored/stored.mutatis-test.yaml", "testdata/validating/validating.mutatis-test.yaml"}
	if strings.Join(named, ",") != strings.Join(want, ",") {
		t.Errorf("found %v, want %v", named, want)
	}
}

func TestWatchRunsAgainOnChange(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(file, []byte("a: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := make(chan int)
	done := make(chan error)
	n := 0
	go func() {
		// The file is among the paths so that its state before the first
		// run is known (files a run reports are known from the next one).
		done <- Watch(ctx, []string{dir, file}, 1, func(context.Context) []string {
			n++
			select {
			case runs <- n:
			case <-ctx.Done():
			}
			return []string{file}
		})
	}()
	<-runs
	// A new size is a change whatever the file system's mtime resolution.
	if err := os.WriteFile(file, []byte("a: 22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := <-runs; got != 2 {
		t.Fatalf("run %d, want 2", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "new"+FileSuffix), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := <-runs; got != 3 {
		t.Fatalf("run %d after a new suite, want 3", got)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Watch returned %v, want context.Canceled", err)
	}
}

// TestAdmissionPlugins: cases go through kube-apiserver's default
// admission plugins before the policies (a Pod's service account and
// token volume), unless the suite or the options choose others, and a
// plugin's refusal is the case's denial.
func TestAdmissionPlugins(t *testing.T) {
	dir := t.TempDir()
	policies, _ := filepath.Abs("testdata/order/policies.yaml")
	suite := func(plugins string) string {
		return "apiVersion: mutatis.dev/v1alpha1\nkind: PolicyTest\npolicies: [" + policies + "]\n" + plugins + `cases:
- name: the pod gets the default service account and its token
  object: {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: ns}, spec: {containers: [{name: c, image: nginx}]}}
  expect:
    objectContains: {spec: {serviceAccountName: default, volumes: [{name: kube-api-access-xxxxx}]}}
- name: a pod of a missing service account is refused by the ServiceAccount plugin
  object: {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: ns}, spec: {serviceAccountName: ghost, containers: [{name: c, image: nginx}]}}
  expect:
    denied: {message: 'pods "p" is forbidden: error looking up service account ns/ghost: serviceaccount "ghost" not found', code: 403}
`
	}
	for _, c := range []struct {
		name, plugins string
		opts          Options
		failed        int
	}{
		{name: "the default plugins", failed: 0},
		{name: "the suite disables ServiceAccount", plugins: "admissionPlugins: {disable: [ServiceAccount]}\n", failed: 2},
		{name: "the options disable ServiceAccount", opts: Options{AdmissionPlugins: &admissionplugins.Flags{Disable: []string{"ServiceAccount"}}}, failed: 2},
		{name: "the suite's choice wins over the options'", plugins: "admissionPlugins: {enable: [AlwaysPullImages]}\n", opts: Options{AdmissionPlugins: &admissionplugins.Flags{Disable: []string{"ServiceAccount"}}}, failed: 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".mutatis-test.yaml")
			if err := os.WriteFile(file, []byte(suite(c.plugins)), 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := RunFiles(context.Background(), []string{file}, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, failed, errored, bad := rep.Counts()
			if failed != c.failed || errored+bad != 0 {
				var b strings.Builder
				_ = rep.WriteText(&b, TextOptions{Verbose: true})
				t.Errorf("failed %d (want %d), errored %d, bad %d\n%s", failed, c.failed, errored, bad, b.String())
			}
			if c.failed == 0 {
				// The trace shows the plugins' stage; a refusal ends it.
				traces := []string{rep.Suites[0].Cases[0].Trace, rep.Suites[0].Cases[1].Trace}
				if !strings.Contains(traces[0], "explain: admission plugin ServiceAccount: changed the object\n") || !strings.Contains(traces[0], "explain: no policy binding matched the request") {
					t.Errorf("trace of the admitted pod:\n%s", traces[0])
				}
				if want := "explain: admission plugin ServiceAccount: refused: pods \"p\" is forbidden: error looking up service account ns/ghost: serviceaccount \"ghost\" not found\n"; traces[1] != want {
					t.Errorf("trace of the refused pod:\n%s\nwant\n%s", traces[1], want)
				}
			}
		})
	}
}
