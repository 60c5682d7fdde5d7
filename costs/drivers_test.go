package costs

import "testing"

func TestRenderPath(t *testing.T) {
	cases := []struct {
		path []string
		want string
	}{
		{[]string{"object", "spec", "items"}, "object.spec.items"},
		{[]string{"object", "spec", "items", "@items", "name"}, "object.spec.items[*].name"},
		{[]string{"params", "data", "@values"}, "params.data[*]"},
		{[]string{"object", "metadata", "labels", "@keys"}, "object.metadata.labels[*]"},
	}
	for _, tc := range cases {
		if got := renderPath(tc.path); got != tc.want {
			t.Errorf("renderPath(%v) = %q, want %q", tc.path, got, tc.want)
		}
	}
}
