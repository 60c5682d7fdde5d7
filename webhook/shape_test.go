package webhook

import "testing"

func TestScanShape(t *testing.T) {
	cases := []struct {
		json string
		want shape
	}{
		{`{}`, shape{objects: 1}},
		{`{"a":"b","c":[1,true,null,"x\"y"],"d":{"e":-1.5e3}}`, shape{objects: 2, arrays: 1, values: 6}},
		{`[{},{},{}]`, shape{objects: 3, arrays: 1}},
		{` { "k" : "v" , "k2" : [ "a" , 2 ] } `, shape{objects: 1, arrays: 1, values: 3}},
		{`{"a\\":"b"}`, shape{objects: 1, values: 1}},
		{`{"spec":{"containers":[{"name":"a"},{"name":"b","terminationMessagePolicy":"File"}],"initContainers":[{}]}}`,
			shape{objects: 5, arrays: 2, values: 3, undefaulted: 2}},
		// A key named like the field, not a container list.
		{`{"containers":"x","l":[{"containers":{}}]}`, shape{objects: 3, arrays: 1, values: 1}},
		// terminationMessagePolicy below the container does not count.
		{`{"containers":[{"env":[{"terminationMessagePolicy":"x"}]}]}`, shape{objects: 3, arrays: 2, values: 1, undefaulted: 1}},
		{`not json`, shape{values: 2}},
		{`{"unterminated`, shape{objects: 1}},
	}
	for _, tc := range cases {
		got := scanShape([]byte(tc.json))
		tc.want.bytes = int64(len(tc.json))
		if got != tc.want {
			t.Errorf("scanShape(%s) = %+v, want %+v", tc.json, got, tc.want)
		}
	}
}

func BenchmarkScanShape(b *testing.B) {
	body := podReview(20000, func(i int) string { return `{"name":"c","image":"i"}` })
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		scanShape(body)
	}
}
