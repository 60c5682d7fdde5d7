package convert

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestSuite(t *testing.T) {
	pod := func(name, owner string) map[string]any {
		md := map[string]any{"name": name, "namespace": "shop"}
		if owner != "" {
			md["labels"] = map[string]any{"owner": owner}
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}}}
	}
	objects := []map[string]any{pod("b", ""), pod("a", ""), pod("unanswered", "")}
	results := []map[string]any{pod("a", "shop-team"), pod("b", "x"), pod("stray", "y")}
	pairs := Pair(objects, results)
	if len(pairs) != 2 {
		t.Fatalf("%d pairs, want 2 (an object without a result, a result without an object left out)", len(pairs))
	}
	b, err := Suite("converted", []string{"gatekeeper-mutators.yaml"}, pairs)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Kind     string   `json:"kind"`
		Policies []string `json:"policies"`
		Cases    []struct {
			Name   string         `json:"name"`
			Object map[string]any `json:"object"`
			Expect struct {
				ObjectContains map[string]any `json:"objectContains"`
			} `json:"expect"`
		} `json:"cases"`
	}
	if err := yaml.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Kind != "PolicyTest" || len(s.Policies) != 1 || len(s.Cases) != 2 {
		t.Fatalf("suite:\n%s", b)
	}
	if !strings.HasPrefix(s.Cases[0].Name, "Pod a") || str(obj(s.Cases[0].Expect.ObjectContains, "metadata"), "name") != "a" {
		t.Errorf("cases not in order or not paired:\n%s", b)
	}
	if got := obj(obj(s.Cases[0].Expect.ObjectContains, "metadata"), "labels")["owner"]; got != "shop-team" {
		t.Errorf("expectation is not the engine's result: %v", got)
	}
}
