package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, and that it never
// returns a nil Set or an error that is not an ErrorList.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/versions/*.yaml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, tc := range parseErrorCases {
		f.Add([]byte(tc.data))
	}
	for _, v := range []string{"v1", "v1beta1", "v1alpha1"} {
		f.Add([]byte(strings.ReplaceAll(minimalPolicy, "%s", v)))
	}
	f.Add([]byte(`{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Secret"}]}`))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMapList\nitems: [null, 1, {metadata: {name: a}}]\n"))
	f.Add([]byte("apiVersion: admissionregistration.k8s.io/v1alpha1\nkind: MutatingAdmissionPolicyBindingList\nitems: [{spec: {paramRef: {}}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := Parse("fuzz.yaml", data)
		if set == nil {
			t.Fatal("nil Set")
		}
		if err != nil {
			if _, ok := err.(ErrorList); !ok {
				t.Fatalf("error is %T", err)
			}
			_ = err.Error()
		}
		for _, p := range set.Policies {
			if len(ValidatePolicy(p.Policy)) != 0 {
				t.Fatal("an invalid policy was returned")
			}
		}
		for _, b := range set.Bindings {
			if len(ValidateBinding(b.Binding)) != 0 {
				t.Fatal("an invalid binding was returned")
			}
		}
	})
}
