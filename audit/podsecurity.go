package audit

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	podsecurityadmission "k8s.io/pod-security-admission/admission"
	podsecurityapi "k8s.io/pod-security-admission/api"

	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/matching"
)

// PodSecurityLevel is a PodSecurity level to audit every Namespace at
// (Options.PodSecurity): the values of the enforce and enforce-version
// labels.
type PodSecurityLevel struct {
	Level, Version string
}

// ParsePodSecurity reads --pod-security: LEVEL or LEVEL:VERSION, LEVEL
// privileged, baseline or restricted, VERSION latest or v1.N (checked by
// PodSecurity itself, which reads an invalid version as latest, as
// kube-apiserver does).
func ParsePodSecurity(s string) (*PodSecurityLevel, error) {
	level, version, _ := strings.Cut(s, ":")
	switch level {
	case "privileged", "baseline", "restricted":
	default:
		return nil, fmt.Errorf("--pod-security must be privileged, baseline or restricted (LEVEL[:VERSION]), not %q", s)
	}
	return &PodSecurityLevel{Level: level, Version: version}, nil
}

// label returns objects with every Namespace labelled at l (copies: the
// objects are not modified).
func (l *PodSecurityLevel) label(objects []manifest.Object) []manifest.Object {
	out := make([]manifest.Object, len(objects))
	for i, o := range objects {
		out[i] = o
		if o.Object.GetAPIVersion() != "v1" || o.Object.GetKind() != "Namespace" {
			continue
		}
		u := o.Object.DeepCopy()
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[podsecurityapi.EnforceLevelLabel] = l.Level
		delete(labels, podsecurityapi.EnforceVersionLabel)
		if l.Version != "" {
			labels[podsecurityapi.EnforceVersionLabel] = l.Version
		}
		u.SetLabels(labels)
		out[i] = manifest.Object{Source: o.Source, Object: u}
	}
	return out
}

// podSecuritySelector names what PodSecurity checks: Pods and the kinds
// with a pod template, whose violations it warns about
// (k8s.io/pod-security-admission's DefaultPodSpecExtractor), any version.
var podSecuritySelector = func() matching.Selector {
	all := []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
	var sel matching.Selector
	for _, gr := range (podsecurityadmission.DefaultPodSpecExtractor{}).PodSpecResources() {
		sel.Rules = append(sel.Rules, admissionregistrationv1.RuleWithOperations{Operations: all,
			Rule: admissionregistrationv1.Rule{APIGroups: []string{gr.Group}, APIVersions: []string{"*"}, Resources: []string{gr.Resource}}})
	}
	return sel
}()
