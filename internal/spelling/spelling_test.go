package spelling

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"cases", "cases", 0}, {"casess", "cases", 1}, {"", "abc", 3},
		{"objectContain", "objectContains", 1}, {"kitten", "sitting", 3}, {"polices", "policies", 1},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	known := []string{"apiVersion", "kind", "policies", "resources", "cases", "operation", "objectContains"}
	for _, c := range []struct{ name, want string }{
		{"casess", "cases"},
		{"Operation", "operation"},
		{"objectContain", "objectContains"},
		{"polices", "policies"},
		{"kinds", "kind"},
		{"zzzzzz", ""},
		{"kindergarten", ""},
		{"cas", ""}, // 2 edits from a 5-letter name is too far
	} {
		if got := Closest(c.name, known); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
