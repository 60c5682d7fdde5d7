package main

import (
	"strings"
	"testing"
	"time"
)

const sample = `goos: linux
goarch: amd64
cpu: Test CPU   
BenchmarkMutation/impl=upstream/case=ac-label-2   	 100	 200000 ns/op	 36000 B/op	 576 allocs/op
BenchmarkMutation/impl=mutatis/case=ac-label-2    	 100	  10000 ns/op	  4000 B/op	  50 allocs/op
BenchmarkMutation/impl=upstream/case=ac-label-2   	 100	 220000 ns/op	 36000 B/op	 576 allocs/op
BenchmarkMutation/impl=mutatis/case=ac-label-2    	 100	  30000 ns/op	  4000 B/op	  50 allocs/op
BenchmarkMutation/impl=mutatis/case=ac-label-2    	 100	  20000 ns/op	  4000 B/op	  50 allocs/op
BenchmarkAdmit/impl=mutatis/case=policies-10-1-matching-2    	 100	 1000 ns/op	 0 B/op	 0 allocs/op
BenchmarkAdmit/impl=mutatis/case=policies-1000-1-matching-2  	 100	 3000 ns/op	 0 B/op	 0 allocs/op
BenchmarkValidate/impl=upstream/case=deny-1-2   	 100	 20000 ns/op	 18000 cpu-ns/op	 9000 B/op	 100 allocs/op
BenchmarkValidate/impl=mutatis/case=deny-1-2    	 100	  4000 ns/op	  3000 cpu-ns/op	 6000 B/op	  90 allocs/op
BenchmarkCompileProcess/impl=mutatis/case=compile-1000-2     	 1	 900000000 ns/op	 750.0 compile-ms	 120.5 peak-RSS-MB
BenchmarkOther-2 	 100	 5 ns/op
PASS
`

func TestRender(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	out := render(res, "make bench", "under load", time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	cases := []struct {
		name string
		want string
	}{
		{"the header names the command, the machine and the note", "on 2026-11-23 12:00 UTC from `make bench` (goos: linux, goarch: amd64, cpu: Test CPU)._\n\n> under load"},
		{"medians with spread and the ratio upstream/mutatis", "| ac-label | 210,000 ±5% | 20,000 ±50% | 10.5× | 36,000 | 4,000 | 9.0× | 576 | 50 | 11.5× |"},
		{"a missing implementation is a dash", "| policies-10-1-matching | – | 1,000 ±0% | – |"},
		{"the per-mutation target is checked", "| per mutation ≥10× faster than upstream's patcher | lowest ratio 10.5× (ac-label) | yes |"},
		{"the many-policies target is checked", "| 3.00× (3,000 vs 1,000 ns/op) | no |"},
		{"CPU time per op has its column where measured", "| deny-1 | 20,000 ±0% | 4,000 ±0% | 5.0× | 18,000 ±0% | 3,000 ±0% | 6.0× | 9,000 | 6,000 | 1.5× |"},
		{"issue 29's validating target is checked in CPU time", "| issue 29: every validating admission ≥ 5× upstream | lowest ratio 6.0× (deny-1, cpu-ns/op) | yes |"},
		{"issue 29's admission target needs both sides", "| issue 29: every admission ≥ 10× upstream | not measured in this run | – |"},
		{"compile time and RSS come from the fresh-process benchmark", "| compiling 1,000 policies < 200 MB resident | 120.5 MB peak RSS | yes |"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(out, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
		})
	}
	if strings.Contains(out, "BenchmarkOther") {
		t.Error("a benchmark without impl= and case= made it into the tables")
	}
}

func TestSplice(t *testing.T) {
	cases := []struct {
		name, doc, want string
		wantErr         bool
	}{
		{name: "the text between the markers is replaced",
			doc:  "a\n" + beginMarker + "\nold\n" + endMarker + "\nb\n",
			want: "a\n" + beginMarker + "\nNEW\n" + endMarker + "\nb\n"},
		{name: "a document without markers is refused", doc: "a\n", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := splice([]byte(tc.doc), "NEW\n")
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && string(got) != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
