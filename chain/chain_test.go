package chain

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/matching"
)

// counting is a stage that counts its runs in its own state, changes the
// object (a label per run) when change says so, and refuses on deny.
type counting struct {
	name   string
	change func(run int) bool
	deny   int // the run that refuses; 0: none
}

func (s *counting) Name() string { return s.name }

func (s *counting) Admit(_ context.Context, a *matching.Attributes, rc *Context) (Outcome, error) {
	runs, _ := rc.Value(s).(*int)
	if runs == nil {
		runs = new(int)
		rc.SetValue(s, runs)
	}
	*runs++
	obj := map[string]any{}
	for k, v := range a.Object.Object {
		obj[k] = v
	}
	if s.change != nil && s.change(*runs) {
		obj[s.name] = *runs
		rc.SetShouldReinvoke()
	}
	out := Outcome{Object: obj, Records: Records{Warnings: []string{s.name}}}
	if *runs == s.deny {
		out.Denied = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New("no"))
	}
	return out, nil
}

// TestRunReinvokesOnce: a stage's change reruns the whole list once, never
// a third time; each stage's state is its own; a refusal ends the run.
func TestRunReinvokesOnce(t *testing.T) {
	pod := func() *matching.Attributes {
		a := &matching.Attributes{Object: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}}
		a.Kind.Version, a.Kind.Kind = "v1", "Pod"
		return a
	}
	always := func(int) bool { return true }
	var r Runner // one for every case: its recycled Contexts start empty
	for _, tc := range []struct {
		name      string
		stages    func() []Stage
		once      bool
		warnings  int
		reinvoked bool
		deniedBy  string
	}{
		{"nobody asks: one round", func() []Stage { return []Stage{&counting{name: "a"}, &counting{name: "b"}} }, false, 2, false, ""},
		{"a change: the whole list twice, never thrice", func() []Stage { return []Stage{&counting{name: "a"}, &counting{name: "b", change: always}} }, false, 4, true, ""},
		{"RunOnce never reinvokes", func() []Stage { return []Stage{&counting{name: "a", change: always}} }, true, 1, false, ""},
		{"a refusal in round 2 ends the run", func() []Stage {
			return []Stage{&counting{name: "a", deny: 2}, &counting{name: "b", change: always}}
		}, false, 3, true, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := r.Run
			if tc.once {
				run = r.RunOnce
			}
			res, err := run(context.Background(), pod(), tc.stages()...)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Warnings) != tc.warnings || res.Reinvoked != tc.reinvoked || res.DeniedBy != tc.deniedBy {
				t.Errorf("warnings %v, reinvoked %v, denied by %q; want %d, %v, %q", res.Warnings, res.Reinvoked, res.DeniedBy, tc.warnings, tc.reinvoked, tc.deniedBy)
			}
		})
	}
}
