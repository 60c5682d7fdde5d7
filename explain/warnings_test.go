package explain_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mutatis-dev/mutatis/explain"
)

// TestReturned: the warnings of a request's stages are what
// kube-apiserver's warning recorder returns: each text once across all
// stages, in order, in the stage that recorded it first; an empty text
// or one with a control character is dropped; past 4096 characters in
// all, every text is cut to 256 and the texts past the limit dropped.
func TestReturned(t *testing.T) {
	long := func(c string) string { return strings.Repeat(c, 1000) }
	for _, c := range []struct {
		name   string
		stages [][]string
		want   [][]string
	}{
		{name: "no stage", stages: nil, want: [][]string{}},
		{name: "no warning", stages: [][]string{nil, {}}, want: [][]string{nil, nil}},
		{name: "each text once, in the stage that recorded it first",
			stages: [][]string{{"unknown field \"x\"", "a"}, {"a", "b", "b"}, nil, {"c", "unknown field \"x\""}},
			want:   [][]string{{"unknown field \"x\"", "a"}, {"b"}, nil, {"c"}}},
		{name: "empty texts and control characters are dropped",
			stages: [][]string{{"", "line\nbreak", "ok"}, {"tab\there", "ok", "fine"}},
			want:   [][]string{{"ok"}, {"fine"}}},
		{name: "quotes and backslashes survive the header",
			stages: [][]string{{`a "quoted" \ text`}},
			want:   [][]string{{`a "quoted" \ text`}}},
		{name: "past 4096 characters, every text is cut to 256",
			stages: [][]string{{long("a"), long("b")}, {long("c"), long("d"), long("e")}},
			want:   [][]string{{long("a")[:256], long("b")[:256]}, {long("c")[:256], long("d")[:256], long("e")[:256]}}},
		{name: "past 4096 characters once cut, the rest is dropped",
			// 20 texts of 300: the 14th passes 4096, the 16 first cut to
			// 256 make 4096, the 4 last are dropped.
			stages: [][]string{texts(0, 10, 300), texts(10, 20, 300)},
			want:   [][]string{texts(0, 10, 256), texts(10, 16, 256)}},
		{name: "a text dropped for a control character comes back cut to 256 once truncating",
			stages: [][]string{{long("a"), long("b"), long("c")[:500] + "\n" + long("c")[:499], long("d"), long("e")}, {long("f")}},
			want:   [][]string{texts(0, 5, 256), texts(5, 6, 256)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := explain.Returned(c.stages...)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Returned(%q)\n= %q\nwant %q", c.stages, got, c.want)
			}
		})
	}
}

// texts are the texts of n characters from letter i to j (exclusive) of
// the alphabet.
func texts(i, j, n int) []string {
	var out []string
	for c := 'a' + rune(i); c < 'a'+rune(j); c++ {
		out = append(out, strings.Repeat(string(c), n))
	}
	return out
}
