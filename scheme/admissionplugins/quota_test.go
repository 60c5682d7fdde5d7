package admissionplugins

import (
	"context"
	"testing"
)

// resourceQuota is a ResourceQuota named name in namespace "q" whose hard is
// hard (a JSON object) and whose status is status (a JSON object: what
// the quota controller last wrote).
func resourceQuota(name, hard, status string) string {
	return `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"` + name + `","namespace":"q","resourceVersion":"7"},"spec":{"hard":` + hard + `},"status":` + status + `}`
}

// quotaCases are requests through the plugins before MAP and then the
// validating plugins after the webhooks: the ResourceQuota plugin, which
// charges each request to the quotas' status as given.
func quotaCases() []validateCase {
	cpu := `{"requests.cpu":"1","pods":"4"}`
	podWith := func(resources string, objects ...string) pluginCase {
		return pluginCase{resource: "pods", object: pod("q", `"containers":[{"name":"c","image":"nginx","resources":`+resources+`}]`), objects: objects}
	}
	named := func(name string, c validateCase) validateCase {
		c.name = name
		return c
	}
	return []validateCase{
		named("a Pod whose requests exceed what is left of the quota is refused with the quota's figures", validateCase{
			pluginCase: podWith(`{"requests":{"cpu":"500m"}}`, resourceQuota("compute", cpu, `{"hard":`+cpu+`,"used":{"requests.cpu":"800m","pods":"1"}}`)), by: "ResourceQuota",
			denied: `pods "p" is forbidden: exceeded quota: compute, requested: requests.cpu=500m, used: requests.cpu=800m, limited: requests.cpu=1`,
		}),
		named("a Pod within what is left is admitted", validateCase{
			pluginCase: podWith(`{"requests":{"cpu":"200m"}}`, resourceQuota("compute", cpu, `{"hard":`+cpu+`,"used":{"requests.cpu":"800m","pods":"1"}}`)),
		}),
		named("the count of Pods", validateCase{
			pluginCase: podWith(`{}`, resourceQuota("count", `{"pods":"2"}`, `{"hard":{"pods":"2"},"used":{"pods":"2"}}`)), by: "ResourceQuota",
			denied: `pods "p" is forbidden: exceeded quota: count, requested: pods=1, used: pods=2, limited: pods=2`,
		}),
		named("a quota of limits refuses a container without limits", validateCase{
			pluginCase: podWith(`{}`, resourceQuota("limits", `{"limits.memory":"1Gi"}`, `{"hard":{"limits.memory":"1Gi"},"used":{"limits.memory":"0"}}`)), by: "ResourceQuota",
			denied: `pods "p" is forbidden: failed quota: limits: must specify limits.memory for: c`,
		}),
		named("a quota the controller has not measured yet refuses", validateCase{
			pluginCase: podWith(`{"requests":{"cpu":"1m"}}`, resourceQuota("fresh", cpu, `{"hard":`+cpu+`}`)), by: "ResourceQuota",
			denied: `pods "p" is forbidden: status unknown for quota: fresh, resources: pods,requests.cpu`,
		}),
		named("the status, not the spec, is what the request is measured against", validateCase{
			pluginCase: podWith(`{"requests":{"cpu":"500m"}}`, resourceQuota("compute", `{"requests.cpu":"100m"}`, `{"hard":{"requests.cpu":"2"},"used":{"requests.cpu":"1"}}`)),
		}),
		named("LimitRanger's default requests are charged", validateCase{
			pluginCase: pluginCase{resource: "pods", object: pod("q", `"containers":[{"name":"c","image":"nginx"}]`), objects: []string{
				`{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"lr","namespace":"q"},"spec":{"limits":[{"type":"Container","defaultRequest":{"cpu":"300m"}}]}}`,
				resourceQuota("compute", cpu, `{"hard":`+cpu+`,"used":{"requests.cpu":"800m","pods":"1"}}`),
			}}, by: "ResourceQuota",
			denied: `pods "p" is forbidden: exceeded quota: compute, requested: requests.cpu=300m, used: requests.cpu=800m, limited: requests.cpu=1`,
		}),
		named("an object count of ConfigMaps", validateCase{
			pluginCase: pluginCase{resource: "configmaps", object: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"q"},"data":{"a":"b"}}`,
				objects: []string{resourceQuota("objects", `{"count/configmaps":"1"}`, `{"hard":{"count/configmaps":"1"},"used":{"count/configmaps":"1"}}`)}}, by: "ResourceQuota",
			denied: `configmaps "cm" is forbidden: exceeded quota: objects, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1`,
		}),
		named("an object count of Deployments", validateCase{
			pluginCase: pluginCase{resource: "deployments", object: deployment("q", plainContainer),
				objects: []string{resourceQuota("objects", `{"count/deployments.apps":"0"}`, `{"hard":{"count/deployments.apps":"0"},"used":{"count/deployments.apps":"0"}}`)}}, by: "ResourceQuota",
			denied: `deployments.apps "d" is forbidden: exceeded quota: objects, requested: count/deployments.apps=1, used: count/deployments.apps=0, limited: count/deployments.apps=0`,
		}),
		named("a BestEffort scope counts only BestEffort Pods", validateCase{
			pluginCase: podWith(`{"requests":{"cpu":"100m"}}`, `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"besteffort","namespace":"q"},"spec":{"hard":{"pods":"0"},"scopes":["BestEffort"]},"status":{"hard":{"pods":"0"},"used":{"pods":"0"}}}`),
		}),
		named("a quota in another namespace does not apply", validateCase{
			pluginCase: pluginCase{resource: "pods", object: pod("other", plainContainer), objects: []string{resourceQuota("count", `{"pods":"0"}`, `{"hard":{"pods":"0"},"used":{"pods":"0"}}`)}},
		}),
	}
}

// TestResourceQuota: kube-apiserver's ResourceQuota plugin, after the
// webhooks, on objects the plugins before MAP admitted, against the
// quotas' status; TestResourceQuotaDifferential holds the same cases to
// kube-apiserver's own chain.
func TestResourceQuota(t *testing.T) {
	for _, c := range quotaCases() {
		c := &c
		t.Run(c.name, func(t *testing.T) {
			p, req, _, u := validateRequest(t, c)
			v, err := p.Validate(context.Background(), AfterWebhooks, req, c.admitted, nil, u, false)
			checkValidation(t, c, v, err)
			// A dry run is refused or admitted alike.
			v, err = p.Validate(context.Background(), AfterWebhooks, req, c.admitted, nil, u, true)
			checkValidation(t, c, v, err)
		})
	}
}

// TestResourceQuotaIsMeasuredAgainstTheStatusAsGiven: an admitted request
// is not charged to the quota offline; the next request meets the status
// as given.
func TestResourceQuotaIsMeasuredAgainstTheStatusAsGiven(t *testing.T) {
	c := &quotaCases()[1]
	p, req, _, u := validateRequest(t, c)
	for range 3 {
		v, err := p.Validate(context.Background(), AfterWebhooks, req, c.admitted, nil, u, false)
		checkValidation(t, c, v, err)
	}
}

// TestResourceQuotaDifferential runs every case of TestResourceQuota
// through kube-apiserver's own admission chain, its ResourceQuota plugin
// over started informers.
func TestResourceQuotaDifferential(t *testing.T) {
	for _, c := range quotaCases() {
		c := &c
		t.Run(c.name, func(t *testing.T) {
			validateDifferential(t, c, AfterWebhooks)
		})
	}
}
