package deploy

import (
	"os"
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The Deployment runs the image `make image` builds: the Makefile's
// IMAGE_REPO tagged with its VERSION (the chart's appVersion is checked
// against it in deploy/charttest).
func TestDeploymentRunsTheReleaseImage(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	version := regexp.MustCompile(`(?m)^VERSION \?= (\S+)$`).FindSubmatch(mk)
	repo := regexp.MustCompile(`(?m)^IMAGE_REPO \?= (\S+)$`).FindSubmatch(mk)
	if version == nil || repo == nil {
		t.Fatal("the Makefile sets no VERSION or IMAGE_REPO")
	}
	want := string(repo[1]) + ":" + string(version[1])
	for _, dir := range overlays {
		t.Run(dir, func(t *testing.T) {
			var images []string
			for _, o := range render(t, dir) {
				if o.GetKind() != "Deployment" {
					continue
				}
				cs, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "template", "spec", "containers")
				for _, c := range cs.([]any) {
					images = append(images, c.(map[string]any)["image"].(string))
				}
			}
			if len(images) != 1 || images[0] != want {
				t.Errorf("images %v, want [%s]", images, want)
			}
		})
	}
}
