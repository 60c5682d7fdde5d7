package jsonpatch

import (
	"testing"
)

// FuzzApply checks Apply against evanphx/json-patch v4 on the JSON encoding:
// same result or same error text, and never a panic.
func FuzzApply(f *testing.F) {
	seeds := [][2]string{
		{`{"a":{"b":[1,2,{"c":null}]},"d":"x"}`, `[{"op":"add","path":"/a/b/-","value":{"e":1}}]`},
		{`{"a":{"b":[1,2]}}`, `[{"op":"move","from":"/a/b/0","path":"/a/b/-1"},{"op":"test","path":"/a/b","value":[2,1]}]`},
		{`{"a":[]}`, `[{"op":"copy","from":"/a","path":"/b"},{"op":"add","path":"/b/0","value":null},{"op":"test","path":"/a","value":null}]`},
		{`{"a":1.5,"b":-0.0,"c":1e21}`, `[{"op":"test","path":"/a","value":1.5},{"op":"replace","path":"/c","value":-1}]`},
		{`{"m":{"x/y":1,"t~":2}}`, `[{"op":"remove","path":"/m/x~1y"},{"op":"replace","path":"/m/t~0","value":"v"}]`},
		{`{}`, `[{"op":"add","path":"/x","value":null},{"op":"add","path":"/x/y","value":1}]`},
		{`{"a":{}}`, `[{"op":"replace","path":"","value":{"k":[1,{"z":true}]}},{"op":"test","path":"/k/1/z","value":true}]`},
		{`{"a":[1,2,3]}`, `[{"op":"remove","path":"/a/-1"},{"op":"add","path":"/a/01","value":9},{"op":"replace","path":"/a/+0","value":"s"}]`},
		{`{"a":"<>&"}`, `[{"op":"test","path":"/a","value":"<>&"},{"op":"copy","from":"/a","path":"a/b"}]`},
		{`{"a":{"b":{}}}`, `[{"op":"move","from":"/a","path":"/a/b/c"},{"op":"test","path":""}]`},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, docJSON, patchJSON string) {
		var doc map[string]any
		if err := unmarshalObject([]byte(docJSON), &doc); err != nil {
			return
		}
		ops, err := opsFromJSON([]byte(patchJSON))
		if err != nil {
			return
		}
		compareWithUpstream(t, doc, ops)
	})
}
