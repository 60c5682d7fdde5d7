package fieldtable

import (
	"reflect"

	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestTableIsTheMap builds tables of many field sets — real Kubernetes
// field names, random names, names that collide on length and first and
// last bytes, the empty name — and checks Get against the map for every
// name and for names that are not fields.
func TestTableIsTheMap(t *testing.T) {
	real := []string{"apiVersion", "kind", "metadata", "spec", "status", "name", "namespace", "labels",
		"annotations", "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
		"ownerReferences", "finalizers", "managedFields", "containers", "initContainers", "volumes",
		"image", "imagePullPolicy", "env", "envFrom", "ports", "resources", "command", "args", "workingDir"}
	sets := [][]string{nil, {"a"}, {""}, {"", "spec"}, real[:5], real,
		{"aaaaaaaaXbbbbbbbb", "aaaaaaaaYbbbbbbbb", "aaaaaaaaZbbbbbbbb"}, // same length, first and last eight bytes: no perfect hash
		{"spec", "status", "sXXc", "stXXs", "minReplicas", "maxReplicas", "forZones", "forNodes"},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var s []string
		for range 1 + r.IntN(60) {
			var b strings.Builder
			for range 1 + r.IntN(12) {
				b.WriteByte(byte('a' + r.IntN(26)))
			}
			s = append(s, b.String())
		}
		sets = append(sets, s)
	}
	perfect := 0
	for i, names := range sets {
		m := map[string]int{}
		for j, n := range names {
			m[n] = j + 1
		}
		tab := New(m)
		if tab.Perfect() {
			perfect++
		}
		if i == 6 && tab.Perfect() {
			t.Errorf("%v: a perfect table for names that hash alike", names)
		}
		probe := func(k string) {
			v, ok := tab.Get(k)
			wv, wok := m[k]
			if v != wv || ok != wok {
				t.Fatalf("set %d %v: Get(%q) = %d, %v; want %d, %v", i, names, k, v, ok, wv, wok)
			}
		}
		for _, n := range append(names, real...) {
			probe(n)
			probe(strings.ToUpper(n))
			probe(n + "x")
			if n != "" {
				probe(n[:len(n)-1])
				probe(n[:1] + "Q" + n[1:])
			}
		}
		probe("")
	}
	if perfect < len(sets)*9/10 {
		t.Errorf("%d of %d tables are perfect", perfect, len(sets))
	}
	var zero Table[int]
	if v, ok := zero.Get("spec"); v != 0 || ok {
		t.Errorf("zero table: Get = %d, %v", v, ok)
	}
}

func BenchmarkGet(b *testing.B) {
	m := map[string]int{}
	names := []string{"apiVersion", "kind", "metadata", "spec", "status", "name", "namespace", "labels",
		"annotations", "uid", "resourceVersion", "generation", "creationTimestamp", "ownerReferences", "finalizers", "managedFields"}
	for i, n := range names {
		m[n] = i
	}
	tab := New(m)
	for _, impl := range []struct {
		name string
		get  func(string) (int, bool)
	}{{"map", func(k string) (int, bool) { v, ok := m[k]; return v, ok }}, {"table", tab.Get}} {
		b.Run(fmt.Sprintf("impl=%s", impl.name), func(b *testing.B) {
			for b.Loop() {
				for _, n := range names {
					if _, ok := impl.get(n); !ok {
						b.Fatal(n)
					}
				}
			}
		})
	}
}

// TestAllAndLen checks All and Len against the map a table is built from,
// perfect or not.
func TestAllAndLen(t *testing.T) {
	for _, m := range []map[string]int{nil, {"spec": 1, "status": 2, "metadata": 3}, {"aaaaaaaaXbbbbbbbb": 1, "aaaaaaaaYbbbbbbbb": 2}, {"": 1, "kind": 2}} {
		tab := New(m)
		got := map[string]int{}
		for k, v := range tab.All() {
			got[k] = v
		}
		if !maps.Equal(got, m) || tab.Len() != len(m) {
			t.Errorf("%v (perfect %v): All = %v, Len = %d", m, tab.Perfect(), got, tab.Len())
		}
		for range tab.All() {
			break // stopping early must not panic
		}
	}
}

// BenchmarkNew is building the table of the fields of PodSpec (a perfect
// hash is found) and of a field set where none is (all names share their
// length and first and last eight bytes): done once per type, on first use.
func BenchmarkNew(b *testing.B) {
	podSpec := map[string]int{}
	t := reflect.TypeFor[corev1.PodSpec]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		podSpec[name] = i
	}
	colliding := map[string]int{}
	for i := range 40 {
		colliding[fmt.Sprintf("prefix__%02dsuffix__", i)] = i
	}
	for _, c := range []struct {
		name   string
		fields map[string]int
	}{{"PodSpec", podSpec}, {"colliding", colliding}} {
		b.Run("fields="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				New(c.fields)
			}
		})
	}
}
