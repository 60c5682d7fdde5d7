package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/matching"
)

// valueUser is a user.Info of a type that cannot be compared.
type valueUser struct{ groups []string }

func (u valueUser) GetName() string               { return "v" }
func (u valueUser) GetUID() string                { return "" }
func (u valueUser) GetGroups() []string           { return u.groups }
func (u valueUser) GetExtra() map[string][]string { return nil }

// valueContext is a context of a type that cannot be compared.
type valueContext struct {
	context.Context
	tags []string
}

// TestRequestsCarriedOnlyForTheSameAttributes: the reinvocation round
// takes the first round's AdmissionRequests only when the request's
// attributes but its objects are the same, and then they equal the ones
// it would build.
func TestRequestsCarriedOnlyForTheSameAttributes(t *testing.T) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	other := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "other"}}}
	cases := []struct {
		name    string
		perturb func(a *matching.Attributes)
		carried bool
	}{
		{"the same attributes", func(*matching.Attributes) {}, true},
		{"another object", func(a *matching.Attributes) { a.Object = other }, true},
		{"another old object", func(a *matching.Attributes) { a.OldObject = other }, true},
		{"another name", func(a *matching.Attributes) { a.Name = "cm2" }, false},
		{"another namespace", func(a *matching.Attributes) { a.Namespace = "ns2" }, false},
		{"another operation", func(a *matching.Attributes) { a.Operation = admission.Update }, false},
		{"another kind", func(a *matching.Attributes) { a.Kind.Kind = "Secret" }, false},
		{"another resource", func(a *matching.Attributes) { a.Resource.Resource = "secrets" }, false},
		{"a subresource", func(a *matching.Attributes) { a.Subresource = "status" }, false},
		{"a dry run", func(a *matching.Attributes) { a.DryRun = true }, false},
		{"options", func(a *matching.Attributes) { a.Options = other }, false},
		{"another user, the same content", func(a *matching.Attributes) {
			a.UserInfo = &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}
		}, false},
		{"a user that cannot be compared", func(a *matching.Attributes) { a.UserInfo = valueUser{groups: []string{"g"}} }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := createConfigMap()
			b := *a
			tc.perturb(&b)
			st := &reinvocation{}
			first := st.requestsFor(a).get(a, gvr, gvk)
			second := st.requestsFor(&b).get(&b, gvr, gvk)
			if carried := first == second; carried != tc.carried {
				t.Fatalf("carried = %v, want %v", carried, tc.carried)
			}
			if want := b.AdmissionRequest(gvr, gvk); !reflect.DeepEqual(second, want) {
				t.Fatalf("request %+v, want %+v", second, want)
			}
			// A user that cannot be compared, then again: no panic, none carried.
			c := b
			c.UserInfo = valueUser{groups: []string{"g"}}
			st.requestsFor(&c)
			if st.requestsFor(&c).get(&c, gvr, gvk) == st.requestsFor(&c).get(&c, gvr, gvk) && st.hasRequests {
				t.Fatal("requests carried for a user that cannot be compared")
			}
		})
	}
}

// TestFrameCarriedUnderTheSameContext: the frame is the first round's only
// under the same context; a context of a type that cannot be compared
// gets a frame of its own, without a panic.
func TestFrameCarriedUnderTheSameContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := &reinvocation{}
	defer st.dropFrame()
	first := st.frameUnder(ctx)
	if first == ctx {
		t.Fatal("no frame under a context that can be cancelled")
	}
	if again := st.frameUnder(ctx); again != first {
		t.Fatal("the frame was not carried under the same context")
	}
	ctx2, cancel2 := context.WithCancel(ctx)
	defer cancel2()
	if second := st.frameUnder(ctx2); second == first {
		t.Fatal("the frame was carried under another context")
	}
	vc := valueContext{Context: ctx, tags: []string{"a"}}
	st.frameUnder(vc)
	if st.frameUnder(vc) == nil {
		t.Fatal("no context")
	}
}

func TestParamKeyIsNamespaceSlashName(t *testing.T) {
	st := &reinvocation{}
	for round := 0; round < 3; round++ {
		for i := 0; i < 2*maxParamKeys; i++ {
			ns, name := fmt.Sprintf("ns%d", i%5), fmt.Sprintf("p%d", i)
			if got, want := st.paramKey(ns, name), ns+"/"+name; got != want {
				t.Fatalf("paramKey(%q, %q) = %q, want %q", ns, name, got, want)
			}
		}
	}
	if got := st.paramKey("", ""); got != "/" {
		t.Fatalf("paramKey of no namespace and name = %q", got)
	}
}

// TestCarryingNeverChangesTheResult: the chain's result (the object, the
// trace, the denial) with the first round's frame and requests carried
// into the reinvocation round equals the result with both built anew in
// every pass, over policies whose matchConditions and mutations read the
// request, in both rounds, under a context that can be cancelled.
func TestCarryingNeverChangesTheResult(t *testing.T) {
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	requestReader := `Object{metadata: Object.metadata{annotations: {"by": request.userInfo.username + "/" + request.name + "/" + string(request.dryRun), "count": string(int(object.metadata.?annotations[?"count"].orValue("0")) + 1)}}}`
	sets := [][]*admissionregistrationv1.MutatingAdmissionPolicy{
		{mapPolicy("a", ifNeeded, admissionregistrationv1.Fail, counter)},
		{mapPolicy("a", ifNeeded, admissionregistrationv1.Fail, requestReader, `request.operation == "CREATE"`),
			mapPolicy("b", ifNeeded, admissionregistrationv1.Fail, counter, `request.userInfo.username == "admin"`)},
		{mapPolicy("a", ifNeeded, admissionregistrationv1.Fail, counter, `int(object.metadata.?annotations[?"count"].orValue("0")) < 1`),
			mapPolicy("b", ifNeeded, admissionregistrationv1.Ignore, `Object{metadata: Object.metadata{annotations: {"x": string(1/0)}}}`),
			mapPolicy("c", ifNeeded, admissionregistrationv1.Fail, requestReader)},
		{mapPolicy("a", ifNeeded, admissionregistrationv1.Fail, requestReader),
			mapPolicy("b", ifNeeded, admissionregistrationv1.Fail, `Object{metadata: Object.metadata{annotations: {"x": string(1/0)}}}`)},
	}
	// The authorizer's answers name what it was asked about (the request's
	// attributes, lazyAttributes where not fresh).
	authorizerReader := `Object{metadata: Object.metadata{annotations: {"authz": authorizer.requestResource.check("create").reason() + "|" + authorizer.group("").resource("secrets").namespace(request.namespace).name("s").check("get").reason(), "count": string(int(object.metadata.?annotations[?"count"].orValue("0")) + 1)}}}`
	sets = append(sets, []*admissionregistrationv1.MutatingAdmissionPolicy{
		mapPolicy("a", ifNeeded, admissionregistrationv1.Fail, authorizerReader, `authorizer.requestResource.check("create").allowed()`),
		mapPolicy("b", ifNeeded, admissionregistrationv1.Fail, counter, `authorizer.group("").resource("configmaps").namespace("shop").check("get").reason() != ""`),
	})
	cfg := testConfig()
	cfg.Authorizer = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		reason := fmt.Sprintf("%s %s %s/%s %s/%s %s", a.GetUser().GetName(), a.GetVerb(), a.GetAPIGroup(), a.GetResource(), a.GetNamespace(), a.GetName(), a.GetSubresource())
		if a.GetUser().GetName() == "admin" && a.GetResource() == "configmaps" {
			return authorizer.DecisionAllow, reason, nil
		}
		return authorizer.DecisionDeny, reason, nil
	})
	for i, policies := range sets {
		for _, dryRun := range []bool{false, true} {
			t.Run(fmt.Sprintf("set %d dry run %v", i, dryRun), func(t *testing.T) {
				hooks := testHooks(t, policies...)
				carried, fresh := NewEvaluator(cfg, hooks), NewEvaluator(cfg, hooks)
				fresh.fresh = true
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				for run := 0; run < 3; run++ { // recycled states too
					a := createConfigMap()
					a.DryRun = dryRun
					got, gotErr := new(chain.Runner).Run(ctx, a, carried)
					want, wantErr := new(chain.Runner).Run(ctx, a, fresh)
					if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
						t.Fatalf("error %v, want %v", gotErr, wantErr)
					}
					if !reflect.DeepEqual(got.Object, want.Object) || fmt.Sprint(got.Denied) != fmt.Sprint(want.Denied) || got.Reinvoked != want.Reinvoked {
						t.Fatalf("result %v (denied %v), want %v (denied %v)", got.Object, got.Denied, want.Object, want.Denied)
					}
					if i == 4 && !strings.Contains(fmt.Sprint(got.Object), "admin create /configmaps shop/cm") {
						t.Fatalf("the authorizer was not asked about the request: %v", got.Object)
					}
					if (i < 3 || i == 4) && !got.Reinvoked {
						t.Fatal("no reinvocation round: nothing carried")
					}
					if g, w := traceOf(got), traceOf(want); g != w {
						t.Fatalf("trace\n%s\nwant\n%s", g, w)
					}
				}
			})
		}
	}
}

// traceOf is res's invocations and ignored errors, but for the time the
// mutations took.
func traceOf(res chain.Result) string {
	var b strings.Builder
	for _, inv := range res.Invocations {
		fmt.Fprintf(&b, "%s %s round %d skip %v condition %q param %q err %v\n", inv.Configuration, inv.Hook, inv.Round, inv.Skip, inv.Condition, inv.Param, inv.Err)
		for _, m := range inv.Mutations {
			fmt.Fprintf(&b, "  cost %d skipped %v err %v\n", m.Cost, m.Skipped, m.Err)
		}
	}
	for _, ig := range res.Ignored {
		fmt.Fprintf(&b, "ignored %s %s round %d mutation %d: %s\n", ig.Configuration, ig.Hook, ig.Round, ig.Mutation, ig.Message)
	}
	return b.String()
}

// TestLazyAttributesAreTheRecord: every method of the lazy admission
// attributes answers what the record AdmissionAttributes builds answers,
// for requests with and without a user, objects, options, a subresource,
// a dry run.
func TestLazyAttributesAreTheRecord(t *testing.T) {
	other := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "other"}}}
	perturbations := []func(a *matching.Attributes){
		func(*matching.Attributes) {},
		func(a *matching.Attributes) { a.UserInfo = nil },
		func(a *matching.Attributes) { a.Object, a.OldObject = nil, other },
		func(a *matching.Attributes) { a.Options, a.DryRun = other, true },
		func(a *matching.Attributes) { a.Subresource, a.Operation = "status", admission.Update },
		func(a *matching.Attributes) { a.Namespace, a.Name = "", "" },
	}
	for i, perturb := range perturbations {
		a := createConfigMap()
		perturb(a)
		l := &lazyAttributes{attrs: *a}
		want := a.AdmissionAttributes()
		got := []any{l.GetName(), l.GetNamespace(), l.GetResource(), l.GetSubresource(), l.GetOperation(), l.GetOperationOptions(),
			l.IsDryRun(), l.GetObject(), l.GetOldObject(), l.GetKind(), l.GetUserInfo(), l.GetReinvocationContext()}
		wanted := []any{want.GetName(), want.GetNamespace(), want.GetResource(), want.GetSubresource(), want.GetOperation(), want.GetOperationOptions(),
			want.IsDryRun(), want.GetObject(), want.GetOldObject(), want.GetKind(), want.GetUserInfo(), want.GetReinvocationContext()}
		if !reflect.DeepEqual(got, wanted) {
			t.Fatalf("perturbation %d: lazy %v, record %v", i, got, wanted)
		}
		if l.built != l.record() {
			t.Fatalf("perturbation %d: the record was built again", i)
		}
		if err, werr := l.AddAnnotation("a.example.com/x", "1"), want.AddAnnotation("a.example.com/x", "1"); fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Fatalf("perturbation %d: AddAnnotation %v, record %v", i, err, werr)
		}
		if err, werr := l.AddAnnotationWithLevel("bad key", "1", ""), want.AddAnnotationWithLevel("bad key", "1", ""); fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Fatalf("perturbation %d: AddAnnotationWithLevel %v, record %v", i, err, werr)
		}
	}
}

// TestChangeChecksLeftOutNeverChangeTheResult: the chain's result (the
// object, the trace, the denial, whether the reinvocation round ran and
// whether another would be asked for) with the comparisons of an
// invocation's object with its input left out once they cannot change
// the reinvocation state equals the result of Evaluator.fresh, which
// compares after every invocation, over 300 random policy sets of
// IfNeeded and Never policies whose mutations change the object, change
// it only the first time, change nothing, or fail (under Fail and
// Ignore), or end the pass with a status error, some behind
// matchConditions.
func TestChangeChecksLeftOutNeverChangeTheResult(t *testing.T) {
	exprs := []string{
		counter,
		`Object{metadata: Object.metadata{annotations: {"fixed": "1"}}}`,
		`Object{metadata: Object.metadata{annotations: {"name": object.metadata.name}}}`,
		`Object{}`,
		`Object{metadata: Object.metadata{annotations: {"x": string(1/0)}}}`,
		`Object{metadata: Object.metadata{labels: {"l": string(int(object.metadata.?annotations[?"count"].orValue("0")) % 2)}}}`,
	}
	conditions := []string{
		`int(object.metadata.?annotations[?"count"].orValue("0")) < 2`,
		`!has(object.metadata.labels)`,
		`true`,
	}
	policies := []admissionregistrationv1.ReinvocationPolicyType{admissionregistrationv1.IfNeededReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy}
	failures := []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore, admissionregistrationv1.Ignore}
	rng := rand.New(rand.NewPCG(29, 27))
	sets := 300
	if testing.Short() {
		sets = 60
	}
	left, ended := 0, 0
	for set := range sets {
		n := 1 + rng.IntN(8)
		var ps []*admissionregistrationv1.MutatingAdmissionPolicy
		for i := range n {
			var conds []string
			if rng.IntN(3) == 0 {
				conds = append(conds, conditions[rng.IntN(len(conditions))])
			}
			expr := exprs[rng.IntN(len(exprs))]
			if rng.IntN(10) == 0 {
				expr = exprs[4] // more failures under Fail: denials in either round
			}
			p := mapPolicy(fmt.Sprintf("p%d", i), policies[rng.IntN(len(policies))], failures[rng.IntN(len(failures))], expr, conds...)
			if rng.IntN(8) == 0 {
				// A value the typed ConfigMap cannot hold: its defaulting
				// fails, a status error that ends the pass where it is.
				p.Spec.Mutations = []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
					JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/data", value: {"a": 1}}]`}}}
			}
			ps = append(ps, p)
		}
		hooks := testHooks(t, ps...)
		cfg := testConfig()
		carried, fresh := NewEvaluator(cfg, hooks), NewEvaluator(cfg, hooks)
		fresh.fresh = true
		for run := 0; run < 2; run++ { // recycled states too
			got, gotErr := new(chain.Runner).Run(context.Background(), createConfigMap(), carried)
			want, wantErr := new(chain.Runner).Run(context.Background(), createConfigMap(), fresh)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("set %d: error %v, want %v", set, gotErr, wantErr)
			}
			if !reflect.DeepEqual(got.Object, want.Object) || fmt.Sprint(got.Denied) != fmt.Sprint(want.Denied) ||
				got.Reinvoked != want.Reinvoked || got.Reinvoke != want.Reinvoke {
				t.Fatalf("set %d: result %v (denied %v, reinvoked %v, reinvoke %v), want %v (denied %v, reinvoked %v, reinvoke %v)",
					set, got.Object, got.Denied, got.Reinvoked, got.Reinvoke, want.Object, want.Denied, want.Reinvoked, want.Reinvoke)
			}
			if g, w := traceOf(got), traceOf(want); g != w {
				t.Fatalf("set %d: trace\n%s\nwant\n%s", set, g, w)
			}
			if got.Reinvoked {
				left++
			}
			if got.Denied != nil && got.Denied.Status().Code == 500 {
				ended++
			}
		}
	}
	if left == 0 || ended == 0 {
		t.Fatalf("%d runs reinvoked, %d ended by a status error: each must be some", left, ended)
	}
}
