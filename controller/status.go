package controller

import (
	"context"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// ConditionReady is the condition type the controller sets on shadow
// policies: True when the policy compiled, False with reason CompileError or
// Invalid otherwise.
const ConditionReady = "Ready"

// setReadyCondition writes the Ready condition of a shadow policy when it
// differs from the one in its status.
func (c *Controller) setReadyCondition(ctx context.Context, u *unstructured.Unstructured, reason, message string) error {
	var conditions []metav1.Condition
	if raw, found, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); found {
		for _, r := range raw {
			m, ok := r.(map[string]any)
			if !ok {
				continue
			}
			var cond metav1.Condition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond); err == nil {
				conditions = append(conditions, cond)
			}
		}
	}
	status := metav1.ConditionTrue
	if reason != ReasonCompiled {
		status = metav1.ConditionFalse
	}
	want := metav1.Condition{Type: ConditionReady, Status: status, Reason: reason, Message: message, ObservedGeneration: u.GetGeneration()}
	if cur := apimeta.FindStatusCondition(conditions, ConditionReady); cur != nil &&
		cur.Status == want.Status && cur.Reason == want.Reason && cur.Message == want.Message && cur.ObservedGeneration == want.ObservedGeneration {
		return nil
	}
	apimeta.SetStatusCondition(&conditions, want)
	raw := make([]any, 0, len(conditions))
	for i := range conditions {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conditions[i])
		if err != nil {
			return err
		}
		raw = append(raw, m)
	}
	updated := u.DeepCopy()
	if err := unstructured.SetNestedSlice(updated.Object, raw, "status", "conditions"); err != nil {
		return err
	}
	_, err := c.clients.Dynamic.Resource(c.policyGVR).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	return err
}
