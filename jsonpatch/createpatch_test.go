package jsonpatch

import (
	"reflect"
	"testing"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
	evanphxjsonpatch "gopkg.in/evanphx/json-patch.v4"
)

func TestPatchGivesExactlyTheMutatedObject(t *testing.T) {
	cases := []struct {
		name     string
		original string
		want     map[string]any
		wantNone bool
	}{
		{
			name:     "no change is no patch",
			original: `{"a":1,"b":[1,2]}`,
			want:     map[string]any{"a": int64(1), "b": []any{int64(1), int64(2)}},
			wantNone: true,
		},
		{
			name:     "list items removed from the front and the middle",
			original: `{"spec":{"containers":[{"name":"a"},{"name":"b"},{"name":"c"},{"name":"d"}]}}`,
			want:     map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "b"}, map[string]any{"name": "d"}}}},
		},
		{
			name:     "list items inserted and reordered",
			original: `{"l":[1,2,3]}`,
			want:     map[string]any{"l": []any{int64(3), int64(0), int64(1), int64(2), int64(4)}},
		},
		{
			name:     "keys with slash and tilde",
			original: `{"metadata":{"labels":{"x/y":"1"}}}`,
			want:     map[string]any{"metadata": map[string]any{"labels": map[string]any{"x/y": "2", "a~b/c": "3"}}},
		},
		{
			name:     "fields removed and types changed",
			original: `{"a":{"b":1},"c":"x","d":null}`,
			want:     map[string]any{"a": "flat", "d": int64(5)},
		},
		{
			name:     "floats and large integers keep their value",
			original: `{"n":1}`,
			want:     map[string]any{"n": int64(9007199254740993), "f": 0.5},
		},
		{
			name:     "HTML characters are not escaped away",
			original: `{"s":"a"}`,
			want:     map[string]any{"s": "<b>&</b>"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			patch, err := CreatePatch([]byte(tc.original), nil, tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantNone {
				if patch != nil {
					t.Fatalf("patch %s, want none", patch)
				}
				return
			}
			p, err := evanphxjsonpatch.DecodePatch(patch)
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Apply([]byte(tc.original))
			if err != nil {
				t.Fatalf("applying %s: %v", patch, err)
			}
			wantJSON, err := jsonvalue.Marshal(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := valuetest.Decode(t, out), valuetest.Decode(t, wantJSON); !reflect.DeepEqual(got, want) {
				t.Errorf("patch %s gives\n%s\nwant\n%s", patch, out, wantJSON)
			}
		})
	}
}

func TestTopLevelDiffIsAValidFallback(t *testing.T) {
	original := `{"a":1,"b/c":{"x":1},"gone":true}`
	want := map[string]any{"a": int64(1), "b/c": map[string]any{"x": int64(2)}, "new": []any{"v"}}
	ops, err := topLevelDiff([]byte(original), want, nil)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonvalue.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	wantValue := valuetest.Decode(t, mustJSON(t, want))
	if err := check([]byte(original), patch, wantValue); err != nil {
		t.Fatalf("%s: %v", patch, err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
