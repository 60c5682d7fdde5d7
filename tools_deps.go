package mutatis

import (
	_ "github.com/spf13/cobra"
	_ "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	_ "k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	_ "k8s.io/apiserver/pkg/cel/environment"
	_ "k8s.io/client-go/applyconfigurations"
	_ "sigs.k8s.io/yaml"
)
