package applyconfig

import (
	"math/rand/v2"
	"reflect"
	"testing"

	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/internal/valuetest"
)

// podLists is the plan of a Pod's containers (keyed by name) and of a
// container's ports (keyed by containerPort and protocol, protocol
// defaulted to TCP), with the structured-merge-diff schema they come from.
func podLists(t *testing.T) (m *Merger, containers, ports *plist) {
	t.Helper()
	m, err := sharedSchemas(t).Merger(podGVK)
	if err != nil {
		t.Fatal(err)
	}
	spec := fieldOf(m.root.plan.get().m, "spec").get().m
	containers = fieldOf(spec, "containers").get().l
	ports = fieldOf(containers.elem.get().m, "ports").get().l
	if containers == nil || ports == nil || !containers.associative || !ports.associative || len(ports.keys) != 2 {
		t.Fatal("the Pod's plan has no keyed containers and ports")
	}
	return m, containers, ports
}

// randomPorts is a list of n ports drawn from a few keys, so that some
// lists repeat a key; now and then an item is not a map, lacks its keys or
// has a key of another type.
func randomPorts(rng *rand.Rand, n int) []any {
	l := make([]any, n)
	for i := range l {
		p := map[string]any{"containerPort": int64(8080 + rng.IntN(2*n+1))}
		switch rng.IntN(12) {
		case 0:
			p["protocol"] = "UDP"
		case 1:
			p["protocol"] = "TCP" // the default, written
		case 2:
			delete(p, "containerPort") // protocol's default is still a key
		case 3:
			l[i] = "not a map"
			continue
		case 4:
			p["containerPort"] = 8080.5 // a float key is not modelled
		case 5:
			p["name"] = "http"
		}
		l[i] = p
	}
	return l
}

// TestUniqueKeysIsListKeys holds uniqueKeys, the validation's question of
// an associative list asked with its keys on the stack, to listKeys and to
// the keys read from the structured-merge-diff schema (refListKeys): ok
// with no key repeated, on random lists of containers and ports, short
// (pairwise comparison) and long (the hashed index).
func TestUniqueKeysIsListKeys(t *testing.T) {
	m, containers, ports := podLists(t)
	s := m.root.s
	smdContainers, smdPorts := smdPodLists(t, m)
	rng := rand.New(rand.NewPCG(26, 1))
	unique, repeated, refused := 0, 0, 0
	for range valuetest.Sweep(3000, 30000) {
		n := rng.IntN(3 * smallList)
		if rng.IntN(2) == 0 {
			n = rng.IntN(smallList + 1)
		}
		l, pl, ref := randomPorts(rng, n), ports, smdPorts
		if rng.IntN(3) == 0 {
			for i := range l {
				if rng.IntN(8) != 0 {
					l[i] = map[string]any{"name": []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}[rng.IntN(10)]}
				}
			}
			pl, ref = containers, smdContainers
		}
		keys, ok := listKeys(pl, l)
		want := ok && !keys.hasDuplicates()
		refKeys, refOK := refListKeys(s, ref, l)
		if refOK != ok || ok && refKeys.hasDuplicates() != keys.hasDuplicates() {
			t.Fatalf("listKeys %v, the schema's keys %v: %#v", ok, refOK, l)
		}
		if got := uniqueKeys(pl, l); got != want {
			t.Fatalf("uniqueKeys = %v, listKeys %v (duplicates %v): %#v", got, ok, ok && keys.hasDuplicates(), l)
		}
		switch {
		case !ok:
			refused++
		case want:
			unique++
		default:
			repeated++
		}
	}
	if unique == 0 || repeated == 0 || refused == 0 {
		t.Errorf("unique %d, repeated %d, refused %d: some answer never tried", unique, repeated, refused)
	}
}

// TestMergedListIsExactAndLiveWhenSame holds mergeLists, which makes its
// result only once an item differs from the live list's, to the reference
// walk over the structured-merge-diff schema (refMergeLists) on random
// port lists merged into random port lists, some patches holding what the
// live list has: the same items, the live list itself exactly when every
// item of the result is the live list's very item at its position, a new
// list sized to its items otherwise, and the live list untouched.
func TestMergedListIsExactAndLiveWhenSame(t *testing.T) {
	m, _, ports := podLists(t)
	s := m.root.s
	_, smdPorts := smdPodLists(t, m)
	rng := rand.New(rand.NewPCG(26, 2))
	same, changed, merged := 0, 0, 0
	for range valuetest.Sweep(3000, 30000) {
		lhs := randomPorts(rng, rng.IntN(2*smallList))
		var rhs []any
		switch rng.IntN(3) {
		case 0: // items the live list has, some of them, in another order
			for _, i := range rng.Perm(len(lhs)) {
				if rng.IntN(3) != 0 {
					rhs = append(rhs, lhs[i])
				}
			}
		case 1: // copies of its items, some changed
			for _, item := range lhs {
				if p, ok := item.(map[string]any); ok && rng.IntN(2) == 0 {
					c := make(map[string]any, len(p))
					for k, v := range p {
						c[k] = v
					}
					if rng.IntN(2) == 0 {
						c["hostPort"] = int64(rng.IntN(3))
					}
					rhs = append(rhs, c)
				}
			}
		default:
			rhs = randomPorts(rng, rng.IntN(2*smallList))
		}
		frozen := valuetest.Freeze(map[string]any{"lhs": lhs, "rhs": rhs})
		for _, fresh := range []bool{false, true} {
			var tasks *mergeTasks
			r := rhs
			if fresh {
				// mergeFresh's: the patch's maps are the merge's to
				// build in, its changes deferred until it is known ok.
				tasks, r = new(mergeTasks), valuetest.DeepCopy(rhs).([]any)
			}
			got, ok := mergeLists(ports, lhs, r, tasks)
			if ok && fresh {
				tasks.apply()
			}
			want, wantOK := refMergeLists(s, smdPorts, lhs, rhs)
			if ok != wantOK || ok && !reflect.DeepEqual(got, want) {
				t.Fatalf("mergeLists %v %#v, reference %v %#v\nlive %#v\npatch %#v", ok, got, wantOK, want, lhs, rhs)
			}
			if !ok {
				continue
			}
			merged++
			out := got.([]any)
			w := want.([]any)
			isLive := len(w) == len(lhs)
			for i := 0; isLive && i < len(w); i++ {
				isLive = sameMerged(lhs[i], out[i])
			}
			if jsonvalue.SameSlice(out, lhs) != isLive {
				t.Fatalf("the result is the live list: %v, want %v\nlive %#v\npatch %#v", !isLive, isLive, lhs, rhs)
			}
			if isLive {
				same++
			} else {
				changed++
				if cap(out) != len(out) {
					t.Fatalf("a result of %d items made with room for %d", len(out), cap(out))
				}
			}
		}
		frozen.Check(t, "the merged lists")
	}
	if same == 0 || changed == 0 {
		t.Errorf("%d merges, %d to the live list and %d new: a case never tried", merged, same, changed)
	}
}

// smdPodLists is the structured-merge-diff schema of a Pod's containers
// and of a container's ports, podLists' lists, for the reference walks.
func smdPodLists(t *testing.T, m *Merger) (containers, ports *smdschema.List) {
	t.Helper()
	s := m.root.s
	pod, _ := s.Resolve(m.root.tr)
	spec, _ := s.Resolve(mustField(t, pod.Map, "spec"))
	c, _ := s.Resolve(mustField(t, spec.Map, "containers"))
	item, _ := s.Resolve(c.List.ElementType)
	p, _ := s.Resolve(mustField(t, item.Map, "ports"))
	return c.List, p.List
}

// mustField is the type of the field name of m.
func mustField(t *testing.T, m *smdschema.Map, name string) smdschema.TypeRef {
	t.Helper()
	f, ok := m.FindField(name)
	if !ok {
		t.Fatalf("no field %s", name)
	}
	return f.Type
}
