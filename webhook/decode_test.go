package webhook

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// decodeMapCases are documents the fast decoder must read as sigsjson
// does: real objects, every escape, non-ASCII and invalid UTF-8, numbers
// at int64's edges and beyond, repeated keys, and malformed JSON (which
// goes to sigsjson for its error).
var decodeMapCases = []string{
	`{}`,
	` {"a":1} `,
	`{"a":{"b":[1,2,{"c":null}],"d":[]},"e":{}}`,
	`{"s":"plain","t":true,"f":false,"n":null}`,
	`{"esc":"q\"b\\s\/n\nr\rt\tb\bf\f","u":"\u00e9\u4e16\ud83d\ude00"}`,
	`{"lone":"\ud800","lone2":"\udc00x","pair-bad":"\ud800\u0041","hi":"\uD83D\uDE00"}`,
	`{"utf8":"héllo 世界 😀","bad":"a` + "\xff" + `b","trunc":"` + "\xe4\xb8" + `"}`,
	`{"k` + "\xfe" + `":1,"é":2,"a\"b":3}`,
	`{"annotation":"{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}"}`,
	`{"i":0,"neg":-0,"big":9223372036854775807,"small":-9223372036854775808,"over":9223372036854775808,"under":-9223372036854775809}`,
	`{"f":1.5,"e":1e3,"E":2E-2,"fe":1.25e+10,"z":0.0,"nz":-0.0,"huge":1e308,"tiny":5e-324,"sub":1e-400}`,
	`{"dup":1,"dup":"two"}`,
	"{\t\"ws\"\r\n:\n[ 1 ,\t2 ] }",
	`{"out":1e400}`,
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":+1}`,
	`{"a":tru}`, `{"a":nul}`, `{"a":"x}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, `{"a":"\'"}`,
	"{\"a\":\"tab\there\"}", `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1}x`, `{"a":1}{}`, `[1]`, `"s"`, `1`, `null`, ``, `  `, `{`, `{"a":[1,]}`,
	`{"deep":` + strings.Repeat("[", 1200) + strings.Repeat("]", 1200) + `}`,
	`{"deeper":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
}

// TestDecodeMap holds decodeMap to sigsjson's decoding, value and error,
// on decodeMapCases and on the objects of the load test and this
// package's test data.
func TestDecodeMap(t *testing.T) {
	cases := append([]string(nil), decodeMapCases...)
	for _, f := range []string{"../test/load/testdata/pod.yaml", "testdata/pod.yaml"} {
		y, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d := (mapDecoder{s: string(j)}); !func() bool { _, ok := d.top(); return ok }() {
			t.Errorf("%s: the fast decoder does not take it", f)
		}
		cases = append(cases, string(j))
	}
	for _, c := range cases {
		checkDecodeMap(t, []byte(c))
	}
}

// checkDecodeMap fails t when decodeMap and decodeMapReference differ on
// raw.
func checkDecodeMap(t *testing.T, raw []byte) {
	t.Helper()
	got, gotErr := decodeMap(raw)
	want, wantErr := decodeMapReference(raw)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%.80q: error %v, want %v", raw, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%.80q:\n got %#v\nwant %#v", raw, got, want)
	}
}

// FuzzDecodeMap holds decodeMap to sigsjson's decoding on any bytes.
func FuzzDecodeMap(f *testing.F) {
	for _, c := range decodeMapCases {
		if len(c) < 2000 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkDecodeMap(t, raw)
	})
}
