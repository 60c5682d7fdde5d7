package main

import (
	"os"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// The server of --serve-binary gets the memory limit the deployment gives
// its container, so that its soft limit and GOGC are the deployment's.
func TestDeploymentMemoryLimitIsTheDeployments(t *testing.T) {
	data, err := os.ReadFile("../../../../deploy/base/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	want := resource.MustParse(DeploymentMemoryLimit)
	for _, c := range d.Spec.Template.Spec.Containers {
		if got, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || got.Cmp(want) != 0 {
			t.Errorf("container %s: memory limit %v, loadgen's DeploymentMemoryLimit %s", c.Name, got.String(), DeploymentMemoryLimit)
		}
	}
	if len(d.Spec.Template.Spec.Containers) == 0 {
		t.Error("no containers in deploy/base/deployment.yaml")
	}
}

func TestServerFlagsGoWithServeBinary(t *testing.T) {
	for _, args := range [][]string{{"--server-cpuprofile", "x"}} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q) did not fail", args)
		}
	}
	o, err := parseFlags([]string{"--serve-binary", "bin/mutatis"})
	if err != nil || o.serverMemory != DeploymentMemoryLimit {
		t.Errorf("parseFlags: %+v, %v; want --server-memory-limit %s", o, err, DeploymentMemoryLimit)
	}
}
