package compiler

import (
	"context"
	"fmt"
	"testing"

	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// adaptedActivation binds object, oldObject and params as the CEL values
// cel-go's default adapter makes of them, as Activation did before it
// bound their Go maps (unstructuredOrNull): the reference the Go maps are
// held to.
type adaptedActivation struct{ *Activation }

func adaptedOrNull(m map[string]any) ref.Val {
	if m == nil {
		return celtypes.NullValue
	}
	return celtypes.DefaultTypeAdapter.NativeToValue(m)
}

func (a adaptedActivation) ResolveName(name string) (any, bool) {
	switch name {
	case ObjectVar:
		return adaptedOrNull(a.in.Object), true
	case OldObjectVar:
		return adaptedOrNull(a.in.OldObject), true
	case ParamsVar:
		return adaptedOrNull(a.in.Params), true
	}
	return a.Activation.ResolveName(name)
}

// TestUnstructuredBindingIsTheAdaptersValue holds the Go maps bound for
// object, oldObject and params to their CEL values: every expression
// gives the same value (of the same type) or the same error, at the same
// runtime cost, through field selection, indexes, presence tests,
// optional selection, comprehensions, nulls, missing keys and the whole
// variables compared and measured.
func TestUnstructuredBindingIsTheAdaptersValue(t *testing.T) {
	exprs := []string{
		`object.metadata.name`,
		`object.metadata.labels["app"]`,
		`object.metadata.labels.missing`,
		`object.metadata.labels[?"missing"].orValue("none")`,
		`object.spec.containers[0].name`,
		`object.spec.containers[5]`,
		`object.spec.containers[-1]`,
		`object.spec.containers.map(c, c.image)`,
		`object.spec.containers.exists(c, c.name == "b")`,
		`object.spec.containers.filter(c, has(c.ports)).map(c, c.ports[0].containerPort + 1)`,
		`object["spec"]["containers"][0]["name"]`,
		`object.spec[1]`,
		`object.spec.replicas * 2`,
		`dyn(object.spec.replicas) + 1.0`,
		`object.spec.ratio + 0.5`,
		`object.spec.nothing`,
		`object.spec.nothing.deeper`,
		`object.spec.nothing == null`,
		`object.metadata.name.deeper`,
		`object.metadata.name[0]`,
		`has(object.spec.nodeSelector)`,
		`has(object.metadata.labels.app)`,
		`has(object.metadata.labels.none)`,
		`has(object.missing.x)`,
		`has(object.metadata.name.x)`,
		`has(object.spec.nothing.x)`,
		`object.?spec.?nodeSelector.orValue({})`,
		`object.?spec.?replicas.orValue(1)`,
		`object.?spec.?containers[0].?name`,
		`object.?spec.?containers[9].?name.orValue("no")`,
		`object.?missing.?x.hasValue()`,
		`object == oldObject`,
		`object.metadata == oldObject.metadata`,
		`object.spec.containers == oldObject.spec.containers`,
		`size(object.spec.containers)`,
		`size(object)`,
		`type(object)`,
		`type(object.spec.containers)`,
		`object`,
		`object.spec.containers[0]`,
		`object.metadata.labels.filter(k, k.startsWith("a"))`,
		`object.metadata.labels.all(k, object.metadata.labels[k] != "")`,
		`[object.metadata.name, object.spec.replicas]`,
		`{"n": object.metadata}`,
		`oldObject.metadata.name`,
		`has(oldObject.metadata)`,
		`oldObject == null`,
		`params.data.team`,
		`params == null`,
		`params.?data.?team.orValue("none")`,
		`object.spec.tags.exists(t, t == "b") && "a" in object.spec.tags`,
		`"app" in object.metadata.labels`,
		`object.metadata.labels.exists_one(k, k == "app")`,
		`string(object.spec.replicas) + object.metadata.name`,
	}
	var vars [][2]string
	for i, e := range exprs {
		vars = append(vars, [2]string{fmt.Sprintf("v%d", i), e})
	}
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Compile(policySpec{params: true, variables: vars, ac: []string{`Object{}`}}.build())
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"app": "web", "tier": "front"}},
			"spec": map[string]any{
				"replicas": int64(3), "ratio": 1.5, "nothing": nil, "tags": []any{"a", "b"},
				"containers": []any{
					map[string]any{"name": "a", "image": "nginx", "ports": []any{map[string]any{"containerPort": int64(80)}}},
					map[string]any{"name": "b", "image": "busybox"},
				},
			}}
	}
	inputs := map[string]Input{
		"all":               {Object: pod("web"), OldObject: pod("old"), Params: map[string]any{"data": map[string]any{"team": "shop"}}},
		"same objects":      {Object: pod("web"), OldObject: pod("web")},
		"no old, no params": {Object: pod("web")},
		"nothing":           {},
		"empty maps":        {Object: map[string]any{}, OldObject: map[string]any{}, Params: map[string]any{}},
	}
	var errs, vals int
	for name, in := range inputs {
		act := p.NewActivation(context.Background(), in)
		ref := adaptedActivation{act}
		for i, v := range p.Variables {
			if v.Err != nil {
				t.Fatalf("%s: %v", v.Source, v.Err)
			}
			prog, perr := v.program()
			if perr != nil {
				t.Fatal(perr)
			}
			got, gotDet, gotErr := prog.Eval(act)
			want, wantDet, wantErr := prog.Eval(ref)
			where := fmt.Sprintf("%s, %s", name, exprs[i])
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("%s: error %v, the adapter's %v", where, gotErr, wantErr)
				continue
			}
			if *gotDet.ActualCost() != *wantDet.ActualCost() {
				t.Errorf("%s: cost %d, the adapter's %d", where, *gotDet.ActualCost(), *wantDet.ActualCost())
			}
			if gotErr != nil {
				errs++
				continue
			}
			vals++
			if got.Type().TypeName() != want.Type().TypeName() || got.Equal(want) != celtypes.True {
				t.Errorf("%s: %v (%s), the adapter's %v (%s)", where, got, got.Type().TypeName(), want, want.Type().TypeName())
			}
		}
	}
	// The table reaches both outcomes, in numbers.
	t.Logf("%d errors, %d values", errs, vals)
	if errs < 60 || vals < 120 {
		t.Errorf("%d errors and %d values compared; the table is meant to reach many of both", errs, vals)
	}
}
